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
