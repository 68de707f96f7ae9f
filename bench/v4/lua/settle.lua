-- settle.lua: after take.lua admitted purchase T in bucket j, record on the home bucket h
-- where its stock is (DESIGN.md 4 "settle"; calling convention in sk/scripts.h).
-- KEYS: trace of bucket h
-- ARGV: traceId j
-- Replies: {"OK"}            T:h was "probing": now j
--          {"ALREADY", cur}  T:h already names a bucket (cur; j on a repeat), unchanged
--          {"NONE"}          no T:h in h (Redis lost it, or a rebuild): nothing written
--          error "ERR SKARG <what>" (invalid argument; nothing written).
-- The front publishes in every case (the DB's unique active-order key judges a user who
-- meanwhile got another admission). Writes only into an existing field, so it never
-- creates the key and needs no expiry command. Ids stay strings. Redis 7.0, Lua 5.1.

if #KEYS ~= 1 then return argerr("expected 1 key (trace)") end
if #ARGV ~= 2 then return argerr("expected 2 args (traceId bucket)") end
local trace_id = ARGV[1]
if not is_id(trace_id) then return argerr("traceId") end
if not is_uint(ARGV[2], 2) or tonumber(ARGV[2]) > 15 then return argerr("bucket") end
local h = key_bucket(KEYS[1], nil)
if h == nil then return argerr("key has no voucher tag") end
if tonumber(ARGV[2]) == h then return argerr("bucket: the home bucket is not settled") end
local k_trace, f_home = KEYS[1], trace_id .. ":h"

local cur = redis.call("HGET", k_trace, f_home)
if not cur then return {"NONE"} end
if cur ~= "probing" then return {"ALREADY", cur} end
redis.call("HSET", k_trace, f_home, ARGV[2])
return {"OK"}
