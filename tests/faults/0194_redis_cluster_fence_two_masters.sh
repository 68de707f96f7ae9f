#!/usr/bin/env bash
# 0194_redis_cluster_fence_two_masters.sh: DESIGN.md 4b last rule on a Cluster, for an
# overflowed purchase whose stock and whose home live on two masters.
# A 4-bucket voucher of 3 units (buckets 1, 1, 1, 0): a buyer whose home is bucket 3
# (empty) overflows and takes a unit of bucket 0. Every delivery is reported NOT_PERSISTED
# (failpoint front.delivery_not=error), so the front gives the purchase up:
# rollback.lua mode front on bucket 0 (its fence there), then the home step on bucket 3
# (the home fence). The voucher is chosen so that buckets 0 and 3 sit on different
# masters, and the replica of bucket 0's master is frozen (SIGSTOP): the fence there is
# never acknowledged, so every answer must be 503 PENDING, never FAILED (the WAIT used to
# go only to the home bucket's master, whose replica is healthy). Then the replica
# resumes, a consumer decides every fenced purchase FAILED, and a front without the
# failpoint sells the voucher out exactly (DESIGN.md 9).
# fault: overflow fences on two Cluster masters, the replica of the taken bucket's master frozen (SIGSTOP): WAIT on each master -> 503 PENDING, not FAILED
# Buckets: 4.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_redis_topo.sh"
ft_init redis_cluster_fence_two_masters
ft_cluster_start
V= M0= M3=
for _ in $(seq 1 12); do
        V=$(ft_voucher 3 4)
        M0=$(ft_cluster_master_of "$(ft_key "$V" stock 0)") || ft_die "no master for bucket 0"
        M3=$(ft_cluster_master_of "$(ft_key "$V" stock 3)") || ft_die "no master for bucket 3"
        [[ $M0 != "$M3" ]] && break
done
[[ $M0 != "$M3" ]] || ft_die "no voucher with buckets 0 and 3 on two masters in 12 tries"
RP=$(ft_cluster_replica_of "$M0")
[[ -n $RP ]] || ft_die "master $M0 has no replica"
ft_log "voucher $V: bucket 0 on master $M0 (replica $RP), bucket 3 on master $M3"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(stock ORDER BY bucket) FROM tb_seckill_stock WHERE voucher_id = $V")" "1,1,1,0" "bucket rows 1,1,1,0"

ft_front f1 SECKILL_FAILPOINTS="front.delivery_not=error"
ft_topo_cli "$M0" config set min-replicas-to-write 0 >/dev/null
ft_topo_stop "$RP"
ft_homed 3 4 500000 4 | ft_buy_users f1 "$V" 1 "home-3 buyers"
ft_topo_cont "$RP"
ft_topo_cli "$M0" config set min-replicas-to-write 1 >/dev/null
ft_fault_over
states=$(awk '$2 == 503' "$FT_WORK/results.txt" | sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')
ft_log "home-3 buyers, fenced with bucket 0's replica frozen: $states"
ft_eq "$(awk '$2 == 503' "$FT_WORK/results.txt" | wc -l)" 4 "four fenced purchases answered 503"
ft_eq "$(grep -c '"state":"FAILED"' "$FT_WORK/results.txt")" 0 "no 503 FAILED without bucket 0's replica acknowledging its fence"
n=$(grep -c 'rollback_unacknowledged' "$FT_WORK/f1.log")
((n >= 1)) && ft_ok "the front logged $n unacknowledged fences" || ft_fail "the front logged no unacknowledged fence"
ft_note "bucket 0's replica frozen: $states"

ft_consumer c1
t0=$SECONDS
while ((SECONDS - t0 < 60)); do
        n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = $V AND outcome = 2")
        [[ $n == 4 ]] && break
        sleep 1
done
ft_eq "$n" 4 "the four fenced purchases have a FAILED outcome"
ft_recovered
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V")" 0 "no fenced purchase became an order"
ft_stop f1
ft_front f2
ft_buy f2 "$V" 1001 40 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f2 "$V"
ft_finish
