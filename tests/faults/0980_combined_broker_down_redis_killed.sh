#!/usr/bin/env bash
# 0980_combined_broker_down_redis_killed.sh: two faults at once. A sale runs on
# a private replicated Kafka cluster (ft_kafka3.sh: three brokers, RF 3,
# min.insync.replicas=2) and a private redis-server, with a 4-bucket voucher. One broker
# (the leader of the voucher's busiest partition) is SIGKILLed: with two brokers the ISR
# still holds min.insync.replicas and the sale goes on (202s). Then Redis is SIGKILLed too
# (no persistence: all its data gone) while that broker is still down. DESIGN.md 12: the
# front's breaker opens, the voucher moves redis -> draining (503) -> db once
# since + 2 x delivery timeout + 1 s + the read period has passed and the consumer group
# has caught up on the voucher's partitions (on the two surviving brokers); purchases are
# then answered 200 CREATED by the DB-only path (outcome path db), within a bounded time.
# Redis comes back empty and the broker restarts: the breaker sees Redis healthy, the
# front rebuilds the voucher from the DB (db -> rebuilding -> redis) and answers 202
# again. The sale sells out; every 202 and every 200 decided exactly once, zero
# oversell and undersell, Redis = DB per bucket (DESIGN.md 9).
# Tunables: delivery timeout 2 s (ft.sh), breaker open 1 s (ft.sh), 3 failures, healthy
# after 1.5 s, broker session 5 s (ft_kafka3.sh). Buckets: 4.
# fault: one broker of three SIGKILLed (ISR 2 = min.insync.replicas), then the private Redis SIGKILLed while it is down: DB-only path (200, path db), then Redis back empty + broker restarted -> rebuilt, 202 again (4 buckets)
# Lock kafka3: the private three-broker cluster is four JVMs; two such cases at once on two
# cores make the timings here meaningless (0392 takes the same lock).
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_kafka3.sh"
ft_init combined
ft_private_redis
ft_kafka3_start
V=$(ft_voucher 96 4)
FRONT_ENV=(SECKILL_BREAKER_FAILURES=3 SECKILL_BREAKER_HEALTHY_MS=1500)
ft_front f1 "${FRONT_ENV[@]}"
ft_consumer c1
# The first produce on a just-booted cluster may meet it still settling (503 cause kafka):
# the baseline starts at the first 202.
ft_probe_202 f1 "$V" 1 30 || ft_die "no 202 within 30 s on three brokers"
ft_buy f1 "$V" 1001 16 8
n=$(awk '$1 >= 1001 && $1 < 100000 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
((n > 0)) && ft_ok "$n of 16 purchases accepted with three brokers" || ft_fail "no 202 with three brokers"

# 1. One broker down: the leader of the voucher's busiest partition.
P=$(ft_kafka3_busiest)
read -r _ L _ < <(ft_kafka3_partitions | awk -v p="${P:--1}" '$1 == p')
[[ -n ${L:-} && $L -ge 1 && $L -le 3 ]] || ft_die "no leader found for the voucher's partition"
ft_kafka3_kill "$L"
T0=$SECONDS
ft_kafka3_wait_isr "$P" 2 30 && ft_ok "partition $P: ISR 2 after killing broker $L ($((SECONDS - T0))s)" ||
        ft_fail "partition $P: the ISR did not shrink to 2 after killing broker $L"
ft_buy f1 "$V" 100001 12 4
n=$(awk '$1 >= 100001 && $1 < 200000 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
((n > 0)) && ft_ok "$n of 12 purchases accepted with two brokers" || ft_fail "no 202 with two brokers of three"
TWO_OK=$n

# 2. Redis killed while the broker is down: 503 while draining, then 200 from the DB-only path.
ft_private_redis_kill
ft_probe_code 200 f1 "$V" 200001 45 && ft_ok "first 200 (DB-only path) ${FT_PROBE_S}s after Redis was killed" ||
        ft_fail "no 200 from the DB-only path within 45 s of the Redis kill (state $(ft_sql "SELECT state FROM tb_seckill_switch WHERE scope = $V"))"
TO_DB=$FT_PROBE_S
ft_log "answers until then: $(awk '$1 >= 200001 && $1 < 300000 {print $2}' "$FT_WORK/results.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
ft_eq "$(awk '$1 >= 200001 && $1 < 300000 && $2 == 202' "$FT_WORK/results.txt" | wc -l)" 0 \
        "no 202 after Redis was killed"
ft_eq "$(ft_sql "SELECT state FROM tb_seckill_switch WHERE scope = $V")" db "voucher $V in state db"
ft_buy f1 "$V" 300001 16 4
n=$(awk '$1 >= 300001 && $1 < 400000 && $2 == 200' "$FT_WORK/results.txt" | wc -l)
ft_eq "$n" 16 "16 of 16 purchases answered 200 on the DB-only path"
DB_OK=$n

# 3. Redis back (empty) and the broker restarted: rebuilt from the DB, 202 again.
ft_private_redis_start
ft_kafka3_restart "$L"
ft_fault_over
T_UP=$SECONDS
ft_wait_state_redis "$V" 60 && ft_ok "voucher $V back in state redis $((SECONDS - T_UP))s after Redis and the broker came back" ||
        ft_fail "voucher $V never came back to state redis"
BACK_S=$((SECONDS - T_UP))
ft_probe_202 f1 "$V" 400001 20 && ft_ok "202 again ${FT_PROBE_S}s after state redis" ||
        ft_fail "no 202 within 20 s of state redis"
ft_note "ISR 2 with a broker down: ${TWO_OK}/12 got 202; Redis killed: first 200 (path db) after ${TO_DB:-?}s, then ${DB_OK}/16 got 200; back in state redis ${BACK_S}s after Redis and the broker came back"

# 4. Sell out, settle, repair, check every 202 and every 200.
ft_buy f1 "$V" 500001 100 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_db_path f1 "$V"
ft_check_me f1 "$V"
ft_kafka3_wait_brokers "1 2 3" 60 "$L" && ft_ok "broker $L registered again" || ft_fail "broker $L did not come back"
ft_alive f1 && ft_ok "front survived" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
ft_finish
