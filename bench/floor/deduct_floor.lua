-- bench/floor/deduct_floor.lua: the floor of an admission's Redis cost under DESIGN.md 4:
-- the nine commands the admitted path of lua/deduct.lua must run, in its
-- order, with deduct.lua's KEYS and ARGV and no other Lua work (no argument check, no
-- key check, no window or status check, a 19-byte entry instead of the message).
-- TIME (ts within +-5 s), EXISTS (the give-up fence f:T and that users and trace exist),
-- HMGET meta (status, window, buckets), HGET T:r (the rollback fence), HGET T (replay),
-- GET stock, HSETNX users (one order per user), DECRBY, HSET trace T. Never used by the
-- product: bench/admission_cost.sh times it beside deduct.lua and v4's as the lower bound
-- that any deduct.lua keeping every answer of DESIGN.md 4 pays.
local K, A = KEYS, ARGV
redis.call("TIME")
redis.call("EXISTS", K[5], K[3], K[4], K[3], K[4])
redis.call("HMGET", K[1], "status", "begin_ms", "end_ms", "buckets")
redis.call("HGET", K[4], "0:r")
redis.call("HGET", K[4], "0")
redis.call("GET", K[2])
redis.call("HSETNX", K[3], A[3], A[1])
redis.call("DECRBY", K[2], "1")
redis.call("HSET", K[4], A[1], A[1])
return A[1]
