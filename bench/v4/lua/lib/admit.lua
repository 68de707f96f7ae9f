-- lua/lib/admit.lua: what deduct.lua and take.lua share (DESIGN.md 4): the bucket's keys
-- must all exist, the sale checks on its meta, and the DEDUCT entry. Not a script of its
-- own: cmake/embed_lua.cmake puts it in front of each script's body (after validate.lua
-- and expiry.lua, whose is_uint, meta_buckets and redis_now_ms it uses).

-- The purchase arguments ARGV[1..5] of deduct.lua and take.lua (traceId orderId userId
-- voucherId qty) and their keys, all of one bucket of that voucher. Returns nil, qty,
-- bucket; or an argerr reply (nothing written).
local function purchase_args()
  for i, what in ipairs({"traceId", "orderId", "userId", "voucherId"}) do
    if not is_id(ARGV[i]) then return argerr(what) end
  end
  if not is_uint(ARGV[5], 6) or ARGV[5] == "0" then return argerr("qty") end
  local b = key_bucket(KEYS[1], ARGV[4])
  if b == nil then return argerr("voucherId does not match the keys") end
  for i = 2, #KEYS do
    if key_bucket(KEYS[i], ARGV[4]) ~= b then return argerr("keys of one bucket") end
  end
  return nil, tonumber(ARGV[5]), b
end

-- 1 if every key of @keys exists. deduct.lua and take.lua never create a key (preheat gave
-- every key of every bucket its expiry): a bucket with a key missing is answered as for a
-- missing meta, with nothing written (DESIGN.md 4).
local function all_keys_exist(keys)
  return redis.call("EXISTS", unpack(keys)) == #keys
end

-- The sale checks on one bucket's meta, in the order of DESIGN.md 4: status missing 10004,
-- paused 10013, begin/end unreadable 10004, window by Redis TIME (10002 before begin_ms,
-- 10003 after end_ms), status 2 10011, 3 10012, any other but 1 10004; buckets unreadable
-- 10004. Returns code (nothing to write) or nil, N (buckets), now_ms.
local function sale_check(k_meta)
  local meta = redis.call("HMGET", k_meta, "begin_ms", "end_ms", "status", "buckets")
  local begin_s, end_s, status = meta[1], meta[2], meta[3]
  if not status then return 10004 end
  if status == "4" then return 10013 end
  if not is_uint(begin_s, 15) or not is_uint(end_s, 15) then return 10004 end
  local n = meta_buckets(meta[4])
  if not n then return 10004 end
  local now_ms = redis_now_ms()
  if now_ms < tonumber(begin_s) then return 10002 end
  if now_ms > tonumber(end_s) then return 10003 end
  if status == "2" then return 10011 end
  if status == "3" then return 10012 end
  if status ~= "1" then return 10004 end
  return nil, n, now_ms
end

-- The stored entry T is this purchase's (same userId and orderId): REPLAY; anything else
-- (another purchase's ids, or no readable ids) is an id collision (DESIGN.md 4).
local function replay_or_collision(stored, user_id, order_id)
  local ok, entry = pcall(cjson.decode, stored)
  if ok and type(entry) == "table" and entry.userId == user_id and entry.orderId == order_id then
    return {"REPLAY", stored}
  end
  return {"COLLISION"}
end

-- The DEDUCT entry = the Kafka message (DESIGN.md 5, field order of sk/msg.h); ids are
-- the caller's strings, bucket and home small integers.
local function deduct_entry(trace_id, order_id, user_id, voucher_id, bucket, home, before,
                            qty, after, now_ms)
  return '{"traceId":"' .. trace_id .. '","orderId":"' .. order_id ..
    '","userId":"' .. user_id .. '","voucherId":"' .. voucher_id ..
    '","bucket":' .. string.format("%d", bucket) ..
    ',"home":' .. string.format("%d", home) ..
    ',"beforeQty":' .. string.format("%d", before) ..
    ',"deductQty":' .. string.format("%d", qty) ..
    ',"afterQty":' .. string.format("%d", after) ..
    ',"ts":' .. string.format("%d", now_ms) .. '}'
end
