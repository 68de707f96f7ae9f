-- lib: admit
-- take.lua: overflow probing, one unit of bucket j for a purchase whose home bucket h
-- answered OVERFLOW (DESIGN.md 4; calling convention in sk/scripts.h).
-- KEYS: meta stock trace of bucket j (one hash tag {v:ID:j}, j != h)
-- ARGV: traceId orderId userId voucherId ts home
--       (ts = the snowflake timestamp of traceId, ms; within +-5 s of Redis TIME)
-- Replies: {"OK", entry} | {"REPLAY", stored_entry} | {"COLLISION"} | {"FENCED"}
--          | {"REJECT", code} | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Order of checks: arguments (as deduct.lua); fence T:r in j (FENCED) before the replay
-- (T in j: REPLAY when it starts with our traceId, orderId and userId, else COLLISION);
-- any key of j missing or meta without status (10004); paused (10013); window (10002,
-- 10003); status (10011, 10012); stock of j (10005: bucket j is empty). Then DECRBY
-- stock j and HSET trace T = the entry with bucket = j, home = h (built as deduct.lua
-- builds it): OK. Membership is the home bucket's (deduct.lua wrote users[U]=T and T:h =
-- probing there); take.lua never touches users. No expiry command (preheat gave every
-- key its expiry); it never creates a key.
-- Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1.

if #KEYS ~= 3 then return redis.error_reply("ERR SKARG expected 3 keys (meta stock trace)") end
if #ARGV ~= 6 then
  return redis.error_reply("ERR SKARG expected 6 args (traceId orderId userId voucherId ts home)")
end
local tid, oid, uid, vid, ts, hs = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local t = redis.call("TIME")
local now_ms = t[1] * 1000 + (t[2] - t[2] % 1000) / 1000
local bad = purchase_bad(tid, oid, uid, vid, ts, now_ms)
if bad then return redis.error_reply("ERR SKARG " .. bad) end
local k_meta, k_stock, k_trace = KEYS[1], KEYS[2], KEYS[3]
local base, js = bucket_base(k_meta, vid)
local j = tonumber(js) -- a bucket number, no id
if not base or j > 15 or (#js == 2 and j < 10) then
  return redis.error_reply("ERR SKARG voucherId does not match the keys")
end
if k_stock ~= base .. ":stock" or k_trace ~= base .. ":trace" then
  return redis.error_reply("ERR SKARG keys of one bucket (meta stock trace)")
end
local h = tonumber(hs) -- a bucket number, no id
if not h or h < 0 or h > 15 or h % 1 ~= 0 or hs ~= string.format("%d", h) then
  return redis.error_reply("ERR SKARG home")
end
if h == j then
  return redis.error_reply("ERR SKARG home: take.lua runs on a bucket other than the home")
end

local tr = redis.call("HMGET", k_trace, tid .. ":r", tid)
if tr[1] then return {"FENCED"} end
-- Replay only for the same purchase, as deduct.lua.
if tr[2] then
  local head = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid .. '"'
  if string.sub(tr[2], 1, #head) == head then return {"REPLAY", tr[2]} end
  return {"COLLISION"}
end

if redis.call("EXISTS", k_meta, k_stock, k_trace) ~= 3 then return {"REJECT", 10004} end
local code, n = sale_check(redis.call("HMGET", k_meta, "begin_ms", "end_ms", "status", "buckets"),
                           now_ms)
if code then return {"REJECT", code} end
if j >= n or h >= n then
  return redis.error_reply("ERR SKARG bucket beyond the voucher's buckets")
end

local s = redis.call("GET", k_stock)
-- stock >= 1, canonical, below 10^14 (as deduct.lua); anything else is empty here
if not s or #s > 14 or not string.find(s, "^[1-9]%d*$") then return {"REJECT", 10005} end
local e = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid ..
  '","voucherId":"' .. vid .. '","bucket":' .. js .. ',"home":' .. hs .. ',"beforeQty":' ..
  s .. ',"deductQty":1,"afterQty":' .. string.format("%d", redis.call("DECRBY", k_stock, 1)) ..
  ',"ts":' .. ts .. '}'
redis.call("HSET", k_trace, tid, e)
return {"OK", e}
