-- lua/lib/expiry.lua: the key-expiry rule of DESIGN.md 4 shared by the scripts that may
-- create a key (rollback, claim, release). Not a script of its own: cmake/embed_lua.cmake
-- puts it in front of each script's body (after validate.lua, whose is_uint it uses).

-- Redis server time in ms (TIME; allowed before writes under effect replication).
local function redis_now_ms()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- E as a decimal string: meta end_ms + extra_ms; without meta (Redis lost data) now + extra.
local function expiry_at(k_meta, extra_ms, now_ms)
  local end_s = redis.call("HGET", k_meta, "end_ms")
  if end_s and is_uint(end_s, 15) then
    return string.format("%d", tonumber(end_s) + extra_ms)
  end
  return string.format("%d", now_ms + extra_ms)
end

-- PEXPIREAT E NX then PEXPIREAT E GT on every key of @keys (a key with no TTL counts as
-- infinite for GT, and SET clears a TTL: NX gives it one, GT only ever moves it later).
local function expire_keys(keys, e)
  for _, k in ipairs(keys) do
    redis.call("PEXPIREAT", k, e, "NX")
    redis.call("PEXPIREAT", k, e, "GT")
  end
end
