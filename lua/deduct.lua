-- lib:
-- deduct.lua: admission of one purchase on the user's home bucket h (DESIGN.md 4, "Cost
-- of an admission" and "Give-up fence"; calling convention in sk/scripts.h).
-- KEYS: meta stock users trace of bucket h, and the give-up fence f:T
--       ("<prefix>:{v:ID:h}:meta|stock|users|trace" and "<prefix>:{v:ID:h}:f:<traceId>")
-- ARGV: traceId orderId userId voucherId ts
--       (ts = the snowflake timestamp of traceId, ms; within +-5 s of Redis TIME)
-- Replies: entry (a bulk string: admitted) | code (an integer: rejected, nothing written)
--          | {"REPLAY", stored_entry} | {"COLLISION"} | {"FENCED"}
--          | {"PROBING", N, h} | {"SETTLED", j, N, h} | {"OVERFLOW", N, h}
--          | error "ERR SKARG <what>" (invalid argument; nothing written).
--          (the two answers of the hot path, admitted and rejected, are a bare string
--          and a bare integer: Redis converts a Lua table reply for ~5,000 instructions.)
-- Order of the answers (DESIGN.md 4): arguments (ids by length and byte range, ts against
-- TIME, the keys one bucket's of this voucher and KEYS[5] the fence of this traceId);
-- the fences, f:T or T:r (FENCED), before the replay (T: REPLAY when it starts with our
-- traceId, orderId and userId, else COLLISION); T:h (PROBING while "probing", SETTLED j
-- once bucket j admitted T: the front re-runs take.lua on j, which answers REPLAY); then
-- any key of the bucket missing or meta without status (10004), paused (10013), window
-- by server TIME (10002, 10003), status (10011, 10012), membership (10006 when users
-- names another trace), stock. Only then any write:
--   stock >= 1: HSETNX users U=T (the membership check's own write), DECRBY, HSET trace T
--   = the entry (bucket = home = h): OK;
--   stock short, N = 1: 10005; N > 1: HSET users U=T and T:h = "probing": OVERFLOW.
-- The entry is concatenated from ARGV (ids, ts), the keys (bucket, home) and the DECRBY
-- (beforeQty, afterQty), deductQty 1: exactly the message the consumer accepts (DESIGN.md
-- 5), never poison. Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1,
-- effect replication (TIME is allowed before writes). No expiry command: preheat gave
-- every key of the bucket its expiry, and a bucket with a key missing gets no write.
--
-- Written for the cost of the Lua VM inside Redis (bench/admission_cost.sh; callgrind
-- instructions, EVALSHA inclusive): a C library call (string.*, tonumber) costs
-- ~1,000-2,000 instructions, a coercion of a numeric string ~900, a redis.call 3,500
-- plus ~2,300 per element of an array reply, a table returned ~5,000. Hence: no helper
-- functions (a closure per call), one byte-class scan of the arguments at once (the
-- voucherId is scanned by the key's pattern), numbers by coercion of strings this
-- script checked or Redis wrote (TIME), meta read before the trace so that a one-bucket
-- voucher's trace read skips T:h (only N > 1 ever writes it), two HGETs rather than an
-- HMGET of two fields, the bucket compared as a string where N = 1, and the admission
-- and the rejections answered without a table.

local K, A = KEYS, ARGV -- globals: one lookup each
if #K ~= 5 then return redis.error_reply("ERR SKARG expected 5 keys (meta stock users trace fence)") end
if #A ~= 5 then return redis.error_reply("ERR SKARG expected 5 args (traceId orderId userId voucherId ts)") end
local tid, oid, uid, vid, ts = A[1], A[2], A[3], A[4], A[5]
-- Ids canonical decimal 1..2^63-1 (DESIGN.md 3), ts canonical 1-15 digits: lengths, then
-- one anchored scan of all five (digits, no leading zero), then, only for a 19-digit id
-- starting with 9 (a snowflake id does so after 2090), the bound digit by digit.
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
-- ts is no id: a time in ms, exact as a double; TIME's fields are Redis' own digits.
local t = redis.call("TIME")
local us = t[2] / 1000
local now_ms = t[1] * 1000 + us - us % 1
local d = ts - now_ms
if d > 5000 or d < -5000 then return redis.error_reply("ERR SKARG ts: more than 5 s from Redis TIME") end
-- The keys: "<base>:meta" with base "<prefix>:{v:<voucherId>:<h>}", h canonical 0..15,
-- and the others base's, KEYS[5] this traceId's fence.
local k_meta, k_stock, k_users, k_trace, k_fence = K[1], K[2], K[3], K[4], K[5]
local base, v, hs = string.match(k_meta, "^(.-{v:([1-9]%d*):([1-9]?%d)}):meta$")
if v ~= vid or (#hs == 2 and (string.byte(hs) ~= 49 or string.byte(hs, 2) > 53)) then
  return redis.error_reply("ERR SKARG voucherId does not match the keys")
end
if k_stock ~= base .. ":stock" or k_users ~= base .. ":users" or k_trace ~= base .. ":trace"
   or k_fence ~= base .. ":f:" .. tid then
  return redis.error_reply("ERR SKARG keys of one bucket (meta stock users trace f:traceId)")
end

-- One EXISTS answers two questions: the fence key counted once, users and trace twice
-- each, so the count is odd iff f:T exists and is 4 or 5 iff both hashes exist. (A
-- missing meta reads as no status and a missing stock as nil below: 10004 too.)
local ex = redis.call("EXISTS", k_fence, k_users, k_trace, k_users, k_trace)
if ex % 2 == 1 then return {"FENCED"} end
local m = redis.call("HMGET", k_meta, "status", "begin_ms", "end_ms", "buckets")
local nb = m[4]
-- The fences win over everything: a rolled-back or given-up traceId never deducts again.
-- (Two HGETs cost less than an HMGET of two fields; T:h only where N > 1 may write it.)
if redis.call("HGET", k_trace, tid .. ":r") then return {"FENCED"} end
local stored = redis.call("HGET", k_trace, tid)
-- Replay only for the same purchase (its entry starts with our traceId, orderId and
-- userId: every entry is written in the field order of sk/msg.h, by these scripts or a
-- rebuild's stub): another buyer's entry is never handed out as ours.
if stored then
  local head = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid .. '"'
  if string.sub(stored, 1, #head) == head then return {"REPLAY", stored} end
  return {"COLLISION"}
end
-- An overflowing purchase: where its stock is (or that it is still being probed).
local where = nb ~= "1" and redis.call("HGET", k_trace, tid .. ":h")
if where then
  local n, h = tonumber(nb or "1") or 1, tonumber(hs)
  if where == "probing" then return {"PROBING", n, h} end
  local j = tonumber(where)
  if j and #where <= 2 and j >= 0 and j <= 15 and j % 1 == 0 then return {"SETTLED", j, n, h} end
  return {"COLLISION"} -- not written by these scripts: never act on it
end

-- The sale checks, in the order of DESIGN.md 4: users or trace missing, meta missing or
-- without status 10004, paused 10013, begin/end unreadable 10004, buckets unreadable
-- 10004, window by Redis TIME (10002 before begin_ms, 10003 after end_ms), status 2
-- 10011, 3 10012, any other but 1 10004.
if ex ~= 4 then return 10004 end
local status = m[1]
if not status then return 10004 end
if status == "4" then return 10013 end
local b, e = tonumber(m[2]), tonumber(m[3])
if not b or not e then return 10004 end
local n, h = 1, 0
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
if n == 1 then
  if hs ~= "0" then return redis.error_reply("ERR SKARG home bucket beyond the voucher's buckets") end
else
  h = hs + 0 -- a bucket number, no id
  if h >= n then return redis.error_reply("ERR SKARG home bucket beyond the voucher's buckets") end
end

local s = redis.call("GET", k_stock)
if not s then return 10004 end
-- stock >= 1, canonical and below 10^14 (so DECRBY cannot fail after a write and the
-- entry's quantities are exact); anything else reads as empty, as in v4.
if #s <= 14 and string.find(s, "^[1-9]%d*$") then
  -- Membership and its write in one command: HSETNX writes users[U]=T only if U is
  -- absent; U present with another trace is 10006 (nothing written).
  if redis.call("HSETNX", k_users, uid, tid) == 0 and redis.call("HGET", k_users, uid) ~= tid then
    return 10006
  end
  local entry = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid ..
    '","voucherId":"' .. vid .. '","bucket":' .. hs .. ',"home":' .. hs .. ',"beforeQty":' ..
    s .. ',"deductQty":1,"afterQty":' .. string.format("%d", redis.call("DECRBY", k_stock, "1")) ..
    ',"ts":' .. ts .. '}'
  redis.call("HSET", k_trace, tid, entry)
  return entry
end
local member = redis.call("HGET", k_users, uid)
if member and member ~= tid then return 10006 end
if n == 1 then return 10005 end
redis.call("HSET", k_users, uid, tid)
redis.call("HSET", k_trace, tid .. ":h", "probing")
return {"OVERFLOW", n, h}
