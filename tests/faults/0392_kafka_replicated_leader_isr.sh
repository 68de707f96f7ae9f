#!/usr/bin/env bash
# 0392_kafka_replicated_leader_isr.sh: a sale on a private replicated Kafka cluster
# (ft_kafka3.sh: three brokers, a dedicated KRaft controller, topic replication factor 3,
# min.insync.replicas=2, unclean leader election off; the front's producer is idempotent,
# hence acks=all). Mid-sale the leader of the voucher's partition is SIGKILLed: the
# controller elects another in-sync replica and, with two brokers of three, the sale goes
# on (202s). Then a second broker of the partition's ISR is SIGKILLed: the ISR falls below
# min.insync.replicas, every produce is refused (NOT_ENOUGH_REPLICAS) and the front must
# answer 503, never 202 (DESIGN.md 8: NOT_PERSISTED -> fence -> 503; POSSIBLY_PERSISTED ->
# 503 PENDING, the reconciler settles it). Both brokers restart; the sale drains; every
# 202 must be decided exactly once, with zero oversell and Redis = DB (DESIGN.md 9).
# fault: broker leading the voucher's partition SIGKILLed mid-sale, then a second ISR member (ISR 1 < min.insync.replicas 2), both restarted (private 3-broker cluster)
# Buckets: 1.
# Lock kafka3: its private cluster is four JVMs; two such cases at once on two cores (0980
# takes the same lock) would make the timings meaningless. No shared server is touched.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_kafka3.sh"
ft_init kafka_replicated
# kill_mid_sale FIRST_USER BROKER ISR_LEFT: SIGKILL BROKER while a buy loop (users from
# FIRST_USER) runs, wait until the voucher's partition has ISR_LEFT in-sync replicas, stop
# the loop. KILL_S = seconds from the kill until the ISR had shrunk (failure logged).
kill_mid_sale() {
        local t0
        ft_buy_loop f1 "$V" "$1" 2 4 0.5
        sleep 2
        t0=$SECONDS
        ft_kafka3_kill "$2"
        ft_kafka3_wait_isr "$P" "$3" 30 || ft_fail "partition $P: the ISR did not shrink to $3 after killing broker $2"
        KILL_S=$((SECONDS - t0))
        ft_buy_loop_stop
}
ft_kafka3_start
V=$(ft_voucher 300)
ft_front f1
ft_consumer c1
# Warm-up: one purchase at a time until one is accepted (120 s bound, on the clock). On a
# CI machine at load 30 the four JVMs of a cluster that took 90 s to come up answered the
# front's first produces late (7 of the first 20 purchases 503 kafka); the claim below is
# about a working three-broker cluster, not about its first seconds.
end=$((SECONDS + 120)) u=900001
while ((SECONDS < end)); do
        ft_buy f1 "$V" "$u" 1 1
        grep -q "^$u 202 " "$FT_WORK/results.txt" && break
        u=$((u + 1))
        sleep 1
done
grep -q "^$u 202 " "$FT_WORK/results.txt" && ft_log "warm-up: user $u accepted" ||
        ft_fail "no purchase accepted within 120 s of the private cluster being ready"
ft_buy f1 "$V" 1 20 8
n=$(awk '$1 <= 20 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
ft_eq "$n" 20 "all 20 purchases accepted with three brokers"
ft_log "partitions (PARTITION LEADER ISR): $(ft_kafka3_partitions | paste -sd'|')"
P=$(ft_kafka3_busiest)
read -r _ L ISR < <(ft_kafka3_partitions | awk -v p="${P:--1}" '$1 == p')
[[ -n ${L:-} && $L -ge 1 && $L -le 3 ]] || ft_die "no leader found for the voucher's partition"
ft_log "voucher $V on partition $P: leader $L, ISR $ISR"
ft_eq "$(tr ',' '\n' <<<"$ISR" | wc -l)" 3 "the voucher's partition has three in-sync replicas"

# 1. Kill the leader while purchases are in flight.
kill_mid_sale 100001 "$L" 2
NEW_LEADER_S=$KILL_S
read -r _ B ISR < <(ft_kafka3_partitions | awk -v p="$P" '$1 == p')
ft_log "partition $P after the leader kill: leader $B, ISR $ISR (${KILL_S}s)"
[[ $B != "$L" && $B != -1 && ,$ISR, == *,$B,* ]] && ft_ok "a surviving in-sync replica ($B) leads partition $P" ||
        ft_fail "partition $P: leader '$B', ISR '$ISR' after killing $L"

# 2. Two brokers of three, ISR 2 = min.insync.replicas: the sale goes on.
sleep 2
ft_buy f1 "$V" 200001 20 4
n=$(awk '$1 >= 200001 && $1 < 300000 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
((n > 0)) && ft_ok "$n of 20 purchases accepted with two brokers (ISR 2)" ||
        ft_fail "no 202 with two brokers of three in the ISR"
TWO_OK=$n

# 3. Kill a second member of the ISR (not the leader): ISR 1 < min.insync.replicas.
F=$(tr ',' '\n' <<<"$ISR" | grep -vx "$B" | head -n 1)
[[ -n $F ]] || ft_die "no second in-sync replica to kill (ISR '$ISR', leader $B)"
kill_mid_sale 300001 "$F" 1
SHRINK_S=$KILL_S
ft_log "partition $P with one broker: $(ft_kafka3_partitions | awk -v p="$P" '$1 == p')"
ft_buy f1 "$V" 400001 16 4
n=$(awk '$1 >= 400001 && $1 < 500000' "$FT_WORK/results.txt" | wc -l)
n503=$(awk '$1 >= 400001 && $1 < 500000 && $2 == 503' "$FT_WORK/results.txt" | wc -l)
n202=$(awk '$1 >= 400001 && $1 < 500000 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
ft_eq "$n202" 0 "no 202 while the ISR is below min.insync.replicas"
ft_eq "$n503" "$n" "every purchase answered 503 while the ISR is below min.insync.replicas"
ft_log "states of those 503s: $(awk '$1 >= 400001 && $1 < 500000 && $2 == 503' "$FT_WORK/results.txt" |
        sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"

# 4. Restart both; time until the front accepts again; the ISR comes back to three.
ft_kafka3_restart "$L"
ft_kafka3_restart "$F"
ft_fault_over
T_UP=$SECONDS
FIRST=
for ((u = 600001; SECONDS - T_UP < 90; u++)); do
        "$FT_WORK/buy1.sh" "${FT_ADDR[f1]}" "$V" "$u" "$FT_WORK/probe.txt"
        code=$(tail -n 1 "$FT_WORK/probe.txt" | awk '{print $2}')
        if [[ $code == 202 ]]; then
                FIRST=$((SECONDS - T_UP))
                break
        fi
        [[ $code == 409 ]] && break   # sold out: the probe cannot tell any more
        sleep 0.5
done
# The probe's answers join the record (their 202s are checked like any other).
cat "$FT_WORK/probe.txt" >>"$FT_WORK/results.txt"
awk '$2 == 202' "$FT_WORK/probe.txt" |
        sed -n "s/^\([0-9]*\) 202 .*\"orderId\":\"\([0-9]*\)\".*\"traceId\":\"\([0-9]*\)\".*/\1 \2 \3 $V/p" \
        >>"$FT_WORK/accepted.tsv"
[[ -n $FIRST ]] && ft_ok "first 202 ${FIRST}s after the brokers restarted" || ft_fail "no 202 within 90 s of the restart"
ft_kafka3_wait_brokers "1 2 3" 90 "$L" "$F" || ft_fail "the restarted brokers did not register"
ft_kafka3_wait_isr "$P" 3 90 && ft_ok "partition $P back to three in-sync replicas ($((SECONDS - T_UP))s)" ||
        ft_fail "partition $P never got its three replicas back"
ft_alive f1 && ft_ok "front survived" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
ft_note "leader killed: new leader, ISR 2 after ${NEW_LEADER_S}s; ISR 2: ${TWO_OK}/20 got 202; 2nd broker killed: ISR 1 after ${SHRINK_S}s; ISR 1: ${n503}/${n} got 503, ${n202} got 202; first 202 ${FIRST:-?}s after the restart"

# 5. Drain: settle what was accepted, repair, sell out, check every 202.
ft_settle 90 || ft_fail "202s not decided after the restart"
ft_reconcile 120 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V"
ft_buy f1 "$V" 700001 350 8
ft_settle 60 || ft_fail "202s of the drain not decided"
ft_reconcile 90 || ft_fail "reconciler after the drain: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
