-- lib: validate expiry
-- home.lua: the home step of purchase T on its user's home bucket h, when T's stock is
-- (or was probed) elsewhere (DESIGN.md 4 "Home step"; calling convention in
-- sk/scripts.h). It runs after rollback.lua or release.lua on the trace's bucket j != h,
-- after the front gives up on a probing purchase, after every probed bucket answered
-- empty, and also after an ALREADY answer, so an interrupted two-script sequence always
-- completes. When j = h, rollback.lua and release.lua run this step themselves.
-- Idempotent per traceId.
-- KEYS: meta users trace of bucket h [fence f:T of h]
-- ARGV: traceId userId bucket(""|j) repoint(""|T0) reason expire_extra_ms [giveup_px_ms]
--   bucket:  j, the bucket that holds T; "" when no bucket admitted T (probing found
--            every bucket empty, or gave up before a take).
--   repoint: "" release users[U]; T0 (has_order): re-point users[U] to the trace T0 of
--            the user's active order instead; "0": keep users[U] (fence only: a reason
--            that keeps the user, has_order whose T0 the caller does not know).
--   giveup_px_ms (with the 4th key, bucket "" and repoint ""): the give-up of a purchase
--            that took nothing anywhere (every probed bucket answered empty, DESIGN.md 4
--            "Give-up fence"): SET f:T PX giveup_px_ms (max(request deadline, 11 s)) instead of
--            T:r, HDEL T:h, and users[U] released if it names T; nothing lasting is left
--            (f:T is the only key a script creates without the voucher's expiry E).
-- Replies: {"OK", fenced(0|1), released(0|1), repointed(0|1)}
--          | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Steps: when j != h (or no j): HSET T:r in h if missing (fenced = 1), so a late deduct of
-- T on h answers FENCED. users[U] only if its value is T: HSET U=T0 with repoint
-- (repointed = 1), else HDEL (released = 1).
-- T:r (written here) = {"mode":"home","reason":"..","bucket":j|-1,"restored":0,"released":0,"clamped":0,"ts":MS}
-- Keys it writes get PEXPIREAT E NX then GT (the fence may create the trace hash).
-- Ids stay strings. Redis 7.0, Lua 5.1. Helpers from lua/lib (prepended at build time).

if #KEYS ~= 3 and #KEYS ~= 4 then return argerr("expected 3 or 4 keys (meta users trace [fence])") end
if #ARGV ~= 6 + (#KEYS - 3) then
  return argerr("expected 6 args (traceId userId bucket repoint reason expire_extra_ms), 7 with the fence key (+ giveup_px_ms)")
end
local trace_id, user_id, bucket_s, repoint, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if not is_id(trace_id) then return argerr("traceId") end
if not is_id(user_id) then return argerr("userId") end
if bucket_s ~= "" and (not is_uint(bucket_s, 2) or tonumber(bucket_s) > 15) then
  return argerr("bucket")
end
if repoint ~= "" and repoint ~= "0" and not is_id(repoint) then return argerr("repoint") end
if not string.find(reason, "^[a-z_]+$") or string.len(reason) > 32 then return argerr("reason") end
if not is_uint(ARGV[6], 15) then return argerr("expire_extra_ms") end
local h = key_bucket(KEYS[1], nil)
if h == nil then return argerr("key has no voucher tag") end
for i = 2, 3 do
  if key_bucket(KEYS[i], nil) ~= h then return argerr("keys of one bucket") end
end
local extra_ms = tonumber(ARGV[6])
local k_meta, k_users, k_trace = KEYS[1], KEYS[2], KEYS[3]
if #KEYS == 4 then
  -- The give-up fence (DESIGN.md 4): nothing was taken anywhere, so nothing lasting.
  local k_fence = string.sub(k_trace, 1, -7) .. ":f:" .. trace_id
  if string.sub(k_trace, -6) ~= ":trace" or KEYS[4] ~= k_fence then
    return argerr("fence key: <bucket>:f:<traceId>")
  end
  if bucket_s ~= "" or repoint ~= "" then return argerr("give-up: bucket and repoint must be empty") end
  if not is_uint(ARGV[7], 9) or ARGV[7] == "0" then return argerr("giveup_px_ms") end
  redis.call("SET", k_fence, "1", "PX", ARGV[7])
  redis.call("HDEL", k_trace, trace_id .. ":h")
  local released = 0
  if redis.call("HGET", k_users, user_id) == trace_id then
    redis.call("HDEL", k_users, user_id)
    released = 1
  end
  return {"OK", 1, released, 0}
end
local j = -1
if bucket_s ~= "" then j = tonumber(bucket_s) end

local now_ms = redis_now_ms()
local written = {}
local fenced, released, repointed = 0, 0, 0
if j ~= h and redis.call("HEXISTS", k_trace, trace_id .. ":r") == 0 then
  redis.call("HSET", k_trace, trace_id .. ":r", '{"mode":"home","reason":"' .. reason ..
    '","bucket":' .. string.format("%d", j) ..
    ',"restored":0,"released":0,"clamped":0,"ts":' .. string.format("%d", now_ms) .. '}')
  fenced = 1
  table.insert(written, k_trace)
end
if repoint ~= "0" and redis.call("HGET", k_users, user_id) == trace_id then
  if repoint ~= "" then
    redis.call("HSET", k_users, user_id, repoint)
    repointed = 1
  else
    redis.call("HDEL", k_users, user_id)
    released = 1
  end
  table.insert(written, k_users)
end
if #written > 0 then expire_keys(written, expiry_at(k_meta, extra_ms, now_ms)) end
return {"OK", fenced, released, repointed}
