#!/usr/bin/env bash
# 0191_redis_cluster_master_killed.sh: DESIGN.md 4b, 8 "Cluster MOVED / ASK / TRYAGAIN /
# CLUSTERDOWN" and "failover to a lagging replica". A sale runs on a private Redis Cluster
# (ft_redis_topo.sh: 3 masters + 3 replicas, cluster-node-timeout 3 s,
# min-replicas-to-write 1) with a 4-bucket voucher. Mid-sale the master serving the slot of
# its bucket 0 is SIGKILLed (the other buckets' slots may live on other masters):
# its replica takes the slot over (writes it had not yet replicated are lost); with no
# replica of its own the new master refuses writes (NOREPLICAS) until the killed node
# comes back empty and rejoins as its replica. 503s while the slot has no writable master
# are acceptable (never a 202 that is lost); the front and consumer follow the new map
# without a restart; afterwards the sale sells out exactly, every 202 decided once, zero
# oversell, Redis = DB after --repair (DESIGN.md 9).
# fault: Cluster master of a 4-bucket voucher's bucket-0 slot SIGKILLed mid-sale (its replica promoted), restarted empty as a replica
# Buckets: 4 (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_redis_topo.sh"
ft_init redis_cluster_master_killed
ft_cluster_start
V=$(ft_voucher 200 4)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_settle 30 || ft_fail "first batch not decided"
K=$(ft_key "$V" stock)
M=$(ft_cluster_master_of "$K") || ft_die "no master serves $K"
RP=$(ft_cluster_replica_of "$M")
[[ -n $RP ]] || ft_die "master $M has no replica"
ft_log "voucher $V bucket 0: slot $(ft_topo_cli "$M" cluster keyslot "$K") on master $M, replica $RP"

# 1. Kill the voucher's master while purchases are in flight.
ft_buy_loop f1 "$V" 100001 2 4 0.3
sleep 2
T0=$SECONDS
ft_topo_kill "$M"
PROMOTED=
while ((SECONDS - T0 < 30)); do
        [[ $(ft_topo_cli "$RP" role 2>/dev/null | head -n 1) == master ]] && { PROMOTED=$((SECONDS - T0)); break; }
        sleep 0.2
done
[[ -n $PROMOTED ]] && ft_ok "replica $RP promoted ${PROMOTED}s after the kill" || ft_fail "replica $RP not promoted within 30 s"
sleep 3
# 2. The killed node comes back empty and rejoins as the new master's replica.
ft_topo_restart "$M"
ft_cluster_wait_ok 60 && ft_ok "cluster ok, every master with a good replica ($((SECONDS - T0))s after the kill)" ||
        ft_fail "cluster not ok 60 s after the restart"
NEWM=$(ft_cluster_master_of "$K")
ft_eq "$NEWM" "$RP" "the promoted replica serves the voucher's slot"
ft_eq "$(ft_topo_cli "$M" role 2>/dev/null | head -n 1)" slave "the restarted node is a replica"
ft_fault_over
sleep 2
ft_buy_loop_stop
N503=$(awk '$1 >= 100001 && $2 == 503' "$FT_WORK/results.txt" | wc -l)
N202=$(awk '$1 >= 100001 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
ft_log "answers during the failover: $(awk '$1 >= 100001 {print $2}' "$FT_WORK/results.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
ft_log "states of those 503s: $(awk '$1 >= 100001 && $2 == 503' "$FT_WORK/results.txt" |
        sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
ft_alive f1 && ft_ok "front survived the failover" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived the failover" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"

# 3. The front (not restarted) accepts on the new master.
ft_probe_202 f1 "$V" 200001 30 && ft_ok "the front accepts on the new master (${FT_PROBE_S}s after the cluster was ok)" ||
        ft_fail "no 202 on the new master within 30 s"
FIRST=$FT_PROBE_S
ft_note "replica promoted ${PROMOTED:-?}s after the kill; during the failover ${N202}×202, ${N503}×503; first 202 ${FIRST:-?}s after the cluster was ok"

# 4. Drain and check every 202.
ft_drain_check f1 "$V" 300001 250
ft_finish
