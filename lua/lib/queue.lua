-- lua/lib/queue.lua: the waiting room's shared reads (DESIGN.md 4 `{q:ID}` keys, 18). Not
-- a script of its own: cmake/embed_lua.cmake puts it in front of the queue_*.lua scripts
-- that name it (after validate.lua and expiry.lua, whose is_uint and redis_now_ms it uses).
-- Every room script takes the six keys of one room, one hash tag `{q:ID}` (one slot):
--   KEYS[1] state  KEYS[2] pre  KEYS[3] post  KEYS[4] used  KEYS[5] gone  KEYS[6] ticks
-- Positions: a pre-queue member's is its rank + 1 once `begun` is set (the pre-queue is
-- frozen then); a later member's is |pre| + s, s its arrival sequence (score in post).
-- ticks: score = admitted-up-to after an advance, member = "upTo:redisTimeMs".
-- queue_advance.lua and queue_use.lua also take KEYS[7] uselog (a zset of the used
-- positions whose deduct an accepted stock reading may not show yet: score = the Redis
-- time from which a reading shows it; trimmed by every advance).

-- the six keys must share the room's tag {q:ID}, each key's first '{' (the one a Cluster
-- hashes); false if not. Plain finds after the first key's pattern (the cost of a call).
local function q_keys_ok(keys, n)
  local at, to = string.find(keys[1], "{q:%d+}")
  if not at or string.find(keys[1], "{", 1, true) ~= at then return false end
  local tag = string.sub(keys[1], at, to)
  for i = 2, n do
    local b = string.find(keys[i], "{", 1, true)
    if not b or string.sub(keys[i], b, b + #tag - 1) ~= tag then return false end
  end
  return true
end

-- a number field of the state hash (0 if missing)
local function q_num(v)
  if v == false or v == nil then return 0 end
  return tonumber(v) or 0
end

-- The room's state in one read (HMGET), the fields by index:
--  1 generation  2 begun  3 seq  4 upto  5 unitsLeft  6 unitsHeld  7 heldUntil  8 closed
--  9 expupto  10 npre  11 drawUntil  12 xpre  13 xpost
-- (npre: |pre|, written with begun = 1, when the pre-queue freezes; xpre / xpost: the
-- expiry E last given to pre / post, so a join spends no command on it while E holds).
-- No generation: no state (every state is created with one).
local function q_state(k_state)
  return redis.call("HMGET", k_state, "generation", "begun", "seq", "upto", "unitsLeft",
                    "unitsHeld", "heldUntil", "closed", "expupto", "npre", "drawUntil",
                    "xpre", "xpost")
end

-- The size of the pre-queue: frozen once begun, so read from the state then (ZCARD for a
-- state begun without npre, and before begin, while the pre-queue grows).
local function q_npre(keys, st)
  if st[2] == "1" and st[10] then return tonumber(st[10]) end
  return redis.call("ZCARD", keys[2])
end

-- the admission time of position pos: the first tick whose up-to covers it. Only for a
-- position above expUpTo: the ticks up to it are pruned, and a later tick would answer.
local function q_admit_time(k_ticks, pos)
  local t = redis.call("ZRANGEBYSCORE", k_ticks, pos, "+inf", "LIMIT", 0, 1)
  if #t == 0 then return nil end
  local _, ts = string.match(t[1], "^(%d+):(%d+)$")
  return tonumber(ts)
end

-- The member's place: position (0 = none yet, before begin), or nil if not a member. st:
-- the state (q_state), npre: q_npre. A post-begin place wins over a pre-queue rank (a
-- pre-queue member who joined again). O(1) lookups but the rank (O(log n)); an empty
-- line (seq 0, npre 0) is not read.
local function q_position(keys, user, st, npre)
  if q_num(st[3]) > 0 then
    local s = redis.call("ZSCORE", keys[3], user)
    if s then return npre + tonumber(s) end
  end
  if npre == 0 then return nil end
  if st[2] == "1" then
    local r = redis.call("ZRANK", keys[2], user)
    if r then return r + 1 end
    return nil
  end
  if redis.call("ZSCORE", keys[2], user) then return 0 end
  return nil
end

-- An admitted position's (0 < pos <= upTo) used bit (0|1) and admission time (-1 when its
-- tick was pruned: judged by an advance, expired unless used); 0, -1 for any other.
local function q_admitted(keys, st, pos)
  if pos <= 0 or pos > q_num(st[4]) then return 0, -1 end
  local used = redis.call("GETBIT", keys[4], pos)
  local at = nil
  if pos > q_num(st[9]) then at = q_admit_time(keys[6], pos) end
  return used, at or -1
end

-- The view the front turns into a member state (sk/queue_room.h; sk_qroom_poll builds the
-- same view in C from plain reads, so a change here is made there too), built from the state st
-- (q_state, as the script left it) without a command:
-- {tag, now, generation, begun, npre, seq, upTo, position, used, admitTime, unitsLeft,
--  unitsHeld, heldUntil, closed, expUpTo} (numbers as integers, or as the state's decimal
-- strings; -1 = none). Integers < 2^53 (times in ms, counts) reply exactly.
local function q_view(tag, now, st, npre, pos, used, at)
  return { tag, now, st[1] or "", st[2] == "1" and 1 or 0, npre,
           st[3] or "0", st[4] or "0", pos, used, at,
           st[5] or "-1", st[6] or "0", st[7] or "0", st[8] == "1" and 1 or 0,
           st[9] or "0" }
end
