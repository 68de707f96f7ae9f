#!/usr/bin/env bash
# 0393_redis_cluster_master_kill_window.sh: DESIGN.md 4b (budget: a Cluster master kill
# costs <= cluster-node-timeout + 2 s of 503 for the buckets on that master; buckets on
# the other masters keep answering 202 throughout), 12 (the front's Redis breaker is one
# per node: producer/breaker.c) and 9. On the stack's own Cluster (scripts/stack.sh up
# cluster: 3 masters with 2 replicas each, cluster-node-timeout 3 s,
# cluster-require-full-coverage no; support/ft_stack_cluster.sh) an 8-bucket voucher
# whose buckets span the three masters is on sale: two buyers, one purchase in flight
# each, a fresh user every 20 ms (bench/windows_buyer.py, the measurement bench/windows.sh
# uses). Mid-sale the master serving bucket 0's slot is SIGKILLed. Asserted, per buyer's
# home bucket (CRC-16 of the user mod 8, DESIGN.md 4):
#   - home on another master: every answer 202 (or 409) from the first purchase to the
#     last: the dead master's breaker opens alone, no voucher drains;
#   - home on the dead master: some 503s (the kill hit them), then 202 again within
#     1000 ms of the replica's election (front and consumer not restarted; the front saw
#     the slots move within 500 ms of it), and no longer than
#     cluster-node-timeout + 2 s from the first 503 to the first 202 after the last one,
#     unless the Cluster itself promoted the replica later than that (then recorded in
#     the notes, not failed: see step 3);
#   - the killed node restarts (scripts/stack.sh up cluster) and rejoins as a replica;
#     every 202 is decided; after --repair every invariant; then the voucher sells out
#     exactly (DESIGN.md 9).
# It kills a node of the shared Cluster: lock redis-cluster, label cluster (run it under
# the stack lock, `sk-stack`), and after the Cluster's own reruns in one ctest run.
# fault: the stack's Cluster (3 masters x 2 replicas): SIGKILL of the master of bucket 0 of an 8-bucket voucher whose buckets span the three masters, mid-sale; restarted, it rejoins as a replica
# Buckets: 8
here=$(dirname "$0")
. "$here/../support/ft_stack_cluster.sh"
ft_sc_up || { echo "scripts/stack.sh up cluster failed"; exit 1; }
. "$here/../support/ft.sh"
ft_init redis_cluster_master_kill_window
BUYER=$FT_SRC/bench/windows_buyer.py
NB=8
ft_sc_full 120 || ft_die "the stack's Cluster has not two good replicas per master after 120 s"
for p in $(ft_sc_ports); do
        cov=$(ft_sc_cfg "$p" cluster-require-full-coverage)
        [[ $cov == no ]] || ft_die "node $p runs cluster-require-full-coverage '$cov': every node answers CLUSTERDOWN while a master is failed; restart the Cluster with this checkout's scripts/stack.sh (down cluster, up cluster)"
done

# 1. A voucher whose buckets live on all three masters (the hash tag {v:ID:b} decides).
declare -A OWN=()
for ((try = 0; try < 20; try++)); do
        V=$(ft_voucher 3000 "$NB")
        OWN=()
        for ((b = 0; b < NB; b++)); do OWN[$b]=$(ft_sc_owner "$(ft_sc_slot "{v:$V:$b}")"); done
        (($(printf '%s\n' "${OWN[@]}" | sort -u | grep -c .) == 3)) && break
done
(($(printf '%s\n' "${OWN[@]}" | sort -u | grep -c .) == 3)) || ft_die "no voucher with buckets on all three masters in 20 tries"
VICTIM=${OWN[0]}
DEAD=
for ((b = 0; b < NB; b++)); do [[ ${OWN[$b]} == "$VICTIM" ]] && DEAD+=${DEAD:+,}$b; done
NT=$(ft_sc_cfg "$VICTIM" cluster-node-timeout)
[[ $NT =~ ^[0-9]+$ ]] || ft_die "no cluster-node-timeout from $VICTIM"
ft_log "voucher $V: buckets on masters $(for ((b = 0; b < NB; b++)); do printf '%s:%s ' "$b" "${OWN[$b]}"; done); victim $VICTIM (buckets $DEAD), node timeout $NT ms"

ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 16 4
ft_settle 30 || ft_fail "first batch not decided"

# 2. Two buyers, then the kill mid-sale.
BUYER_PIDS=()
for k in 0 1; do
        python3 "$BUYER" buy "${FT_ADDR[f1]}" "$V" $(((k + 1) * 1000000)) "$FT_WORK/answers-$k.txt" \
                "$FT_WORK/buyers.stop" 20 "$FT_WORK/res-$k.txt" &
        BUYER_PIDS+=($!)
done
buyers_stop() {
        local p
        touch "$FT_WORK/buyers.stop"
        for p in "${BUYER_PIDS[@]}"; do wait "$p" 2>/dev/null; done
        BUYER_PIDS=()
}
FT_CLEANUP_HOOKS+=(buyers_stop)
sleep 3
PID=$(ft_sc_pid "$VICTIM")
[[ $PID =~ ^[0-9]+$ ]] || ft_die "no pid for the master on $VICTIM"
SLOT0=$(ft_sc_slot "{v:$V:0}")
T_KILL=$(date +%s%3N)
kill -KILL "$PID"
ft_log "SIGKILL of master $VICTIM (pid $PID)"
T_PROM=
for ((i = 0; i < 300; i++)); do
        m=$(ft_sc_owner "$SLOT0")
        [[ -n $m && $m != "$VICTIM" ]] && { T_PROM=$(date +%s%3N); NEWM=$m; break; }
        sleep 0.1
done
[[ -n $T_PROM ]] && ft_ok "replica $NEWM serves bucket 0's slot $((T_PROM - T_KILL)) ms after the kill" ||
        ft_fail "no replica promoted within 30 s"
# The dead master's buyers get 202 again within the budget of the promotion; keep buying
# past it so the window can close: at least 3 s after the promotion and until a 202 sent
# after it came back on the dead master's buckets, 20 s at most. The bounds are read on
# the clock, not counted in loop turns (each turn runs python, seconds at load 15).
T_BUY0=${T_PROM:-$T_KILL}
while :; do
        now=$(date +%s%3N)
        ((now - T_BUY0 >= 20000)) && break
        if ((now - T_BUY0 >= 3000)); then
                python3 "$BUYER" split <(cat "$FT_WORK"/answers-*.txt) "$NB" "$DEAD" "$FT_WORK/dead.txt" "$FT_WORK/live.txt"
                [[ -n $(python3 "$BUYER" first "$FT_WORK/dead.txt" "$T_BUY0" 202) ]] && break
        fi
        sleep 0.5
done
buyers_stop
cat "$FT_WORK"/res-*.txt >>"$FT_WORK/results.txt"
cat "$FT_WORK"/res-*.txt | awk '$2 == 202' |
        sed -n "s/^\([0-9]*\) 202 .*\"orderId\":\"\([0-9]*\)\".*\"traceId\":\"\([0-9]*\)\".*/\1 \2 \3 $V/p" >>"$FT_WORK/accepted.tsv"
python3 "$BUYER" split <(sort -n "$FT_WORK"/answers-*.txt) "$NB" "$DEAD" "$FT_WORK/dead.txt" "$FT_WORK/live.txt"
tally() { awk '{print $3}' "$1" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'; }
ft_log "answers, homes on the other masters: $(tally "$FT_WORK/live.txt")"
ft_log "answers, homes on the dead master: $(tally "$FT_WORK/dead.txt")"

# 3. The budgets.
NLIVE=$(wc -l <"$FT_WORK/live.txt")
LIVE_BAD=$(awk '$3 != 202 && $3 != 409' "$FT_WORK/live.txt" | wc -l)
LIVE_AFTER=$(awk -v t="$T_KILL" '$1 >= t' "$FT_WORK/live.txt" | wc -l)
((LIVE_AFTER >= 20)) && ft_ok "$LIVE_AFTER purchases of the other masters' buckets sent after the kill" ||
        ft_fail "only $LIVE_AFTER purchases of the other masters' buckets after the kill"
ft_eq "$LIVE_BAD" 0 "no answer but 202/409 for the $NLIVE purchases homed on the other masters"
W=$(python3 "$BUYER" window "$FT_WORK/dead.txt" "$T_KILL" 60000)
ft_log "dead master's buckets: $W"
WMS=$(sed -n 's/.*window_ms=\([0-9]*\).*/\1/p' <<<"$W")
BAD=$(sed -n 's/.*bad=\([0-9]*\).*/\1/p' <<<"$W")
OKAFTER=$(sed -n 's/.*ok_after_ms=\(-\?[0-9]*\).*/\1/p' <<<"$W")
((BAD > 0)) && ft_ok "$BAD bad answers on the dead master's buckets (the kill hit them)" ||
        ft_fail "no 503 on the dead master's buckets: the kill did not reach them"
[[ $OKAFTER != -1 ]] && ft_ok "decided answers (202/409) again on the dead master's buckets ${OKAFTER} ms after the kill" ||
        ft_fail "no decided answer on the dead master's buckets after the last 503 (window never closed in 60 s)"
# The window is the Cluster's failover plus the front's share. The promotion is read to
# the ms from the new master's own log ("Failover election won", ft_sc_elected; when it
# cannot be read, the CLUSTER NODES poll every 100 ms, an upper bound). The front's share
# is asserted always, in two parts: the front saw the dead master's slots move (its
# breaker thread reads the map every 50 ms while a breaker is open: the log line
# redis_breaker_retired) within 500 ms of the election, and the first 202 on the dead
# master's buckets was answered within 1000 ms of it (measured 39-89 ms and 100-122 ms on
# the 2-core host at load 6-15; the rest is margin for CI's load and for the buyers'
# sampling: only the purchases whose home is on the dead master tell, 1 to 4 of 8).
# The budget is asserted whenever the Cluster promoted within it: Redis Cluster itself
# marks a silent master failed between node timeout and 1.5 x node timeout after the kill
# (it pings a node whose pong is older than half the timeout), then elects a replica
# after 0.5-1.5 s, so on some runs no client can meet node timeout + 2 s; such a run is
# recorded (note), not failed, and the client's share is still asserted.
PROM=$(( ${T_PROM:-$((T_KILL + 99999))} - T_KILL ))
T_ELECT=$(ft_sc_elected "${NEWM:-0}" "$T_KILL")
ELECT=$(( ${T_ELECT:-$((T_KILL + 99999))} - T_KILL ))
[[ -n $T_ELECT ]] || { ft_log "no 'Failover election won' in ${NEWM:-?}'s log: the poll's promotion (${PROM} ms) stands for it"; ELECT=$PROM; }
T_E=$((T_KILL + ELECT))
FIRST=$(python3 "$BUYER" first "$FT_WORK/dead.txt" "$T_E" 202)
RET=$(sed -n 's/^ts=\([^ ]*\) .*event=redis_breaker_retired node=127\.0\.0\.1:'"$VICTIM"' .*/\1/p' "$FT_WORK/f1.log" |
        while read -r t; do date -d "$t" +%s%3N; done | awk -v e="$T_E" '$1 >= e - 100 { print; exit }')
LAST503=$(awk -v e="$T_E" '$1 >= e && $3 == 503 { l = $1 } END { print (l == "" ? "none" : l - e " ms") }' "$FT_WORK/dead.txt")
MOVED=${RET:+$((RET - T_E)) ms}
FIRSTMS=${FIRST:+$((FIRST - T_E)) ms}
ft_log "split: kill -> election won ${ELECT} ms (the poll saw it at ${PROM} ms); after the election: the front's map moved ${MOVED:-never}, last 503 sent ${LAST503}, first 202 answered ${FIRSTMS:-never}"
[[ -n ${FT_KEEP_0393:-} ]] && { mkdir -p "$FT_KEEP_0393"; cp "$FT_WORK"/f1.log "$FT_WORK"/dead.txt "$FT_WORK"/live.txt "$FT_KEEP_0393/"; echo "$T_KILL $T_PROM $T_ELECT $NEWM $VICTIM" >"$FT_KEEP_0393/times"; }
[[ -n $RET ]] && ((RET - T_E <= 500)) && ft_ok "the front's map followed the promotion ${MOVED} after the election (<= 500 ms)" ||
        ft_fail "the front's share: its breaker thread saw the slots move ${MOVED:-never} after the election (500 ms allowed)"
[[ -n $FIRST ]] && ((FIRST - T_E <= 1000)) && ft_ok "the dead master's buckets answer 202 again ${FIRSTMS} after the election (<= 1000 ms; ${OKAFTER} ms after the kill)" ||
        ft_fail "the front's share: first 202 on the dead master's buckets ${FIRSTMS:-never} after the election (1000 ms allowed)"
if ((WMS <= NT + 2000)); then
        ft_ok "503 window of the dead master's buckets ${WMS} ms <= node timeout $NT + 2000 ms"
elif ((ELECT + 1000 > NT + 2000)); then
        ft_log "over budget by the Cluster itself: 503 window ${WMS} ms > $NT + 2000 ms, but the replica won its election only ${ELECT} ms after the kill (less than the front's 1000 ms left)"
        ft_note "BUDGET MISSED BY THE CLUSTER: election won ${ELECT} ms after the kill > node timeout + 2 s - 1000 ms"
else
        ft_fail "503 window of the dead master's buckets ${WMS} ms > node timeout $NT + 2000 ms (election won at ${ELECT} ms)"
fi
ft_note "kill -> election won ${ELECT} ms, -> first 202 on its buckets ${FIRSTMS:-never} later; dead master's buckets: 503 window $WMS ms (budget $((NT + 2000))); other masters: $LIVE_BAD non-202 of $NLIVE"
ft_alive f1 && ft_ok "front survived the kill" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived the kill" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
grep -q 'event=redis_breaker_usable.*usable=0' "$FT_WORK/f1.log" &&
        ft_fail "the front saw every breaker open (Redis down) for one dead master" ||
        ft_ok "the front never counted Redis as down (only the dead master's breaker opened)"
grep -q 'event=degrade_state' "$FT_WORK/f1.log" && ft_fail "a voucher changed degrade state: $(grep -m1 'event=degrade_state' "$FT_WORK/f1.log")" ||
        ft_ok "no voucher left state redis"

# 4. The killed node back; then every invariant, and the sale sold out.
bash "$FT_SRC/scripts/stack.sh" up cluster >>"$FT_WORK/stack.log" 2>&1 || ft_fail "scripts/stack.sh up cluster: $(tail -n 3 "$FT_WORK/stack.log")"
ft_sc_full 120 && ft_ok "the Cluster is whole again" || ft_fail "the Cluster has not two good replicas per master 120 s after the restart"
ft_eq "$(ft_sc_cli "$VICTIM" role | head -n 1)" slave "the restarted node is a replica"
ft_fault_over
ft_settle 60 || ft_fail "202s not decided after the kill"
ft_reconcile 120 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V"
LEFT=$(ft_sql "SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = $V")
ft_log "$LEFT units left: selling them out"
ft_buy f1 "$V" 5000001 $((LEFT + 200)) 8
ft_settle 60 || ft_fail "202s of the drain not decided"
ft_reconcile 90 || ft_fail "reconciler after the drain: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
