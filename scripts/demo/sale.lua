-- scripts/demo/sale.lua: the flash-sale crowd for scripts/demo.sh, as a wrk script.
--
-- Run with exactly ONE connection per wrk thread (wrk -tN -cN): then each thread's
-- requests and responses strictly alternate, so response() knows which buyer and
-- voucher it answers (wrk gives response() no handle on the request otherwise).
--
-- Configuration comes from the environment (wrk hands arguments to init() only):
--   SK_DEMO_OUT       directory for accepted-<thread>.tsv, done-<thread> and wrk.json
--   SK_DEMO_VOUCHERS  voucher ids, comma separated, the hot one first (decimal strings)
--   SK_DEMO_BUYERS    distinct buyers (default 20000)
--   SK_DEMO_THREADS   the -t given to wrk (buyers are split by thread)
--   SK_DEMO_HOT_PCT   percent of buyers on the first voucher (default 70); the rest
--                     are spread evenly over the others
--   SK_DEMO_TWICE_PCT percent of buyers who ask twice (default 10): their second ask
--                     is sent by the NEXT thread at about the same time, so the two
--                     asks of one user race each other on two connections
--   SK_DEMO_RETRY_PCT percent of buyers who, told "sold out" (10005), try once more
--                     (default 5)
--   SK_DEMO_MAX_503   times one ask is retried after a 503 (default 3); a 503 is
--                     retried at the end of the thread's queue (a crude Retry-After)
--   SK_DEMO_PACE_MS   pause of each connection between two asks (default 0: none);
--                     paces the crowd so a sale lasts long enough for an outage
--                     (run.sh --kill-redis)
--   SK_DEMO_TOKENS    a file of JWTs, line b (from 0) for buyer b (auth.sh, DESIGN.md 15):
--                     then every ask carries `Authorization: Bearer` instead of X-User-Id;
--                     each thread keeps the lines of its own buyers and of the previous
--                     thread's (their second asks)
--
-- Ids stay strings from end to end (DESIGN.md 2: no tonumber on ids). User ids are
-- 19-digit ids "1990653204" .. 9-digit buyer number, above 2^53 on purpose.
--
-- Every 202 (and every 200 CREATED of the DB-only path, DESIGN.md 12) is appended to
-- accepted-<thread>.tsv as
--   orderId \t traceId \t voucherId \t userId \t accept_ms \t attempt
-- (accept_ms = wall-clock ms when the answer arrived, CLOCK_REALTIME through LuaJIT ffi).
-- When a thread has nothing left to ask it writes done-<thread> and stops; the
-- driver sends wrk SIGINT once every thread is done (wrk otherwise sleeps the
-- whole -d). done() writes wrk.json: counts by status and code, accepted per
-- voucher, answers per 100 ms and code (sale.tl), wrk's latency percentiles (us) and
-- the sale's own wall-clock window.

local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } sk_demo_timespec;
int clock_gettime(int clk_id, sk_demo_timespec *tp);
]]
local ts = ffi.new("sk_demo_timespec")
local function now_ms()
        ffi.C.clock_gettime(0 --[[ CLOCK_REALTIME ]], ts)
        return tonumber(ts.tv_sec) * 1000 + math.floor(tonumber(ts.tv_nsec) / 1000000)
end

local function env_int(name, default)
        local v = os.getenv(name)
        if v == nil or v == "" then return default end
        local n = tonumber(v)
        if n == nil then error(name .. " is not a number: " .. v) end
        return math.floor(n)
end

local OUT = os.getenv("SK_DEMO_OUT") or "."

-- wrk paces a connection only when the script defines delay(): defined only when asked,
-- so an unpaced sale runs exactly as before.
local PACE_MS = env_int("SK_DEMO_PACE_MS", 0)
if PACE_MS > 0 then
        function delay()
                return PACE_MS
        end
end

-- ---------------------------------------------------------------- main state
local threads = {}

function setup(thread)
        table.insert(threads, thread)
        thread:set("tid", #threads)
end

-- ---------------------------------------------------------------- thread state
local vouchers, nbuyers, nthreads, hot_pct, twice_pct, retry_pct, max503
local queue, qhead, qtail, cur, outf   -- queue[qhead..qtail] (no holes: # is unreliable)
stopped = false          -- global: read by done()
counts = nil            -- globals: read by done() through thread:get()
sale_first_ms = 0
sale_last_ms = 0

local function split(s)
        local t = {}
        for part in string.gmatch(s or "", "[^,]+") do table.insert(t, part) end
        return t
end

local function user_of(b)
        return "1990653204" .. string.format("%09d", b)
end

-- Deterministic voucher choice for buyer b: hot_pct% on the first voucher.
local function voucher_of(b)
        local r = (b * 7919 + 13) % 100
        if #vouchers == 1 or r < hot_pct then return vouchers[1] end
        return vouchers[2 + (b % (#vouchers - 1))]
end

local function pct_hit(b, salt, pct)
        return ((b * 104729 + salt) % 100) < pct
end

local function push(item)
        qtail = qtail + 1
        queue[qtail] = item
end

local function bump(key)
        counts[key] = (counts[key] or 0) + 1
end

function init(args)
        vouchers  = split(os.getenv("SK_DEMO_VOUCHERS"))
        if #vouchers == 0 then error("SK_DEMO_VOUCHERS is empty") end
        nbuyers   = env_int("SK_DEMO_BUYERS", 20000)
        nthreads  = env_int("SK_DEMO_THREADS", 1)
        hot_pct   = env_int("SK_DEMO_HOT_PCT", 70)
        twice_pct = env_int("SK_DEMO_TWICE_PCT", 10)
        retry_pct = env_int("SK_DEMO_RETRY_PCT", 5)
        max503    = env_int("SK_DEMO_MAX_503", 3)
        -- Flat on purpose: wrk 4.1's thread:get() crashes copying nested tables.
        -- Keys: asks, answers, lost, second_asks, retries_503, retries_soldout,
        -- buyers, "status.<http status>", "code.<code>", "accepted.<voucherId>",
        -- "planned.<voucherId>" (distinct buyers of that voucher), "tl.<ms/100>.<code>"
        -- (answers in one 100 ms bin of wall clock, for the report's timeline).
        counts = { asks = 0, answers = 0, lost = 0, second_asks = 0, retries_503 = 0,
                   retries_soldout = 0, buyers = 0 }
        queue, qhead, qtail, cur, stopped = {}, 1, 0, nil, false
        verified = false

        -- This thread's buyers: b = tid-1, tid-1+T, ...  After each of them, the second
        -- ask of buyer b-1 (owned by the previous thread, asked by it at about now).
        local b = tid - 1
        while b < nbuyers do
                counts.buyers = counts.buyers + 1
                push({ user = user_of(b), voucher = voucher_of(b), b = b, attempt = 1, kind = "first" })
                bump("planned." .. voucher_of(b))
                local p = b - 1
                if nthreads > 1 and p >= 0 and pct_hit(p, 7, twice_pct) then
                        push({ user = user_of(p), voucher = voucher_of(p), b = p, attempt = 1, kind = "second" })
                        counts.second_asks = counts.second_asks + 1
                end
                b = b + nthreads
        end
        -- With one thread, the second asks go to the end of its own queue.
        if nthreads == 1 then
                for i = 0, nbuyers - 1 do
                        if pct_hit(i, 7, twice_pct) then
                                push({ user = user_of(i), voucher = voucher_of(i), b = i, attempt = 1, kind = "second" })
                                counts.second_asks = counts.second_asks + 1
                        end
                end
        end
        -- --auth jwt: the tokens of the buyers this thread asks for (b = tid-1 mod T, and
        -- b + 1's predecessor: b = tid-2 mod T for the second asks).
        tokens = nil
        local tf = os.getenv("SK_DEMO_TOKENS")
        if tf and tf ~= "" then
                tokens = {}
                local i, own, prev = 0, (tid - 1) % nthreads, (tid - 2) % nthreads
                for line in io.lines(tf) do
                        local r = i % nthreads
                        if r == own or r == prev then tokens[i] = line end
                        i = i + 1
                end
                if i < nbuyers then error("SK_DEMO_TOKENS: " .. i .. " tokens for " .. nbuyers .. " buyers") end
        end
        outf = assert(io.open(OUT .. "/accepted-" .. tid .. ".tsv", "w"))
        outf:setvbuf("line")
end

local function finish()
        if stopped then return end
        stopped = true
        if outf then outf:close(); outf = nil end
        local f = io.open(OUT .. "/done-" .. tid, "w")
        if f then f:write(tostring(now_ms()), "\n"); f:close() end
        wrk.thread:stop()
end

function request()
        if not verified then
                -- wrk calls request() once on the first thread's state before any
                -- thread runs (script_verify_request, to count pipelined requests):
                -- that request is never sent, so it must not consume a buyer.
                verified = true
                if tid == 1 then return wrk.format("GET", "/healthz") end
        end
        if cur ~= nil then
                -- The previous ask got no response (wrk reconnected after an error):
                -- its answer is unknown. Ask again later; the front answers 10006 if
                -- the lost one was admitted (its 202, if any, is simply not logged).
                counts.lost = counts.lost + 1
                cur.attempt = cur.attempt + 1
                if cur.attempt <= max503 + 1 then push(cur) end
                cur = nil
        end
        if stopped or qhead > qtail then
                -- Nothing left (or wrk asks once more after stop()): a harmless probe.
                return wrk.format("GET", "/healthz")
        end
        cur = queue[qhead]
        queue[qhead] = nil
        qhead = qhead + 1
        counts.asks = counts.asks + 1
        if sale_first_ms == 0 then sale_first_ms = now_ms() end
        local h = tokens and { ["Authorization"] = "Bearer " .. tokens[cur.b] }
                  or { ["X-User-Id"] = cur.user }
        return wrk.format("POST", "/api/v1/vouchers/" .. cur.voucher .. "/seckill", h, "")
end

function response(status, headers, body)
        local item = cur
        cur = nil
        if item == nil then
                -- the answer to a /healthz probe
                if qhead > qtail then finish() end
                return
        end
        local t = now_ms()
        sale_last_ms = t
        counts.answers = counts.answers + 1
        bump("status." .. tostring(status))
        local code = body and string.match(body, '"code"%s*:%s*(%d+)') or nil
        local ckey = code or ("http" .. tostring(status))
        bump("code." .. ckey)
        -- the timeline: answers per 100 ms of wall clock and code (flat key, see init)
        bump(string.format("tl.%d.%s", math.floor(t / 100), ckey))
        if status == 202 or status == 200 then
                -- 202 PENDING (Redis path) or 200 CREATED (the DB-only path): both accepted
                local order = string.match(body, '"orderId"%s*:%s*"(%d+)"')
                local trace = string.match(body, '"traceId"%s*:%s*"(%d+)"')
                bump("accepted." .. item.voucher)
                outf:write(order or "?", "\t", trace or "?", "\t", item.voucher, "\t",
                           item.user, "\t", tostring(t), "\t", tostring(item.attempt), "\n")
        elseif status == 503 then
                if item.attempt <= max503 then
                        item.attempt = item.attempt + 1
                        counts.retries_503 = counts.retries_503 + 1
                        push(item)
                end
        elseif code == "10005" and item.kind == "first" and item.attempt == 1
               and pct_hit(item.b, 29, retry_pct) then
                -- an impatient buyer who does not believe "sold out"
                item.attempt = item.attempt + 1
                item.kind = "soldout-retry"
                counts.retries_soldout = counts.retries_soldout + 1
                push(item)
        end
        if qhead > qtail then finish() end
end

-- ---------------------------------------------------------------- main state again
local function json_value(v)
        local t = type(v)
        if t == "table" then
                local parts = {}
                for k, x in pairs(v) do
                        table.insert(parts, string.format("%q:%s", tostring(k), json_value(x)))
                end
                table.sort(parts)
                return "{" .. table.concat(parts, ",") .. "}"
        elseif t == "number" then
                return string.format("%d", math.floor(v))
        elseif t == "string" then
                return string.format("%q", v)
        elseif t == "boolean" then
                return tostring(v)
        end
        return "null"
end

function done(summary, latency, requests)
        local agg = { status = {}, code = {}, accepted = {}, planned = {}, tl = {} }
        local first, last, threads_done = 0, 0, 0
        for _, thread in ipairs(threads) do
                local c = thread:get("counts")
                for key, n in pairs(c or {}) do
                        local group, sub = string.match(key, "^(%a+)%.(.+)$")
                        if group then
                                agg[group][sub] = (agg[group][sub] or 0) + n
                        else
                                agg[key] = (agg[key] or 0) + n
                        end
                end
                local f, l = thread:get("sale_first_ms") or 0, thread:get("sale_last_ms") or 0
                if f > 0 and (first == 0 or f < first) then first = f end
                if l > last then last = l end
                if thread:get("stopped") then threads_done = threads_done + 1 end
        end
        local e = summary.errors
        local out = {
                threads = #threads,
                threads_done = threads_done,
                sale = agg,
                sale_first_ms = first,
                sale_last_ms = last,
                wrk = {
                        requests = summary.requests,
                        duration_us = summary.duration,
                        bytes = summary.bytes,
                        errors = { connect = e.connect, read = e.read, write = e.write,
                                   status = e.status, timeout = e.timeout },
                        latency_us = { p50 = latency:percentile(50), p90 = latency:percentile(90),
                                       p99 = latency:percentile(99), p999 = latency:percentile(99.9),
                                       max = latency.max, mean = latency.mean },
                },
        }
        local f = assert(io.open(OUT .. "/wrk.json", "w"))
        f:write(json_value(out), "\n")
        f:close()
end
