-- lib: validate expiry queue
-- queue_join.lua: join the waiting room (DESIGN.md 18), one membership per identity.
-- KEYS: state pre post used gone ticks of one room ({q:ID})
-- ARGV: userId begin_ms end_ms open_ms prekey newgen expire_at_ms ttl_ms rejoin_used(0|1)
--       redraw_ms
--   prekey: the caller's secret random key, a distinct integer < 2^52 drawn from the OS
--   CSPRNG; newgen: the generation a room created now gets (1..16 hex digits);
--   rejoin_used 1: the caller found the member's purchase FAILED, CANCELLED or CLOSED.
--   redraw_ms: > 0 when the caller knows the room had a generation before (its state was
--   lost): a state created now, at or after begin, records drawUntil = now + redraw_ms and
--   the joins until then are drawn at random like a pre-queue (DESIGN.md 18 "Outage").
-- Replies: the view of lib/queue.lua with tag "MEMBER" or "REJOINED"; "NOTOPEN"/"ENDED"/
--   "CLOSED" (view without member); {"REDRAW"} when prekey is taken (nothing written but
--   possibly the new room's state: draw again); error "ERR SKARG <what>".
-- Rules: "begun" is decided here by Redis TIME: the first call that sees TIME >= begin sets
-- it (TIME >= drawUntil too, in a redrawn generation), and no pre-queue key is written
-- once it is set, even if TIME goes back. A member
-- whose admission expired (or whose purchase ended, rejoin_used) gets a new arrival
-- sequence at the end of the line; its old position is marked gone (and counted expired
-- now if the advance has not judged it yet). A repeat join otherwise changes nothing.
-- Cost (DESIGN.md 18 "Polling costs little" budgets): TIME and one HMGET of the state serve
-- the whole join and its view; a new member after begin is one ZADD NX and one HSET (and a
-- ZSCORE in pre when there is a pre-queue); pre and post get E only when the write creates
-- them or E is not the one the state records (xpre, xpost; DESIGN.md 4).
if #KEYS ~= 6 or not q_keys_ok(KEYS, 6) then return argerr("expected the 6 keys of one room") end
if #ARGV ~= 10 then return argerr("expected 10 args") end
local user = ARGV[1]
if not is_id(user) then return argerr("userId") end
for i = 2, 4 do if not is_uint(ARGV[i], 15) then return argerr("times") end end
if not is_uint(ARGV[5], 16) or tonumber(ARGV[5]) >= 4503599627370496 then return argerr("prekey") end
if not string.find(ARGV[6], "^[0-9a-f]+$") or #ARGV[6] > 16 then return argerr("newgen") end
if not is_uint(ARGV[7], 15) or not is_uint(ARGV[8], 9) then return argerr("expiry") end
if ARGV[9] ~= "0" and ARGV[9] ~= "1" then return argerr("rejoin_used") end
if not is_uint(ARGV[10], 9) then return argerr("redraw_ms") end
local begin_ms, end_ms, open_ms = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local e, ttl = ARGV[7], tonumber(ARGV[8])
local f = function(n) return string.format("%d", n) end
local now = redis_now_ms()
local k_state = KEYS[1]
-- one read of the state serves the whole join and its view (q_state's fields)
local st = q_state(k_state)
if now >= end_ms then return q_view("ENDED", now, st, q_npre(KEYS, st), -1, 0, -1) end
if now < open_ms then return q_view("NOTOPEN", now, st, q_npre(KEYS, st), -1, 0, -1) end
if not st[1] then
  redis.call("HSET", k_state, "generation", ARGV[6], "begun", "0", "seq", "0", "upto", "0",
             "used", "0", "expired", "0", "expupto", "0", "unitsLeft", "-1", "unitsHeld", "0",
             "heldUntil", "0", "readTime", "0", "closed", "0", "rateAt", "0",
             "genAt", f(now))
  st = { ARGV[6], "0", "0", "0", "-1", "0", "0", "0", "0", false, false, false, false }
  -- a generation that replaces a lost one after begin: its first joins are drawn
  if now >= begin_ms and tonumber(ARGV[10]) > 0 then
    st[11] = f(now + tonumber(ARGV[10]))
    redis.call("HSET", k_state, "drawUntil", st[11])
  end
  expire_keys({ k_state }, e)
end
if st[8] == "1" then return q_view("CLOSED", now, st, q_npre(KEYS, st), -1, 0, -1) end
local begun = st[2] == "1"
local npre
if not begun and now >= begin_ms and now >= q_num(st[11]) then
  -- the pre-queue freezes: its size is kept with begun
  npre = redis.call("ZCARD", KEYS[2])
  st[2], st[10], begun = "1", f(npre), true
  redis.call("HSET", k_state, "begun", "1", "npre", st[10])
else
  npre = q_npre(KEYS, st)
end
local seq = q_num(st[3])
local pos, added = nil, false
if begun then
  -- not in the (frozen) pre-queue: the next place, unless already in the line (NX keeps
  -- a member's place), so a new member costs one ZADD and no lookup in post; a
  -- pre-queue member's rank (O(log n)) is read only when it has no later place
  local inpre = npre > 0 and redis.call("ZSCORE", KEYS[2], user)
  local s = false
  if not inpre then
    if redis.call("ZADD", KEYS[3], "NX", f(seq + 1), user) == 1 then
      added = true
    else
      s = redis.call("ZSCORE", KEYS[3], user)
    end
  elseif seq > 0 then
    s = redis.call("ZSCORE", KEYS[3], user)
  end
  if s then
    pos = npre + tonumber(s)
  elseif not added then
    pos = redis.call("ZRANK", KEYS[2], user) + 1
  end
else
  pos = q_position(KEYS, user, st, npre)
end
local tag = "MEMBER"
if pos ~= nil then
  local upto, expupto = q_num(st[4]), q_num(st[9])
  if pos == 0 or pos > upto then return q_view(tag, now, st, npre, pos, 0, -1) end
  local used = redis.call("GETBIT", KEYS[4], pos) == 1
  local at = nil
  if pos > expupto then at = q_admit_time(KEYS[6], pos) end
  local expired = not used and (at == nil or at + ttl <= now)
  if not expired and not (used and ARGV[9] == "1") then
    return q_view(tag, now, st, npre, pos, used and 1 or 0, at or -1)
  end
  if expired then
    redis.call("SETBIT", KEYS[5], pos, 1)
    expire_keys({ KEYS[5] }, e)
    if pos > expupto then redis.call("HINCRBY", k_state, "expired", 1) end
  end
  tag = "REJOINED"
end
if begun then
  seq = seq + 1
  st[3] = f(seq)
  if not added then redis.call("ZADD", KEYS[3], st[3], user) end
  -- post got E when its first member made it (seq 1), again when E changes
  if seq == 1 or st[13] ~= e then
    redis.call("HSET", k_state, "seq", st[3], "xpost", e)
    expire_keys({ KEYS[3] }, e)
  else
    redis.call("HSET", k_state, "seq", st[3])
  end
  return q_view(tag, now, st, npre, npre + seq, 0, -1)
end
if redis.call("ZCOUNT", KEYS[2], ARGV[5], ARGV[5]) > 0 then return { "REDRAW" } end
redis.call("ZADD", KEYS[2], ARGV[5], user)
npre = npre + 1
-- pre got E when its first member made it, again when E changes
if npre == 1 or st[12] ~= e then
  redis.call("HSET", k_state, "xpre", e)
  expire_keys({ KEYS[2] }, e)
end
return q_view(tag, now, st, npre, 0, 0, -1)
