-- lib: admit
-- deduct.lua: admission of one purchase on the user's home bucket h (DESIGN.md 4, "Cost
-- of an admission" and "Give-up fence"; calling convention in sk/scripts.h).
-- KEYS: meta stock users trace of bucket h, and the give-up fence f:T
--       ("<prefix>:{v:ID:h}:meta|stock|users|trace" and "<prefix>:{v:ID:h}:f:<traceId>")
-- ARGV: traceId orderId userId voucherId ts
--       (ts = the snowflake timestamp of traceId, ms; within +-5 s of Redis TIME)
-- Replies: {"OK", entry} | {"REPLAY", stored_entry} | {"COLLISION"} | {"FENCED"}
--          | {"PROBING", N, h} | {"SETTLED", j, N, h} | {"OVERFLOW", N, h}
--          | {"REJECT", code} | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Order of checks (DESIGN.md 4): arguments (ids by length and byte range, ts against
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

if #KEYS ~= 5 then return redis.error_reply("ERR SKARG expected 5 keys (meta stock users trace fence)") end
if #ARGV ~= 5 then return redis.error_reply("ERR SKARG expected 5 args (traceId orderId userId voucherId ts)") end
local tid, oid, uid, vid, ts = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local t = redis.call("TIME")
local now_ms = t[1] * 1000 + (t[2] - t[2] % 1000) / 1000
local bad = purchase_bad(tid, oid, uid, vid, ts, now_ms)
if bad then return redis.error_reply("ERR SKARG " .. bad) end
local k_meta, k_stock, k_users, k_trace, k_fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local base, hs = bucket_base(k_meta, vid)
local h = tonumber(hs) -- a bucket number, no id
if not base or h > 15 or (#hs == 2 and h < 10) then
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
-- The fences win over everything: a rolled-back or given-up traceId never deducts again.
local tr = redis.call("HMGET", k_trace, tid .. ":r", tid, tid .. ":h")
if tr[1] then return {"FENCED"} end
-- Replay only for the same purchase (its entry starts with our traceId, orderId and
-- userId: every entry is written in the field order of sk/msg.h, by these scripts or a
-- rebuild's stub): another buyer's entry is never handed out as ours.
if tr[2] then
  local head = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid .. '"'
  if string.sub(tr[2], 1, #head) == head then return {"REPLAY", tr[2]} end
  return {"COLLISION"}
end
-- An overflowing purchase: where its stock is (or that it is still being probed).
if tr[3] then
  local n = tonumber(redis.call("HGET", k_meta, "buckets") or "1") or 1
  local where = tr[3]
  if where == "probing" then return {"PROBING", n, h} end
  local j = tonumber(where)
  if j and #where <= 2 and j >= 0 and j <= 15 and j % 1 == 0 then return {"SETTLED", j, n, h} end
  return {"COLLISION"} -- not written by these scripts: never act on it
end

if ex ~= 4 then return {"REJECT", 10004} end
local code, n = sale_check(redis.call("HMGET", k_meta, "begin_ms", "end_ms", "status", "buckets"),
                           now_ms)
if code then return {"REJECT", code} end
if h >= n then return redis.error_reply("ERR SKARG home bucket beyond the voucher's buckets") end

local s = redis.call("GET", k_stock)
if not s then return {"REJECT", 10004} end
-- stock >= 1, canonical and below 10^14 (so DECRBY cannot fail after a write and the
-- entry's quantities are exact); anything else reads as empty, as in v4.
if #s <= 14 and string.find(s, "^[1-9]%d*$") then
  -- Membership and its write in one command: HSETNX writes users[U]=T only if U is
  -- absent; U present with another trace is 10006 (nothing written).
  if redis.call("HSETNX", k_users, uid, tid) == 0 and redis.call("HGET", k_users, uid) ~= tid then
    return {"REJECT", 10006}
  end
  local e = '{"traceId":"' .. tid .. '","orderId":"' .. oid .. '","userId":"' .. uid ..
    '","voucherId":"' .. vid .. '","bucket":' .. hs .. ',"home":' .. hs .. ',"beforeQty":' ..
    s .. ',"deductQty":1,"afterQty":' .. string.format("%d", redis.call("DECRBY", k_stock, 1)) ..
    ',"ts":' .. ts .. '}'
  redis.call("HSET", k_trace, tid, e)
  return {"OK", e}
end
local member = redis.call("HGET", k_users, uid)
if member and member ~= tid then return {"REJECT", 10006} end
if n == 1 then return {"REJECT", 10005} end
redis.call("HSET", k_users, uid, tid)
redis.call("HSET", k_trace, tid .. ":h", "probing")
return {"OVERFLOW", n, h}
