-- lib: validate expiry queue
-- queue_use.lua: "a token buys once" (DESIGN.md 18): set the position's used bit before the
-- deduct, mark its deduct done once the purchase was answered, or clear the bit again when
-- it was answered 503 (nothing decided).
-- KEYS: state used gone uselog of one room ({q:ID})
-- ARGV: generation position set|done|clear expire_at_ms bound_ms
-- Replies: {"OK"}; {"USED"} (set: the bit was already set, or the position is gone);
--          {"OTHERGEN"} (a token of another generation: it buys until it expires, but is
--          not counted and its used mark is ignored); {"NOROOM"} (no state);
--          error "ERR SKARG <what>".
-- Counts: a set on a position the advance has not judged yet counts it used, and enters it
-- in uselog (zset: position -> the Redis time from which a stock reading shows its deduct):
-- first now + bound_ms (the front sends no deduct later than its request deadline), then,
-- on done (the purchase was answered: its deduct, if any, has applied), the time of the
-- done. The advance counts a use against the stock only once a reading taken after that
-- time is accepted: a reading taken between the used bit and the deduct (the deduct comes
-- after the bit) still shows the unit, so it must not admit a position for it. A clear
-- takes the count back and drops the entry (a position already judged moves from used to
-- expired).
if #KEYS ~= 4 or not q_keys_ok(KEYS, 4) then return argerr("expected state used gone uselog of one room") end
if #ARGV ~= 5 then return argerr("expected 5 args") end
if not string.find(ARGV[1], "^[0-9a-f]+$") or #ARGV[1] > 16 then return argerr("generation") end
if not is_uint(ARGV[2], 12) or ARGV[2] == "0" then return argerr("position") end
if ARGV[3] ~= "set" and ARGV[3] ~= "clear" and ARGV[3] ~= "done" then return argerr("op") end
if not is_uint(ARGV[4], 15) then return argerr("expire_at_ms") end
if not is_uint(ARGV[5], 9) then return argerr("bound_ms") end
local st = redis.call("HMGET", KEYS[1], "generation", "expupto")
if not st[1] then return { "NOROOM" } end
if st[1] ~= ARGV[1] then return { "OTHERGEN" } end
local pos, judged = tonumber(ARGV[2]), tonumber(ARGV[2]) <= q_num(st[2])
if ARGV[3] == "set" then
  if redis.call("GETBIT", KEYS[3], pos) == 1 or redis.call("GETBIT", KEYS[2], pos) == 1 then
    return { "USED" }
  end
  redis.call("SETBIT", KEYS[2], pos, 1)
  if not judged then
    redis.call("HINCRBY", KEYS[1], "used", 1)
    redis.call("ZADD", KEYS[4], redis_now_ms() + tonumber(ARGV[5]), ARGV[2])
    expire_keys({ KEYS[2], KEYS[4] }, ARGV[4])
  else
    expire_keys({ KEYS[2] }, ARGV[4])
  end
  return { "OK" }
end
if ARGV[3] == "done" then
  local at, now = tonumber(redis.call("ZSCORE", KEYS[4], ARGV[2])), redis_now_ms()
  if at and at > now then redis.call("ZADD", KEYS[4], now, ARGV[2]) end
  return { "OK" }
end
redis.call("ZREM", KEYS[4], ARGV[2])
if redis.call("GETBIT", KEYS[2], pos) == 0 then return { "OK" } end
redis.call("SETBIT", KEYS[2], pos, 0)
redis.call("HINCRBY", KEYS[1], "used", -1)
if judged then redis.call("HINCRBY", KEYS[1], "expired", 1) end
return { "OK" }
