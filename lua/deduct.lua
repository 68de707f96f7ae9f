-- deduct.lua: admission of one purchase (DESIGN.md 4, calling convention in sk/scripts.h).
-- KEYS: meta stock users trace (one voucher, one hash tag)
-- ARGV: traceId orderId userId voucherId qty expire_extra_ms
-- Replies: {"OK", msg_json} | {"REPLAY", stored_json} | {"COLLISION"} | {"FENCED"}
--          | {"REJECT", code} | error "ERR SKARG <what>" (invalid argument; nothing written).
-- Order of checks: arguments, fence (T:r) before replay (T: REPLAY when its userId and
-- orderId are ours, else COLLISION, DESIGN.md 4), meta missing (10004),
-- paused (10013), window by server TIME (10002, 10003), status (10011, 10012),
-- membership (10006, before stock), stock (10005). Only then any write.
-- Ids stay strings throughout (never tonumber on an id: doubles lose bits above 2^53).
-- Redis 7.0, Lua 5.1, effect replication (TIME is allowed before writes).
-- is_id, is_uint and argerr come from lua/lib/validate.lua (prepended at build time).

if #KEYS ~= 4 then return argerr("expected 4 keys (meta stock users trace)") end
if #ARGV ~= 6 then return argerr("expected 6 args (traceId orderId userId voucherId qty expire_extra_ms)") end
local trace_id, order_id, user_id, voucher_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not is_id(trace_id) then return argerr("traceId") end
if not is_id(order_id) then return argerr("orderId") end
if not is_id(user_id) then return argerr("userId") end
if not is_id(voucher_id) then return argerr("voucherId") end
if not is_uint(ARGV[5], 6) or ARGV[5] == "0" then return argerr("qty") end
if not is_uint(ARGV[6], 15) then return argerr("expire_extra_ms") end
if not string.find(KEYS[1], "{v:" .. voucher_id .. ":", 1, true) then
  return argerr("voucherId does not match the keys")
end
local qty = tonumber(ARGV[5])
local extra_ms = tonumber(ARGV[6])
local k_meta, k_stock, k_users, k_trace = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- The fence wins over everything: a rolled-back traceId never deducts again.
if redis.call("HEXISTS", k_trace, trace_id .. ":r") == 1 then
  return {"FENCED"}
end
-- Replay only for the same purchase: a stored entry naming another userId or orderId
-- (or none that can be read) is an id collision. Nothing is written, and the other
-- buyer's entry is never handed out as this purchase's.
local stored = redis.call("HGET", k_trace, trace_id)
if stored then
  local ok, entry = pcall(cjson.decode, stored)
  if ok and type(entry) == "table" and entry.userId == user_id and entry.orderId == order_id then
    return {"REPLAY", stored}
  end
  return {"COLLISION"}
end

local meta = redis.call("HMGET", k_meta, "begin_ms", "end_ms", "status")
local begin_s, end_s, status = meta[1], meta[2], meta[3]
if not status then return {"REJECT", 10004} end
if status == "4" then return {"REJECT", 10013} end
if not is_uint(begin_s, 15) or not is_uint(end_s, 15) then return {"REJECT", 10004} end
local begin_ms, end_ms = tonumber(begin_s), tonumber(end_s)

local t = redis.call("TIME")
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now_ms < begin_ms then return {"REJECT", 10002} end
if now_ms > end_ms then return {"REJECT", 10003} end
if status == "2" then return {"REJECT", 10011} end
if status == "3" then return {"REJECT", 10012} end
if status ~= "1" then return {"REJECT", 10004} end

if redis.call("HEXISTS", k_users, user_id) == 1 then return {"REJECT", 10006} end
local stock = tonumber(redis.call("GET", k_stock) or "")
if not stock or stock < qty then return {"REJECT", 10005} end

-- Admitted: every check passed, now write.
local after = redis.call("DECRBY", k_stock, qty)
local before = after + qty
local msg = '{"traceId":"' .. trace_id .. '","orderId":"' .. order_id ..
  '","userId":"' .. user_id .. '","voucherId":"' .. voucher_id ..
  '","beforeQty":' .. string.format("%d", before) ..
  ',"deductQty":' .. string.format("%d", qty) ..
  ',"afterQty":' .. string.format("%d", after) ..
  ',"ts":' .. string.format("%d", now_ms) .. '}'
redis.call("HSET", k_users, user_id, trace_id)
redis.call("HSET", k_trace, trace_id, msg)

-- Expiry: NX gives a TTL to a key without one, GT only ever extends it.
local e = string.format("%d", end_ms + extra_ms)
for _, k in ipairs({k_meta, k_stock, k_users, k_trace}) do
  redis.call("PEXPIREAT", k, e, "NX")
  redis.call("PEXPIREAT", k, e, "GT")
end
return {"OK", msg}
