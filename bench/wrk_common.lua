-- bench/wrk_common.lua: the crowd of the wrk scripts (bench/sale.lua, bench/queue_poll.lua),
-- loaded by them with dofile: N distinct users (ids USER_BASE + 0 .. + N - 1, or line i of
-- a JWT file) asking one path again and again; wrk thread t asks for users t, t+T, t+2T, ...
-- and starts over when it has asked them all; the summary lines the bench shell scripts
-- read (requests=, rate=, p50_ms=). No response() callback: wrk then skips the Lua call per
-- answer; the answers are counted from the server's side.
-- wrk_crowd{ method = "GET", path = "/api/...", base = first user id, n = users,
--            tokens_file = optional file of JWTs (`sk-mint-jwt sign --count`, line i for
--            user base + i - 1): each request then carries `Authorization: Bearer`
--            instead of X-User-Id (DESIGN.md 15) }
-- Environment: BENCH_THREADS (the -t given to wrk).
function wrk_crowd(c)
  local nthreads = tonumber(os.getenv("BENCH_THREADS") or "2")
  local threads = {}
  local tokens = nil
  local head, nxt

  function setup(thread)
    thread:set("tid", #threads)
    table.insert(threads, thread)
  end

  function init(args)
    local who = "X-User-Id: "
    if c.tokens_file and c.tokens_file ~= "" then
      -- this thread's users only (u = tid, tid + T, ...): half the memory with 2 threads
      tokens = {}
      local i = 0
      for line in io.lines(c.tokens_file) do
        if i % nthreads == tid then tokens[i] = line end
        i = i + 1
      end
      if i < c.n then error("BENCH_TOKENS: " .. i .. " tokens for " .. c.n .. " users") end
      who = "Authorization: Bearer "
    end
    head = c.method .. " " .. c.path .. " HTTP/1.1\r\nHost: " .. wrk.host .. "\r\n" .. who
    nxt = tid
  end

  function request()
    local u = nxt
    nxt = nxt + nthreads
    if nxt >= c.n then nxt = tid end
    if tokens then
      -- wrk plays the gateway (a trusted proxy on loopback): it forwards each user's own
      -- address, as nginx does, so the front's per-client verification limit
      -- (SECKILL_JWT_VERIFY_RATE, DESIGN.md 15) keys each user apart, not all on 127.0.0.1.
      return head .. tokens[u] .. "\r\nX-Forwarded-For: 127." ..
             (math.floor(u / 65536) % 256) .. "." .. (math.floor(u / 256) % 256) .. "." ..
             (u % 256) .. "\r\n\r\n"
    end
    -- base + u stays below 1e14: tostring prints every digit (a canonical id string)
    return head .. tostring(c.base + u) .. "\r\n\r\n"
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
end
