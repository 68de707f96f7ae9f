-- bench/spread.lua: wrk script for bench/spread.sh. Every request is a purchase by a
-- distinct user; with several vouchers (BENCH_VOUCHERS="id1,id2,...") request k goes to
-- voucher k mod n, so each voucher gets the same share of the load.
-- Environment: BENCH_VOUCHERS (comma-separated ids), BENCH_USER_BASE (first user id).
local list = os.getenv("BENCH_VOUCHERS") or "1"
local base = tonumber(os.getenv("BENCH_USER_BASE") or "1000000000")
local threads = {}
local counter = 0
local heads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  for v in string.gmatch(list, "[0-9]+") do
    table.insert(heads, "POST /api/v1/vouchers/" .. v .. "/seckill HTTP/1.1\r\nHost: " ..
                 wrk.host .. "\r\nX-User-Id: ")
  end
  first = base + tid * 100000000
end

function request()
  counter = counter + 1
  -- user ids below 1e14: tostring prints every digit (a canonical decimal string)
  return heads[(counter % #heads) + 1] .. tostring(first + counter) .. "\r\n\r\n"
end

function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format("front_requests=%d front_non2xx=%d front_socket_errors=%d\n",
    summary.requests, summary.errors.status or 0,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("front_rate=%.0f\n", summary.requests / secs))
  io.write(string.format("front_p50_ms=%.2f front_p99_ms=%.2f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
