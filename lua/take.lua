-- lib:
-- take.lua: overflow probing, one unit of bucket j for a purchase whose home bucket h
-- answered OVERFLOW (DESIGN.md 4; calling convention in sk/scripts.h).
-- KEYS: meta stock trace of bucket j (one hash tag {v:ID:j}, j != h)
-- ARGV: traceId orderId userId voucherId ts home
--       (ts = the snowflake timestamp of traceId, ms; within +-5 s of Redis TIME)
-- Replies: entry (a bulk string: admitted) | code (an integer: rejected, nothing written)
--          | {"REPLAY", stored_entry} | {"COLLISION"} | {"FENCED"}
--          | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Order of checks: arguments (as deduct.lua); fence T:r in j (FENCED) before the replay
-- (T in j: REPLAY when it starts with our traceId, orderId and userId, else COLLISION);
-- any key of j missing or meta without status (10004); paused (10013); window (10002,
-- 10003); status (10011, 10012); stock of j (10005: bucket j is empty). Then DECRBY
-- stock j and HSET trace T = the entry with bucket = j, home = h (built as deduct.lua
-- builds it): the entry. Membership is the home bucket's (deduct.lua wrote users[U]=T
-- and T:h = probing there); take.lua never touches users. No expiry command (preheat
-- gave every key its expiry); it never creates a key.
-- Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1. Written for the cost
-- of the Lua VM as deduct.lua is (see there): no helper functions, one scan of the
-- arguments, answers without a table on the probing path.

local K, A = KEYS, ARGV -- globals: one lookup each
if #K ~= 3 then return redis.error_reply("ERR SKARG expected 3 keys (meta stock trace)") end
if #A ~= 6 then
  return redis.error_reply("ERR SKARG expected 6 args (traceId orderId userId voucherId ts home)")
end
local tid, oid, uid, vid, ts, hs = A[1], A[2], A[3], A[4], A[5], A[6]
-- The arguments, as deduct.lua checks them (the voucherId by the key's pattern below).
local lt, lo, lu, lv, ls = #tid, #oid, #uid, #vid, #ts
if lt == 0 or lt > 19 or lo == 0 or lo > 19 or lu == 0 or lu > 19 or lv == 0 or lv > 19 then
  return redis.error_reply("ERR SKARG ids: 1-19 digits")
end
if ls == 0 or ls > 15 then return redis.error_reply("ERR SKARG ts") end
if not string.find(tid .. ":" .. oid .. ":" .. uid .. ":" .. ts,
                   "^[1-9]%d*:[1-9]%d*:[1-9]%d*:[1-9]%d*$") then
  return redis.error_reply("ERR SKARG ids and ts: canonical decimal")
end
if lt == 19 or lo == 19 or lu == 19 or lv == 19 then
  for _, s in ipairs({tid, oid, uid, vid}) do
    if #s == 19 and string.byte(s) == 57 then
      local m = "9223372036854775807"
      for i = 2, 19 do
        local a, b = string.byte(s, i), string.byte(m, i)
        if a > b then return redis.error_reply("ERR SKARG ids: above 2^63-1") end
        if a < b then break end
      end
    end
  end
end
local t = redis.call("TIME")
local us = t[2] / 1000
local now_ms = t[1] * 1000 + us - us % 1
local d = ts - now_ms -- ts is no id: a time in ms
if d > 5000 or d < -5000 then return redis.error_reply("ERR SKARG ts: more than 5 s from Redis TIME") end
local k_meta, k_stock, k_trace = K[1], K[2], K[3]
local base, v, js = string.match(k_meta, "^(.-{v:([1-9]%d*):([1-9]?%d)}):meta$")
if v ~= vid or (#js == 2 and (string.byte(js) ~= 49 or string.byte(js, 2) > 53)) then
  return redis.error_reply("ERR SKARG voucherId does not match the keys")
end
if k_stock ~= base .. ":stock" or k_trace ~= base .. ":trace" then
  return redis.error_reply("ERR SKARG keys of one bucket (meta stock trace)")
end
-- home: canonical 0..15 (a bucket number, no id), never j itself
if not string.find(hs, "^[1-9]?%d$") or (#hs == 2 and (string.byte(hs) ~= 49 or string.byte(hs, 2) > 53)) then
  return redis.error_reply("ERR SKARG home")
end
if hs == js then
  return redis.error_reply("ERR SKARG home: take.lua runs on a bucket other than the home")
end

if redis.call("HGET", k_trace, tid .. ":r") then return {"FENCED"} end
-- Replay only for the same purchase, as deduct.lua.
local stored = redis.call("HGET", k_trace, tid)
if stored then
  local head = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid .. '"'
  if string.sub(stored, 1, #head) == head then return {"REPLAY", stored} end
  return {"COLLISION"}
end

-- The sale checks of j, in deduct.lua's order.
if redis.call("EXISTS", k_meta, k_stock, k_trace) ~= 3 then return 10004 end
local m = redis.call("HMGET", k_meta, "status", "begin_ms", "end_ms", "buckets")
local status, nb = m[1], m[4]
if not status then return 10004 end
if status == "4" then return 10013 end
local b, e = tonumber(m[2]), tonumber(m[3])
if not b or not e then return 10004 end
local n = 1
if nb and nb ~= "1" then
  n = tonumber(nb)
  if not n or n < 1 or n > 16 or n % 1 ~= 0 then return 10004 end
end
if now_ms < b then return 10002 end
if now_ms > e then return 10003 end
if status ~= "1" then
  if status == "2" then return 10011 end
  if status == "3" then return 10012 end
  return 10004
end
if js + 0 >= n or hs + 0 >= n then
  return redis.error_reply("ERR SKARG bucket beyond the voucher's buckets")
end

local s = redis.call("GET", k_stock)
-- stock >= 1, canonical, below 10^14 (as deduct.lua); anything else is empty here
if not s or #s > 14 or not string.find(s, "^[1-9]%d*$") then return 10005 end
local entry = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid ..
  '","voucherId":"' .. vid .. '","bucket":' .. js .. ',"home":' .. hs .. ',"beforeQty":' ..
  s .. ',"deductQty":1,"afterQty":' .. string.format("%d", redis.call("DECRBY", k_stock, "1")) ..
  ',"ts":' .. ts .. '}'
redis.call("HSET", k_trace, tid, entry)
return entry
