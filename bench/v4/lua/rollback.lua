-- rollback.lua: undo (fence) one purchase on the bucket j that holds its DEDUCT entry,
-- idempotent per traceId (DESIGN.md 4, 7, 8; calling convention in sk/scripts.h).
-- KEYS: meta stock users trace of bucket j
-- ARGV: traceId mode(front|consumer|reconciler) restore(0|1) release(0|1)
--       clamp_to(""|N) userId(""|id) reason expire_extra_ms [home(""|h) repoint(""|T0)]
-- Replies: {"OK", restored, released, clamped, h, repointed} (fence T:r written)
--          | {"ALREADY", restore_entry_json, h} | {"CLAIMED"} (mode front, T:c exists)
--          | error "ERR SKARG <what>" (invalid argument; nothing written).
-- h, the home bucket of T's user: the entry T's "home", else ARGV home, else j. When
-- h = j this script is also the home step (users[U] is in these keys): release = 1
-- deletes users[U] if it names T; a repoint T0 (has_order) replaces it with T0 instead.
-- When h != j nothing here touches users (released = repointed = 0): the caller runs
-- home.lua on h after OK and after ALREADY (DESIGN.md 4 "Home step").
-- Rules: restore stock only if the DEDUCT entry T exists, the stock key exists
-- (never create the stock key: Redis may have lost data) and no release T:x records
-- restored=1 (release.lua gave the unit back already: never twice); clamp sets stock to
-- min(stock, N), only on an existing key; userId comes from T, else from ARGV; the fence
-- T:r is always written, even when no DEDUCT ran, so a late deduct or take of this traceId
-- answers FENCED.
-- T:r = {"mode":"..","reason":"..","home":h,"restored":0|1,"released":0|1,"clamped":0|1,"ts":MS}
-- Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1.
-- Helpers from lua/lib/validate.lua and expiry.lua (prepended at build time).

if #KEYS ~= 4 then return argerr("expected 4 keys (meta stock users trace)") end
if #ARGV ~= 8 and #ARGV ~= 10 then
  return argerr("expected 8 or 10 args (traceId mode restore release clamp_to userId reason expire_extra_ms [home repoint])")
end
local trace_id, mode, restore, release = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local clamp_s, arg_user, reason = ARGV[5], ARGV[6], ARGV[7]
local arg_home, repoint = ARGV[9] or "", ARGV[10] or ""
if not is_id(trace_id) then return argerr("traceId") end
if mode ~= "front" and mode ~= "consumer" and mode ~= "reconciler" then return argerr("mode") end
if restore ~= "0" and restore ~= "1" then return argerr("restore") end
if release ~= "0" and release ~= "1" then return argerr("release") end
if clamp_s ~= "" and not is_uint(clamp_s, 15) then return argerr("clamp_to") end
if arg_user ~= "" and not is_id(arg_user) then return argerr("userId") end
if not string.find(reason, "^[a-z_]+$") or string.len(reason) > 32 then return argerr("reason") end
if not is_uint(ARGV[8], 15) then return argerr("expire_extra_ms") end
if arg_home ~= "" and (not is_uint(arg_home, 2) or tonumber(arg_home) > 15) then
  return argerr("home")
end
if repoint ~= "" and not is_id(repoint) then return argerr("repoint") end
local j = key_bucket(KEYS[1], nil)
if j == nil then return argerr("key has no voucher tag") end
for i = 2, 4 do
  if key_bucket(KEYS[i], nil) ~= j then return argerr("keys of one bucket") end
end
local extra_ms = tonumber(ARGV[8])
local k_meta, k_stock, k_users, k_trace = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local f_restore = trace_id .. ":r"

local entry = redis.call("HGET", k_trace, trace_id)
local user_id = arg_user
local qty = nil
local h = j
if arg_home ~= "" then h = tonumber(arg_home) end
if entry then
  local u = string.match(entry, '"userId":"(%d+)"')
  if u and is_id(u) then user_id = u end
  qty = tonumber(string.match(entry, '"deductQty":(%d+)') or "")
  local eh = string.match(entry, '"home":(%d+)')
  if eh and is_uint(eh, 2) then h = tonumber(eh) end
end

local prev = redis.call("HGET", k_trace, f_restore)
if prev then return {"ALREADY", prev, h} end
if mode == "front" and redis.call("HEXISTS", k_trace, trace_id .. ":c") == 1 then
  return {"CLAIMED"}
end

local now_ms = redis_now_ms()

local restored, released, clamped, repointed = 0, 0, 0, 0
local stock_exists = redis.call("EXISTS", k_stock) == 1
-- A release of a cancelled or closed order (T:x, release.lua) already gave the unit back.
local rel = redis.call("HGET", k_trace, trace_id .. ":x")
local released_unit = rel and string.find(rel, '"restored":1', 1, true) ~= nil
if restore == "1" and qty and qty > 0 and stock_exists and not released_unit then
  redis.call("INCRBY", k_stock, qty)
  restored = 1
end
-- The home step, when the home bucket is this one.
if h == j and user_id ~= "" and redis.call("HGET", k_users, user_id) == trace_id then
  if repoint ~= "" then
    redis.call("HSET", k_users, user_id, repoint)
    repointed = 1
  elseif release == "1" then
    redis.call("HDEL", k_users, user_id)
    released = 1
  end
end
if clamp_s ~= "" and stock_exists then
  local n = tonumber(clamp_s)
  local cur = tonumber(redis.call("GET", k_stock) or "")
  if cur == nil or cur > n then
    redis.call("SET", k_stock, clamp_s) -- SET clears the TTL: re-applied below
    clamped = 1
  end
end

local fence = '{"mode":"' .. mode .. '","reason":"' .. reason ..
  '","home":' .. string.format("%d", h) ..
  ',"restored":' .. restored .. ',"released":' .. released ..
  ',"clamped":' .. clamped .. ',"ts":' .. string.format("%d", now_ms) .. '}'
redis.call("HSET", k_trace, f_restore, fence)

-- Expiry (lua/lib/expiry.lua): E = end_ms + extra; without meta (Redis lost data) now + extra.
local written = {k_trace}
if restored == 1 or clamped == 1 then table.insert(written, k_stock) end
if released == 1 or repointed == 1 then table.insert(written, k_users) end
expire_keys(written, expiry_at(k_meta, extra_ms, now_ms))
return {"OK", restored, released, clamped, h, repointed}
