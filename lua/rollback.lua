-- rollback.lua: undo (fence) one purchase, idempotent per traceId (DESIGN.md 4, 7, 8;
-- calling convention in sk/scripts.h).
-- KEYS: meta stock users trace
-- ARGV: traceId mode(front|consumer|reconciler) restore(0|1) release(0|1)
--       clamp_to(""|N) userId(""|id) reason expire_extra_ms
-- Replies: {"OK", restored, released, clamped} (fence T:r written)
--          | {"ALREADY", restore_entry_json} | {"CLAIMED"} (mode front, T:c exists)
--          | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Rules: restore stock only if the DEDUCT entry T exists, the stock key exists
-- (never create the stock key: Redis may have lost data) and no release T:x records
-- restored=1 (release.lua gave the unit back already: never twice); release the user only if
-- users[userId] == traceId; clamp sets stock to min(stock, N), only on an existing key;
-- userId comes from T, else from ARGV; the fence T:r is always written, even when no
-- DEDUCT ran, so a late deduct of this traceId answers FENCED.
-- T:r = {"mode":"..","reason":"..","restored":0|1,"released":0|1,"clamped":0|1,"ts":MS}
-- Ids stay strings (never tonumber on an id). Redis 7.0, Lua 5.1.
-- is_id, is_uint and argerr come from lua/lib/validate.lua (prepended at build time).

if #KEYS ~= 4 then return argerr("expected 4 keys (meta stock users trace)") end
if #ARGV ~= 8 then
  return argerr("expected 8 args (traceId mode restore release clamp_to userId reason expire_extra_ms)")
end
local trace_id, mode, restore, release = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local clamp_s, arg_user, reason = ARGV[5], ARGV[6], ARGV[7]
if not is_id(trace_id) then return argerr("traceId") end
if mode ~= "front" and mode ~= "consumer" and mode ~= "reconciler" then return argerr("mode") end
if restore ~= "0" and restore ~= "1" then return argerr("restore") end
if release ~= "0" and release ~= "1" then return argerr("release") end
if clamp_s ~= "" and not is_uint(clamp_s, 15) then return argerr("clamp_to") end
if arg_user ~= "" and not is_id(arg_user) then return argerr("userId") end
if not string.find(reason, "^[a-z_]+$") or string.len(reason) > 32 then return argerr("reason") end
if not is_uint(ARGV[8], 15) then return argerr("expire_extra_ms") end
local extra_ms = tonumber(ARGV[8])
local k_meta, k_stock, k_users, k_trace = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local f_restore = trace_id .. ":r"

local prev = redis.call("HGET", k_trace, f_restore)
if prev then return {"ALREADY", prev} end
if mode == "front" and redis.call("HEXISTS", k_trace, trace_id .. ":c") == 1 then
  return {"CLAIMED"}
end

local entry = redis.call("HGET", k_trace, trace_id)
local user_id = arg_user
local qty = nil
if entry then
  local u = string.match(entry, '"userId":"(%d+)"')
  if u and is_id(u) then user_id = u end
  qty = tonumber(string.match(entry, '"deductQty":(%d+)') or "")
end

local now_ms = redis_now_ms()

local restored, released, clamped = 0, 0, 0
local stock_exists = redis.call("EXISTS", k_stock) == 1
-- A release of a cancelled or closed order (T:x, release.lua) already gave the unit back.
local rel = redis.call("HGET", k_trace, trace_id .. ":x")
local released_unit = rel and string.find(rel, '"restored":1', 1, true) ~= nil
if restore == "1" and qty and qty > 0 and stock_exists and not released_unit then
  redis.call("INCRBY", k_stock, qty)
  restored = 1
end
if release == "1" and user_id ~= "" and redis.call("HGET", k_users, user_id) == trace_id then
  redis.call("HDEL", k_users, user_id)
  released = 1
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
  '","restored":' .. restored .. ',"released":' .. released ..
  ',"clamped":' .. clamped .. ',"ts":' .. string.format("%d", now_ms) .. '}'
redis.call("HSET", k_trace, f_restore, fence)

-- Expiry (lua/lib/expiry.lua): E = end_ms + extra; without meta (Redis lost data) now + extra.
local written = {k_trace}
if restored == 1 or clamped == 1 then table.insert(written, k_stock) end
if released == 1 then table.insert(written, k_users) end
expire_keys(written, expiry_at(k_meta, extra_ms, now_ms))
return {"OK", restored, released, clamped}
