-- bench/queue_poll.lua: wrk script for bench/queue.sh, the waiting room's poll
-- (GET /api/v1/vouchers/{id}/queue, DESIGN.md 18) by BENCH_MEMBERS members whose user ids
-- are BENCH_USER_BASE + 0 .. + BENCH_MEMBERS - 1; wrk thread t polls members t, t+T, ...
-- and starts over (the crowd of bench/wrk_common.lua). The same script drives
-- bench/const409 for the ratio. Like the buyer page, it keeps each member's position
-- ticket (the "ticket" of an answer; its user id is the ticket's fifth field) and sends it
-- as X-Queue-Ticket on that member's next polls, so a waiting member's poll is answered
-- from the front's room state without Redis (DESIGN.md 18 "Polling costs little"); a
-- member's first poll reads Redis.
-- Environment: BENCH_VOUCHER, BENCH_USER_BASE (default 1000000000000), BENCH_MEMBERS,
-- BENCH_THREADS (the -t given to wrk).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk_common.lua")
wrk_crowd{
  method = "GET",
  path = "/api/v1/vouchers/" .. (os.getenv("BENCH_VOUCHER") or "1") .. "/queue",
  base = tonumber(os.getenv("BENCH_USER_BASE") or "1000000000000"),
  n = tonumber(os.getenv("BENCH_MEMBERS") or "100000"),
}

local crowd_request = request
local tickets = {}

function request()
  local req = crowd_request()
  local t = tickets[string.match(req, "X%-User%-Id: (%d+)")]
  if t then return string.sub(req, 1, -3) .. "X-Queue-Ticket: " .. t .. "\r\n\r\n" end
  return req
end

function response(status, headers, body)
  if status ~= 200 or not body then return end
  local t = string.match(body, '"ticket":"(t1%.[%w_%-%.]+)"')
  if t then
    local u = string.match(t, "^t1%.[^.]+%.[^.]+%.[^.]+%.(%d+)%.")
    if u then tickets[u] = t end
  end
end
