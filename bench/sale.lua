-- bench/sale.lua: wrk script for bench/sale.sh, a realistic sale. BENCH_BUYERS distinct
-- buyers (default 100,000) ask for one voucher; wrk thread t asks for buyers t, t+T,
-- t+2T, ... and starts over when it has asked them all (a crowd that keeps pressing the
-- button: after the sell-out a buyer gets 10005, or 10006 if she bought; the crowd of
-- bench/wrk_common.lua).
-- Environment: BENCH_VOUCHER (voucher id), BENCH_USER_BASE (first user id, canonical),
-- BENCH_BUYERS, BENCH_THREADS (the -t given to wrk), BENCH_TOKENS (optional: a file of
-- JWTs, line i for buyer BENCH_USER_BASE + i - 1, from `sk-mint-jwt sign --count`; then
-- each request carries `Authorization: Bearer` instead of X-User-Id, DESIGN.md 15).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk_common.lua")
wrk_crowd{
  method = "POST",
  path = "/api/v1/vouchers/" .. (os.getenv("BENCH_VOUCHER") or "1") .. "/seckill",
  base = tonumber(os.getenv("BENCH_USER_BASE") or "1000000000"),
  n = tonumber(os.getenv("BENCH_BUYERS") or "100000"),
  tokens_file = os.getenv("BENCH_TOKENS"),
}
