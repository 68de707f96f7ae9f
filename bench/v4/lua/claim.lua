-- claim.lua: re-drive and consume bookkeeping of a trace (DESIGN.md 4, 7, 8; calling
-- convention in sk/scripts.h). The claim record is one JSON field T:c of the trace hash:
--   {"redrives":N,"failed":N,"consumed":0|1,"partition":"P","offset":"O"}
-- (partition and offset are strings, "" until a re-drive was sent; offsets are int64).
-- KEYS: meta trace
-- ARGV: op expire_extra_ms traceId... :
--   claim T              (reconciler, before a re-drive) redrives + 1
--   failed T             (reconciler) failed + 1; partition and offset reset to ""
--   sent T P O           (reconciler) partition and offset of the last re-drive
--   consume T1 T2 ...    (consumer, before its transaction) consumed = 1
-- Replies: claim/failed/sent: {"OK", redrives, failed, consumed, partition, offset}
--          or {"RESTORED"} when T:r exists (nothing written);
--          consume: {"OK", r1, r2, ...}, ri = 1 if Ti is fenced (T:r; Ti untouched) else 0;
--          error "ERR SKARG <what>" for an invalid argument (nothing written).
-- Every call that writes sets the trace key's expiry (E = end_ms + extra, or now + extra
-- without meta). Ids stay strings. Redis 7.0, Lua 5.1.
-- is_id, is_uint and argerr come from lua/lib/validate.lua (prepended at build time).

-- int64 offset >= 0 as a canonical decimal string
local function is_offset(s)
  return s == "0" or is_id(s)
end

if #KEYS ~= 2 then return argerr("expected 2 keys (meta trace)") end
local op = ARGV[1]
if op ~= "claim" and op ~= "failed" and op ~= "sent" and op ~= "consume" then
  return argerr("op")
end
if not is_uint(ARGV[2], 15) then return argerr("expire_extra_ms") end
local extra_ms = tonumber(ARGV[2])
if op == "claim" or op == "failed" then
  if #ARGV ~= 3 then return argerr("expected: " .. op .. " expire_extra_ms traceId") end
elseif op == "sent" then
  if #ARGV ~= 5 then return argerr("expected: sent expire_extra_ms traceId partition offset") end
  if not is_uint(ARGV[4], 9) then return argerr("partition") end
  if not is_offset(ARGV[5]) then return argerr("offset") end
else
  if #ARGV < 3 then return argerr("expected: consume expire_extra_ms traceId...") end
end
for i = 3, (op == "sent" and 3 or #ARGV) do
  if not is_id(ARGV[i]) then return argerr("traceId") end
end
local k_meta, k_trace = KEYS[1], KEYS[2]

local function parse(rec)
  local c = { redrives = 0, failed = 0, consumed = 0, partition = "", offset = "" }
  if rec then
    c.redrives = tonumber(string.match(rec, '"redrives":(%d+)') or "0")
    c.failed = tonumber(string.match(rec, '"failed":(%d+)') or "0")
    c.consumed = tonumber(string.match(rec, '"consumed":(%d+)') or "0")
    c.partition = string.match(rec, '"partition":"(%d*)"') or ""
    c.offset = string.match(rec, '"offset":"(%d*)"') or ""
  end
  return c
end

local function format(c)
  return '{"redrives":' .. string.format("%d", c.redrives) ..
    ',"failed":' .. string.format("%d", c.failed) ..
    ',"consumed":' .. string.format("%d", c.consumed) ..
    ',"partition":"' .. c.partition .. '","offset":"' .. c.offset .. '"}'
end

local function expire()
  expire_keys({k_trace}, expiry_at(k_meta, extra_ms, redis_now_ms()))
end

if op == "consume" then
  local res = {"OK"}
  local wrote = false
  for i = 3, #ARGV do
    local tid = ARGV[i]
    if redis.call("HEXISTS", k_trace, tid .. ":r") == 1 then
      table.insert(res, 1)
    else
      local c = parse(redis.call("HGET", k_trace, tid .. ":c"))
      c.consumed = 1
      redis.call("HSET", k_trace, tid .. ":c", format(c))
      wrote = true
      table.insert(res, 0)
    end
  end
  if wrote then expire() end
  return res
end

local tid = ARGV[3]
if redis.call("HEXISTS", k_trace, tid .. ":r") == 1 then return {"RESTORED"} end
local c = parse(redis.call("HGET", k_trace, tid .. ":c"))
if op == "claim" then
  c.redrives = c.redrives + 1
elseif op == "failed" then
  -- The counted re-drive is settled: forget its position, so a later re-drive that is
  -- not PERSISTED leaves no stale (already passed) offset behind to be counted again.
  c.failed = c.failed + 1
  c.partition = ""
  c.offset = ""
else
  c.partition = ARGV[4]
  c.offset = ARGV[5]
end
redis.call("HSET", k_trace, tid .. ":c", format(c))
expire()
return {"OK", c.redrives, c.failed, c.consumed, c.partition, c.offset}
