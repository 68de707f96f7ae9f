#!/usr/bin/env bash
# 0437_front_lookup_bounds.sh: the lookup queue is bounded and never runs a job whose
# request was already answered (DESIGN.md 3: with a short deadline, no stale job may stay
# queued after every client has its answer). One lookup thread,
# a queue of at most 8, each job slowed to 700 ms (failpoint front.before_lookup), a
# 3 s request deadline; 30 concurrent GET orders/me:
#   - beyond the bound: 503 at once (well before the deadline), with Retry-After;
#   - queued jobs whose deadline passed are dropped unrun (the dropped counter), so
#     the jobs run are fewer than the jobs queued, and the queue is empty soon after.
. "$(dirname "$0")/../support/ft.sh"
ft_init lookup_bounds
V=$(ft_voucher 5)
ft_front f SECKILL_FRONT_LOOKUP_THREADS=1 SECKILL_FRONT_LOOKUP_QUEUE_MAX=8 \
        SECKILL_FAILPOINTS="front.before_lookup=sleep(700)" SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=1000
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
pids=()
for u in $(seq 1 30); do
        curl -s -o /dev/null -D "$FT_WORK/h.$u" -m 20 -w "%{http_code} %{time_total}\n" -H "X-User-Id: $u" \
                "http://${FT_ADDR[f]}/api/v1/vouchers/$V/orders/me" >"$FT_WORK/me.$u" &
        pids+=($!)
done
wait "${pids[@]}"   # not a bare wait: the front is a child of this shell too
ft_log "answers: $(cat "$FT_WORK"/me.* | awk '{print $1}' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
fast503=$(cat "$FT_WORK"/me.* | awk '$1 == 503 && $2 < 1.5' | wc -l)
((fast503 >= 10)) && ft_ok "$fast503 lookups beyond the bound answered 503 at once (< 1.5 s)" ||
        ft_fail "lookups beyond the bound: $fast503 answered 503 within 1.5 s (want >= 10 of 30 with 9 slots)"
ra=$(grep -il '^retry-after: [0-9]' "$FT_WORK"/h.* | wc -l)
((ra >= fast503)) && ft_ok "every 503 carries Retry-After ($ra)" || ft_fail "Retry-After on $ra answers, want >= $fast503"
refused=$(metric seckill_front_lookups_refused_total)
((${refused:-0} >= 10)) && ft_ok "seckill_front_lookups_refused_total = $refused" ||
        ft_fail "seckill_front_lookups_refused_total = '${refused}', want >= 10"
sleep 5   # every queued job has either run or met its answered request
dropped=$(metric seckill_front_lookups_dropped_total)
((${dropped:-0} >= 2)) && ft_ok "$dropped queued jobs dropped unrun after their deadline answer" ||
        ft_fail "seckill_front_lookups_dropped_total = '${dropped}', want >= 2 (9 queued x 700 ms > 3 s deadline)"
ok200=$(cat "$FT_WORK"/me.* | awk '$1 == 200' | wc -l)
late503=$(cat "$FT_WORK"/me.* | awk '$1 == 503 && $2 >= 2.5' | wc -l)
ft_eq "$(cat "$FT_WORK"/me.* | awk '$1 == 200 || $1 == 503' | wc -l)" 30 "every lookup answered (200×$ok200, 503 at the deadline ×$late503)"
((late503 >= dropped)) && ft_ok "each dropped job's request had its deadline 503 ($late503 >= $dropped)" ||
        ft_fail "dropped $dropped jobs but only $late503 deadline 503s"
ft_eq "$(metric seckill_front_lookup_queue_depth)" 0 "lookup queue empty"
ft_alive f && ft_ok "front alive" || ft_fail "front exited"
ft_finish
