-- take.lua: overflow probing, one unit of bucket j for a purchase whose home bucket h
-- answered OVERFLOW (DESIGN.md 4; calling convention in sk/scripts.h).
-- KEYS: meta stock trace of bucket j (one hash tag {v:ID:j}, j != h)
-- ARGV: traceId orderId userId voucherId qty home
-- Replies: {"OK", msg_json} | {"REPLAY", stored_json} | {"COLLISION"} | {"FENCED"}
--          | {"REJECT", code} | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Order of checks: arguments; fence T:r in j (FENCED) before the replay (T in j: REPLAY
-- when its userId and orderId are ours, else COLLISION); any key of j missing or meta
-- without status (10004); paused (10013); window (10002, 10003); status (10011, 10012);
-- stock of j (10005: bucket j is empty). Then DECRBY stock j and HSET trace T with
-- bucket = j, home = h: OK. Membership is the home bucket's (deduct.lua wrote users[U]=T
-- and T:h = probing there); take.lua never touches users. No expiry command (preheat
-- gave every key its expiry); it never creates a key.
-- Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1.
-- Helpers from lua/lib/validate.lua, expiry.lua and admit.lua (prepended at build time).

if #KEYS ~= 3 then return argerr("expected 3 keys (meta stock trace)") end
if #ARGV ~= 6 then return argerr("expected 6 args (traceId orderId userId voucherId qty home)") end
local trace_id, order_id, user_id, voucher_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local bad, qty, j = purchase_args()
if bad then return bad end
if not is_uint(ARGV[6], 2) then return argerr("home") end
local h = tonumber(ARGV[6])
if h == j then return argerr("home: take.lua runs on a bucket other than the home") end
local k_meta, k_stock, k_trace = KEYS[1], KEYS[2], KEYS[3]

if redis.call("HEXISTS", k_trace, trace_id .. ":r") == 1 then
  return {"FENCED"}
end
local stored = redis.call("HGET", k_trace, trace_id)
if stored then return replay_or_collision(stored, user_id, order_id) end

if not all_keys_exist(KEYS) then return {"REJECT", 10004} end
local code, n, now_ms = sale_check(k_meta)
if code then return {"REJECT", code} end
if j >= n or h >= n then return argerr("bucket beyond the voucher's buckets") end

local stock = tonumber(redis.call("GET", k_stock) or "")
if not stock or stock < qty then return {"REJECT", 10005} end

local after = redis.call("DECRBY", k_stock, qty)
local msg = deduct_entry(trace_id, order_id, user_id, voucher_id, j, h, after + qty, qty,
                         after, now_ms)
redis.call("HSET", k_trace, trace_id, msg)
return {"OK", msg}
