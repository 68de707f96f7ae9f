-- release.lua: give back the unit of a cancelled or closed order on the order's bucket j
-- (DESIGN.md 4, 13; calling convention in sk/scripts.h). Idempotent per traceId.
-- KEYS: meta stock users trace of bucket j
-- ARGV: traceId userId by(cancel|close|reconciler) expire_extra_ms [home(""|h)]
-- Replies: {"OK", restored, released, h}      T:x written now
--          {"ALREADY", release_entry_json, released, h}  T:x existed: nothing restored
--          error "ERR SKARG <what>" (invalid argument; nothing written).
-- h, the home bucket of the order's user: the entry T's "home", else ARGV home, else j.
-- Rules: T:x exists -> ALREADY (the home step still runs, so an interrupted release
-- completes). Else INCRBY stock by 1 only if the DEDUCT entry T exists, the stock key
-- exists (never create it: Redis may have lost data) and no T:r records restored=1 (a
-- rollback already gave the unit back); HSET T:x with what it did. Then, when h = j, the
-- home step here: HDEL users[U] only if its value is T (U from T, else ARGV). When h != j
-- users is not touched here (released = 0): the caller runs home.lua on h, after OK and
-- after ALREADY. A DB-only order (no T) gets only T:x: the recovery rebuild counts its
-- unit from the DB.
-- T:x = {"by":"..","restored":0|1,"ts":MS}
-- Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1.
-- Helpers from lua/lib/validate.lua and expiry.lua (prepended at build time).

if #KEYS ~= 4 then return argerr("expected 4 keys (meta stock users trace)") end
if #ARGV ~= 4 and #ARGV ~= 5 then
  return argerr("expected 4 or 5 args (traceId userId by expire_extra_ms [home])")
end
local trace_id, arg_user, by, arg_home = ARGV[1], ARGV[2], ARGV[3], ARGV[5] or ""
if not is_id(trace_id) then return argerr("traceId") end
if arg_user ~= "" and not is_id(arg_user) then return argerr("userId") end
if by ~= "cancel" and by ~= "close" and by ~= "reconciler" then return argerr("by") end
if not is_uint(ARGV[4], 15) then return argerr("expire_extra_ms") end
if arg_home ~= "" and (not is_uint(arg_home, 2) or tonumber(arg_home) > 15) then
  return argerr("home")
end
local j = key_bucket(KEYS[1], nil)
if j == nil then return argerr("key has no voucher tag") end
for i = 2, 4 do
  if key_bucket(KEYS[i], nil) ~= j then return argerr("keys of one bucket") end
end
local extra_ms = tonumber(ARGV[4])
local k_meta, k_stock, k_users, k_trace = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local entry = redis.call("HGET", k_trace, trace_id)
local user_id = arg_user
local h = j
if arg_home ~= "" then h = tonumber(arg_home) end
if entry then
  local u = string.match(entry, '"userId":"(%d+)"')
  if u and is_id(u) then user_id = u end
  local eh = string.match(entry, '"home":(%d+)')
  if eh and is_uint(eh, 2) then h = tonumber(eh) end
end

local now_ms = redis_now_ms()
local written = {}

local prev = redis.call("HGET", k_trace, trace_id .. ":x")
local restored = 0
if not prev then
  local fence = redis.call("HGET", k_trace, trace_id .. ":r")
  local rolled_back = fence and string.find(fence, '"restored":1', 1, true) ~= nil
  if entry and not rolled_back and redis.call("EXISTS", k_stock) == 1 then
    redis.call("INCRBY", k_stock, 1)
    restored = 1
    table.insert(written, k_stock)
  end
  redis.call("HSET", k_trace, trace_id .. ":x", '{"by":"' .. by .. '","restored":' ..
    restored .. ',"ts":' .. string.format("%d", now_ms) .. '}')
  table.insert(written, k_trace)
end

-- The home step when the home bucket is this one: the user may buy again.
local released = 0
if h == j and user_id ~= "" and redis.call("HGET", k_users, user_id) == trace_id then
  redis.call("HDEL", k_users, user_id)
  released = 1
  table.insert(written, k_users)
end

-- Expiry (lua/lib/expiry.lua): E = end_ms + extra; without meta (Redis lost data) now + extra.
if #written > 0 then expire_keys(written, expiry_at(k_meta, extra_ms, now_ms)) end
if prev then return {"ALREADY", prev, released, h} end
return {"OK", restored, released, h}
