-- lua/lib/validate.lua: argument checks shared by every script in lua/. Not a script of
-- its own: cmake/embed_lua.cmake puts it in front of each script's body when embedding.
-- Ids stay strings (never tonumber on an id: doubles lose bits above 2^53).

local MAXID = "9223372036854775807"

-- canonical decimal id 1..2^63-1 (DESIGN.md 3)
local function is_id(s)
  if type(s) ~= "string" or not string.find(s, "^[1-9]%d*$") then return false end
  local n = string.len(s)
  if n < 19 then return true end
  if n > 19 then return false end
  -- same length: compare digit by digit (no locale-dependent string compare)
  for i = 1, 19 do
    local a, b = string.byte(s, i), string.byte(MAXID, i)
    if a ~= b then return a < b end
  end
  return true
end

-- non-negative integer with at most maxlen digits, no leading zero (so tonumber is exact)
local function is_uint(s, maxlen)
  return type(s) == "string" and string.find(s, "^%d+$") ~= nil and string.len(s) <= maxlen
    and (string.len(s) == 1 or string.sub(s, 1, 1) ~= "0")
end

-- an invalid argument: nothing has been written (every check runs before any write)
local function argerr(what)
  return redis.error_reply("ERR SKARG " .. what)
end

-- The bucket of a voucher key "<prefix>:{v:ID:b}:<kind>" (DESIGN.md 4: one hash tag per
-- bucket) as a number 0..15; a v3 key "{v:ID}" is bucket 0. @vid: the voucher id the tag
-- must name (a string), or nil for any. nil if the key carries no such tag.
local function key_bucket(key, vid)
  local v, b = string.match(key, "{v:(%d+):(%d+)}")
  if not v then
    v = string.match(key, "{v:(%d+)}")
    b = "0"
  end
  if not v or (vid and v ~= vid) or not is_uint(b, 2) then return nil end
  local n = tonumber(b)
  if n > 15 then return nil end
  return n
end

-- meta's bucket count N (DESIGN.md 4, 14): 1..16; a meta without the field is a
-- one-bucket voucher (v3); nil if the field is unreadable.
local function meta_buckets(s)
  if s == false or s == nil then return 1 end
  if not is_uint(s, 2) then return nil end
  local n = tonumber(s)
  if n < 1 or n > 16 then return nil end
  return n
end
