-- bench/sale.lua: wrk script for bench/sale.sh, a realistic sale. BENCH_BUYERS distinct
-- buyers (default 100,000) ask for one voucher; wrk thread t asks for buyers t, t+T,
-- t+2T, ... and starts over when it has asked them all (a crowd that keeps pressing the
-- button: after the sell-out a buyer gets 10005, or 10006 if she bought).
-- Environment: BENCH_VOUCHER (voucher id), BENCH_USER_BASE (first user id, canonical),
-- BENCH_BUYERS, BENCH_THREADS (the -t given to wrk), BENCH_TOKENS (optional: a file of
-- JWTs, line i for buyer BENCH_USER_BASE + i - 1, from `sk-mint-jwt sign --count`; then
-- each request carries `Authorization: Bearer` instead of X-User-Id, DESIGN.md 15).
-- No response() callback: wrk then
-- skips the Lua call per answer; the answers are counted from the server's side.
local voucher = os.getenv("BENCH_VOUCHER") or "1"
local base = tonumber(os.getenv("BENCH_USER_BASE") or "1000000000")
local buyers = tonumber(os.getenv("BENCH_BUYERS") or "100000")
local nthreads = tonumber(os.getenv("BENCH_THREADS") or "2")
local tokens_file = os.getenv("BENCH_TOKENS")
local threads = {}
local tokens = nil

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  head = "POST /api/v1/vouchers/" .. voucher .. "/seckill HTTP/1.1\r\nHost: " ..
         wrk.host .. "\r\nX-User-Id: "
  if tokens_file and tokens_file ~= "" then
    -- this thread's buyers only (b = tid, tid + T, ...): half the memory with 2 threads
    tokens = {}
    local i = 0
    for line in io.lines(tokens_file) do
      if i % nthreads == tid then tokens[i] = line end
      i = i + 1
    end
    if i < buyers then error("BENCH_TOKENS: " .. i .. " tokens for " .. buyers .. " buyers") end
    head = "POST /api/v1/vouchers/" .. voucher .. "/seckill HTTP/1.1\r\nHost: " ..
           wrk.host .. "\r\nAuthorization: Bearer "
  end
  nxt = tid
end

function request()
  local b = nxt
  nxt = nxt + nthreads
  if nxt >= buyers then nxt = tid end
  if tokens then return head .. tokens[b] .. "\r\n\r\n" end
  -- base + b stays below 1e14: tostring prints every digit (a canonical id string)
  return head .. tostring(base + b) .. "\r\n\r\n"
end

function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format("requests=%d non2xx=%d socket_errors=%d\n",
    summary.requests, summary.errors.status or 0,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("rate=%.0f\n", summary.requests / secs))
  io.write(string.format("p50_ms=%.2f p99_ms=%.2f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
