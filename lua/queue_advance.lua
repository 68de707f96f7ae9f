-- lib: validate expiry queue
-- queue_advance.lua: move the waiting room's line (DESIGN.md 18 "The window"); any front
-- may call it (a tick of <= 250 ms); atomic on the room's keys, so two fronts never admit
-- past the window of the reading they used.
-- KEYS: state pre post used gone ticks uselog of one room ({q:ID})
-- ARGV: units readTime_ms ttl_ms overbook_pct rate begin_ms end_ms expire_at_ms
--       unitsHeld heldUntil_ms closed(0|1)   (unitsHeld "" = no DB reading this tick)
-- Replies: {"OK", now, generation, upTo, live, window, members, expired, used, admitted_now,
--           closed, unitsLeft, begun, npre, unitsHeld, heldUntil} (the room state a front
--           answers polls from) or {"NOROOM"} (no state: nobody joined yet);
--          error "ERR SKARG <what>".
-- Rules: a stock reading older than the last accepted (readTime) is ignored (the newest
-- wins, by Redis time); a use (queue_use.lua) counts against the window only once the
-- accepted reading was taken after its deduct is known applied (uselog: the time of its
-- "done", at the latest its set + the front's deadline), so a reading that does not show
-- a purchase's deduct yet never admits a position for it; expired = admitted, past admission time + ttl, never used (judged
-- per tick of admission, in order; used and gone positions excluded); live = upTo - used -
-- expired <= window = ceil(unitsLeft x overbook / 100); at most `rate` admissions a second
-- (a one-second bucket) when rate > 0; nothing is admitted before `begun`, after the end
-- or once closed. `closed` is set once and never cleared.
if #KEYS ~= 7 or not q_keys_ok(KEYS, 7) then return argerr("expected the 7 keys of one room") end
if #ARGV ~= 11 then return argerr("expected 11 args") end
for i = 1, 8 do if not is_uint(ARGV[i], 15) then return argerr("arg " .. i) end end
if ARGV[9] ~= "" and (not is_uint(ARGV[9], 15) or not is_uint(ARGV[10], 15)) then
  return argerr("held")
end
if ARGV[11] ~= "0" and ARGV[11] ~= "1" then return argerr("closed") end
local k_state, k_ticks = KEYS[1], KEYS[6]
local units, read_time = tonumber(ARGV[1]), tonumber(ARGV[2])
local ttl, pct, rate = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local begin_ms, end_ms, e = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local now = redis_now_ms()
if redis.call("EXISTS", k_state) == 0 then return { "NOROOM" } end
local f = function(n) return string.format("%d", n) end
local st = redis.call("HMGET", k_state, "generation", "begun", "seq", "upto", "used", "expired",
                      "expupto", "unitsLeft", "readTime", "closed", "rateAt", "drawUntil")
local begun = st[2] == "1"
-- a redrawn generation (queue_join.lua) begins once its draw is over
if not begun and now >= begin_ms and now >= q_num(st[12]) then
  begun = true
  -- the pre-queue freezes: its size is kept with begun (lib/queue.lua q_npre)
  redis.call("HSET", k_state, "begun", "1", "npre", f(redis.call("ZCARD", KEYS[2])))
end
-- the newest stock reading wins
local left = tonumber(st[8]) or -1
if read_time > q_num(st[9]) then
  left = units
  redis.call("HSET", k_state, "unitsLeft", f(units), "readTime", f(read_time))
end
if ARGV[9] ~= "" then redis.call("HSET", k_state, "unitsHeld", ARGV[9], "heldUntil", ARGV[10]) end
local closed = st[10] == "1"
if ARGV[11] == "1" and not closed then
  closed = true
  redis.call("HSET", k_state, "closed", "1")
end
-- judge expiry, tick by tick in admission order
local upto, used, expired, expupto = q_num(st[4]), q_num(st[5]), q_num(st[6]), q_num(st[7])
local x = expupto
local ticks = redis.call("ZRANGE", k_ticks, 0, 63)
for _, m in ipairs(ticks) do
  local u, ts = string.match(m, "^(%d+):(%d+)$")
  if not u or tonumber(ts) + ttl > now then break end
  x = tonumber(u)
end
if x > expupto then
  local n = x - expupto
  local nu = redis.call("BITCOUNT", KEYS[4], expupto + 1, x, "BIT")
  local ng = redis.call("BITCOUNT", KEYS[5], expupto + 1, x, "BIT")
  expired = expired + n - nu - ng
  redis.call("ZREMRANGEBYSCORE", k_ticks, "-inf", x)
  redis.call("HSET", k_state, "expired", f(expired), "expupto", f(x))
end
-- admit
local members = 0
if begun then members = redis.call("ZCARD", KEYS[2]) + q_num(st[3]) end
-- uses newer than the accepted reading: not yet seen in its units
local read_at = math.max(q_num(st[9]), (read_time > q_num(st[9])) and read_time or 0)
redis.call("ZREMRANGEBYSCORE", KEYS[7], "-inf", "(" .. f(read_at))
local pending = redis.call("ZCARD", KEYS[7])
local live = upto - (used - pending) - expired
local window = 0
if left > 0 then window = math.floor((left * pct + 99) / 100) end
local n = math.min(window - live, members - upto)
if not begun or closed or now >= end_ms then n = 0 end
if n > 0 and rate > 0 then
  local base = math.max(q_num(st[11]), now - 1000)
  local allow = math.floor((now - base) * rate / 1000)
  if allow < n then n = allow end
  if n > 0 then
    redis.call("HSET", k_state, "rateAt", f(base + math.ceil(n * 1000 / rate)))
  end
end
live = upto - used - expired
if n > 0 then
  upto = upto + n
  live = live + n
  redis.call("HSET", k_state, "upto", f(upto))
  redis.call("ZADD", k_ticks, upto, f(upto) .. ":" .. f(now))
  expire_keys({ k_state, k_ticks }, e)
else
  n = 0
end
local fx = redis.call("HMGET", k_state, "unitsHeld", "heldUntil")
return { "OK", f(now), st[1] or "", f(upto), f(live), f(window), f(members), f(expired),
         f(used), f(n), closed and "1" or "0", f(left), begun and "1" or "0",
         f(redis.call("ZCARD", KEYS[2])), f(q_num(fx[1])), f(q_num(fx[2])) }
