-- deduct.lua: admission of one purchase on the user's home bucket h (DESIGN.md 4; calling
-- convention in sk/scripts.h).
-- KEYS: meta stock users trace of bucket h (one hash tag {v:ID:h})
-- ARGV: traceId orderId userId voucherId qty expire_extra_ms
--       (expire_extra_ms is validated and unused since v4: preheat gives every key of every
--       bucket its expiry, and the hot path spends no command on it)
-- Replies: {"OK", msg_json} | {"REPLAY", stored_json} | {"COLLISION"} | {"FENCED"}
--          | {"PROBING", N, h} | {"SETTLED", j, N, h} | {"OVERFLOW", N, h}
--          | {"REJECT", code} | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Order of checks (DESIGN.md 4): arguments; fence T:r (FENCED) before the replay (T:
-- REPLAY when its userId and orderId are ours, else COLLISION); T:h (the purchase overflowed:
-- PROBING while "probing", SETTLED j once bucket j admitted it: the front re-runs take.lua
-- on j, which answers REPLAY); then any key of the bucket missing or meta without status
-- (10004), paused (10013), window by server TIME (10002, 10003), status (10011, 10012),
-- membership (10006 when users names another trace), stock. Only then any write:
--   stock >= qty: DECRBY, HSET users U=T, HSET trace T (bucket = home = h): OK;
--   stock short, N = 1: 10005; N > 1: HSET users U=T and T:h = "probing": OVERFLOW (the
--   front probes the other buckets with take.lua).
-- Ids stay strings throughout (never tonumber on an id: doubles lose bits above 2^53).
-- Redis 7.0, Lua 5.1, effect replication (TIME is allowed before writes).
-- is_id, is_uint, argerr, key_bucket, meta_buckets (lua/lib/validate.lua), redis_now_ms
-- (lua/lib/expiry.lua), purchase_args, all_keys_exist, sale_check, replay_or_collision and deduct_entry
-- (lua/lib/admit.lua) are prepended at build time.

if #KEYS ~= 4 then return argerr("expected 4 keys (meta stock users trace)") end
if #ARGV ~= 6 then return argerr("expected 6 args (traceId orderId userId voucherId qty expire_extra_ms)") end
local trace_id, order_id, user_id, voucher_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local bad, qty, h = purchase_args()
if bad then return bad end
if not is_uint(ARGV[6], 15) then return argerr("expire_extra_ms") end
local k_meta, k_stock, k_users, k_trace = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- The fence wins over everything: a rolled-back traceId never deducts again.
if redis.call("HEXISTS", k_trace, trace_id .. ":r") == 1 then
  return {"FENCED"}
end
-- Replay only for the same purchase: another buyer's entry is never handed out as ours.
local stored = redis.call("HGET", k_trace, trace_id)
if stored then return replay_or_collision(stored, user_id, order_id) end
-- An overflowing purchase: where its stock is (or that it is still being probed).
local where = redis.call("HGET", k_trace, trace_id .. ":h")
if where then
  local n = meta_buckets(redis.call("HGET", k_meta, "buckets")) or 1
  if where == "probing" then return {"PROBING", n, h} end
  if is_uint(where, 2) then return {"SETTLED", tonumber(where), n, h} end
  return {"COLLISION"} -- not written by these scripts: never act on it
end

if not all_keys_exist(KEYS) then return {"REJECT", 10004} end
local code, n, now_ms = sale_check(k_meta)
if code then return {"REJECT", code} end
if h >= n then return argerr("home bucket beyond the voucher's buckets") end

local member = redis.call("HGET", k_users, user_id)
if member and member ~= trace_id then return {"REJECT", 10006} end
local stock = tonumber(redis.call("GET", k_stock) or "")
if not stock or stock < qty then
  if n == 1 then return {"REJECT", 10005} end
  redis.call("HSET", k_users, user_id, trace_id)
  redis.call("HSET", k_trace, trace_id .. ":h", "probing")
  return {"OVERFLOW", n, h}
end

-- Admitted: every check passed, now write (no expiry command: preheat set E).
local after = redis.call("DECRBY", k_stock, qty)
local msg = deduct_entry(trace_id, order_id, user_id, voucher_id, h, h, after + qty, qty,
                         after, now_ms)
redis.call("HSET", k_users, user_id, trace_id)
redis.call("HSET", k_trace, trace_id, msg)
return {"OK", msg}
