-- bench/front.lua: wrk script for bench/front.sh. Every request is a purchase by a
-- distinct user (so it measures the admitting path: deduct + publish + delivery report).
-- Environment: BENCH_VOUCHER (voucher id), BENCH_USER_BASE (first user id, canonical);
-- BENCH_VOUCHERS="id1,id2,..." instead: request k goes to voucher k mod n, each voucher
-- getting the same share (bench/spread.sh).
local list = os.getenv("BENCH_VOUCHERS") or os.getenv("BENCH_VOUCHER") or "1"
local heads = {}
local base = tonumber(os.getenv("BENCH_USER_BASE") or "1000000000")
local threads = {}
local counter = 0

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  -- The request text is built by concatenation (cheaper than wrk.format per request,
  -- which matters: wrk shares the two cores with the front, Redis and the broker).
  for v in string.gmatch(list, "[0-9]+") do
    table.insert(heads, "POST /api/v1/vouchers/" .. v .. "/seckill HTTP/1.1\r\nHost: " ..
                 wrk.host .. "\r\nX-User-Id: ")
  end
  first = base + tid * 100000000
end

function request()
  counter = counter + 1
  -- user ids: base + tid * 1e8 + counter; kept below 1e14 so tostring prints every
  -- digit (a canonical decimal string, no exponent)
  return heads[(counter % #heads) + 1] .. tostring(first + counter) .. "\r\n\r\n"
end

function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  local non2xx = summary.errors.status or 0
  io.write(string.format("front_requests=%d front_non2xx=%d front_socket_errors=%d\n",
    summary.requests, non2xx,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("front_rate=%.0f\n", summary.requests / secs))
  io.write(string.format("front_p50_ms=%.2f front_p99_ms=%.2f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
