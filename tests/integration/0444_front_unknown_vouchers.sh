#!/usr/bin/env bash
# 0444_front_unknown_vouchers.sh: made-up voucher ids cost nothing lasting (DESIGN.md 15
# "Cost of hostile input"), with the real front, Redis, MariaDB and Kafka:
#   - 20 purchases of one made-up id: each 404/10004, one DB check
#     (seckill_front_voucher_checks_total 1), the other 19 answered by the
#     unknown-voucher cache without Redis or the DB (before: 20 EVALSHAs and 20 DB
#     queries); another made-up id is a check of its own;
#   - a flood of made-up ids never delays a buyer's orders/me: with every lookup job
#     slowed to 1.5 s (failpoint front.before_lookup), 16 concurrent purchases of
#     made-up ids fill the 10004 checks' own queue (one thread) while orders/me, on the
#     lookup pool, answers 200 within 4 s (before, it waited behind the checks on the
#     shared lookup queue until its 5 s deadline: 503).
. "$(dirname "$0")/../support/ft.sh"
ft_init front_unknown_vouchers
V=$(ft_voucher 5)
X=4200000000000000001
metric() { curl -s -m 5 "http://${FT_OPS[$1]}/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
buy() { curl -s -m 20 -w ' %{http_code}' -X POST -H "X-User-Id: $3" "http://${FT_ADDR[$1]}/api/v1/vouchers/$2/seckill"; }

# --- one DB check per made-up id per period ------------------------------------------------
ft_front a SECKILL_SOLDOUT_CACHE_MS=60000
for u in $(seq 1 20); do buy a "$X" "$u"; echo; done >"$FT_WORK/a.out"
ft_eq "$(grep -c '"code":10004.* 404$' "$FT_WORK/a.out")" 20 "20 purchases of a made-up id: 404/10004"
ft_eq "$(metric a seckill_front_voucher_checks_total)" 1 "one DB check"
ft_eq "$(metric a seckill_front_unknown_voucher_cache_hits_total)" 19 "19 answered by the unknown-voucher cache"
ft_eq "$(buy a $((X + 1)) 1 | awk '{print $NF}') $(metric a seckill_front_voucher_checks_total)" "404 2" \
        "another made-up id: its own check"
ft_eq "$(buy a "$V" 1 | awk '{print $NF}')" 202 "a real voucher still sells"

# --- the flood waits on its own queue ---------------------------------------------------------
ft_front b SECKILL_FAILPOINTS="front.before_lookup=sleep(1500)"
pids=()
for i in $(seq 1 16); do
        { buy b $((X + 100 + i)) "$((100 + i))"; echo; } >"$FT_WORK/flood.$i" &
        pids+=($!)
done
for ((i = 0; i < 100; i++)); do
        (($(metric b seckill_front_lookup_queue_depth) >= 8)) && break
        sleep 0.1
done
ft_log "queued 10004 checks: $(metric b seckill_front_lookup_queue_depth)"
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -m 30 -w '%{http_code}' -H 'X-User-Id: 1' "http://${FT_ADDR[b]}/api/v1/vouchers/$V/orders/me")
ms=$((($(date +%s%N) - t0) / 1000000))
ft_eq "$code" 200 "orders/me during the flood: 200"
((ms < 4000)) && ft_ok "orders/me answered in $ms ms, not behind the flood" ||
        ft_fail "orders/me took $ms ms behind 16 made-up voucher checks (want < 4000, the request deadline is 5 s)"
wait "${pids[@]}"
ft_eq "$(cat "$FT_WORK"/flood.* | awk '$NF == 404 || $NF == 503' | wc -l)" 16 \
        "every made-up purchase answered 404 (checked) or 503 (deadline, queue full)"
ft_alive b && ft_ok "front alive" || ft_fail "front exited"
ft_finish
