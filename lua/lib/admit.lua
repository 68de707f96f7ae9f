-- lua/lib/admit.lua: what deduct.lua and take.lua share (DESIGN.md 4 "Cost of an
-- admission"): the checks of the purchase arguments without a pattern or a tonumber per
-- id, the bucket keys, the sale checks on a bucket's meta. Not a script of its own:
-- cmake/embed_lua.cmake puts it in front of the scripts that name it on their "-- lib:"
-- line. Written for the cost of the Lua VM inside Redis (bench/admission_cost.sh,
-- callgrind): every function here is a closure created on each call, each call of a
-- library function (string.*, tonumber) costs ~600-2,000 instructions and each
-- redis.call ~8,000, so the checks are few calls over many bytes.

-- The purchase arguments: ids canonical decimal 1..2^63-1 (DESIGN.md 3) and ts (the
-- snowflake timestamp of traceId, ms) within +-5 s of @now_ms (Redis TIME). Lengths
-- first (1-19 bytes; ts 1-15), then one byte-class scan of all five at once (digits, no
-- leading zero), then, only for a 19-digit id starting with 9 (a snowflake id does so
-- after 2090), the bound 2^63-1 digit by digit (no locale-dependent string compare).
-- Returns nil, or what is wrong (for "ERR SKARG <what>").
local function purchase_bad(tid, oid, uid, vid, ts, now_ms)
  local lt, lo, lu, lv, ls = #tid, #oid, #uid, #vid, #ts
  if lt == 0 or lt > 19 or lo == 0 or lo > 19 or lu == 0 or lu > 19 or lv == 0 or lv > 19 then
    return "ids: 1-19 digits"
  end
  if ls == 0 or ls > 15 then return "ts" end
  if not string.find(tid .. ":" .. oid .. ":" .. uid .. ":" .. vid .. ":" .. ts,
                     "^[1-9]%d*:[1-9]%d*:[1-9]%d*:[1-9]%d*:[1-9]%d*$") then
    return "ids and ts: canonical decimal"
  end
  if lt == 19 or lo == 19 or lu == 19 or lv == 19 then
    local function above(s) -- a closure made only on this path
      if #s ~= 19 or string.byte(s) ~= 57 then return false end
      local m = "9223372036854775807"
      for i = 2, 19 do
        local a, b = string.byte(s, i), string.byte(m, i)
        if a ~= b then return a > b end
      end
      return false
    end
    if above(tid) or above(oid) or above(uid) or above(vid) then return "ids: above 2^63-1" end
  end
  local d = tonumber(ts) - now_ms -- ts is no id: a time in ms, exact as a double
  if d > 5000 or d < -5000 then return "ts: more than 5 s from Redis TIME" end
  return nil
end

-- "<prefix>:{v:<vid>:<b>}" of the bucket meta key @k_meta ("<that>:meta") and its
-- bucket as a string, or nil when it is not a bucket meta key of voucher @vid. One
-- anchored match; the bucket is checked 0..15 by the caller's tonumber.
local function bucket_base(k_meta, vid)
  local base, v, bs = string.match(k_meta, "^(.*{v:(%d+):(%d%d?)}):meta$")
  if v ~= vid then return nil end
  return base, bs
end

-- The sale checks on one bucket's meta (HMGET begin_ms end_ms status buckets), in the
-- order of DESIGN.md 4: meta missing or without status 10004, paused 10013, begin/end
-- unreadable 10004, buckets unreadable 10004, window by Redis TIME (10002 before
-- begin_ms, 10003 after end_ms), status 2 10011, 3 10012, any other but 1 10004.
-- Returns code, or nil, N.
local function sale_check(meta, now_ms)
  local status = meta[3]
  if not status then return 10004 end
  if status == "4" then return 10013 end
  local b, e = tonumber(meta[1]), tonumber(meta[2])
  if not b or not e then return 10004 end
  local n = 1
  if meta[4] and meta[4] ~= "1" then
    n = tonumber(meta[4])
    if not n or n < 1 or n > 16 or n % 1 ~= 0 then return 10004 end
  end
  if now_ms < b then return 10002 end
  if now_ms > e then return 10003 end
  if status == "1" then return nil, n end
  if status == "2" then return 10011 end
  if status == "3" then return 10012 end
  return 10004
end
