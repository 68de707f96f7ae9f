-- lib: validate expiry queue
-- queue_poll.lua: one member's view of the waiting room (DESIGN.md 18), read only.
-- KEYS: state pre post used gone ticks of one room ({q:ID})
-- ARGV: userId
-- Replies: the view of lib/queue.lua with tag "MEMBER", "NOTMEMBER" (not in the room), or
--          "NOROOM" (no state: never joined, or the room's keys were lost);
--          error "ERR SKARG <what>" (invalid argument).
if #KEYS ~= 6 or not q_keys_ok(KEYS, 6) then return argerr("expected the 6 keys of one room") end
if #ARGV ~= 1 or not is_id(ARGV[1]) then return argerr("userId") end
local now = redis_now_ms()
-- one read of the state, then the member's place: TIME, HMGET and ZSCORE (a pre-queue
-- member: ZRANK too) for a waiting member; GETBIT and the tick for an admitted one
local st = q_state(KEYS[1])
if not st[1] then return q_view("NOROOM", now, st, redis.call("ZCARD", KEYS[2]), -1, 0, -1) end
local npre = q_npre(KEYS, st)
local pos = q_position(KEYS, ARGV[1], st, npre)
if pos == nil then return q_view("NOTMEMBER", now, st, npre, -1, 0, -1) end
local used, at = q_admitted(KEYS, st, pos)
return q_view("MEMBER", now, st, npre, pos, used, at)
