#!/usr/bin/env bash
# 0192_redis_fence_unacknowledged.sh: DESIGN.md 4b, last rule: "After rollback.lua mode
# front on a master that has replicas, the front runs WAIT 1 100; if no replica
# acknowledged, it answers state PENDING, not FAILED (a failover could lose the fence)."
# A private Sentinel group (ft_redis_topo.sh). The front's deliveries are reported
# NOT_PERSISTED (failpoint front.delivery_not=error; the messages are in the topic), so
# every purchase is fenced by rollback.lua mode front. With the replica healthy the fence
# is acknowledged: 503 FAILED. With the replica frozen (SIGSTOP; the master still accepts
# writes: min-replicas-to-write 0 for that batch) WAIT times out: 503 PENDING, never FAILED.
# The replica resumes; the consumer (started only now, so that it claims none of them
# first) meets every fenced message and records FAILED; the
# reconciler finds nothing to re-drive; no fenced purchase becomes an order; a front
# without the failpoint then sells the voucher out exactly (DESIGN.md 9).
# fault: fences (rollback.lua mode front) on a Sentinel master whose replica is frozen (SIGSTOP): WAIT 1 100 unacknowledged -> 503 PENDING, not FAILED
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_redis_topo.sh"
ft_init redis_fence_unacknowledged
ft_sentinel_start
R=${FT_TOPO_PORTS[1]}
V=$(ft_voucher 40)
# No consumer yet: it would claim some of these messages before the fence (CLAIMED is
# PENDING for its own reason).
ft_front f1 SECKILL_FAILPOINTS="front.delivery_not=error"
# states USER_LO USER_HI: "STATE×N ..." of the 503s of those users.
states() {
        awk -v lo="$1" -v hi="$2" '$1 >= lo && $1 <= hi && $2 == 503' "$FT_WORK/results.txt" |
                sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p' | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'
}
count() { awk -v lo="$1" -v hi="$2" -v s="\"state\":\"$3\"" '$1 >= lo && $1 <= hi && $2 == 503 && index($0, s)' \
        "$FT_WORK/results.txt" | wc -l; }

# 1. Replica healthy: each fence is acknowledged -> 503 FAILED.
ft_buy f1 "$V" 1 6 2
ft_log "fenced with the replica healthy: $(states 1 6)"
# Each of the six is 503; FAILED when the replica acknowledged within 100 ms (PENDING is
# the safe answer if a busy machine delayed the acknowledgement: at least one FAILED).
ft_eq "$(awk '$1 >= 1 && $1 <= 6 && $2 == 503' "$FT_WORK/results.txt" | wc -l)" 6 "six fenced purchases answered 503"
n=$(count 1 6 FAILED)
((n >= 1)) && ft_ok "$n of 6 answered FAILED (the replica acknowledged the fence)" ||
        ft_fail "no fence acknowledged by the healthy replica (all PENDING)"

# 2. Replica frozen: WAIT 1 100 times out -> 503 PENDING, never FAILED.
# The master keeps accepting writes however long the batch takes on a busy machine
# (min-replicas-to-write 0 for the batch: past min-replicas-max-lag 10 s the deduct itself
# would be refused NOREPLICAS, a 503 without a fence; the rule under test is WAIT's).
M=${FT_TOPO_PORTS[0]}
ft_topo_cli "$M" config set min-replicas-to-write 0 >/dev/null
ft_topo_stop "$R"
ft_buy f1 "$V" 101 6 2
ft_topo_cont "$R"
ft_topo_cli "$M" config set min-replicas-to-write 1 >/dev/null
ft_fault_over
ft_log "fenced with the replica frozen: $(states 101 106)"
ft_eq "$(count 101 106 PENDING)" 6 "six fenced purchases answered 503 PENDING (no replica acknowledged the fence)"
ft_eq "$(count 101 106 FAILED)" 0 "no 503 FAILED without a replica's acknowledgement"
n=$(grep -c 'rollback_unacknowledged' "$FT_WORK/f1.log")
((n >= 6)) && ft_ok "the front logged $n unacknowledged fences" || ft_fail "the front logged $n unacknowledged fences, want >= 6"
ft_note "replica healthy: $(states 1 6); replica frozen: $(states 101 106)"

# 3. Every fenced purchase is decided FAILED by the consumer; none becomes an order.
ft_consumer c1
t0=$SECONDS
while ((SECONDS - t0 < 60)); do
        n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = $V AND outcome = 2")
        [[ $n == 12 ]] && break
        sleep 1
done
ft_eq "$n" 12 "the twelve fenced purchases have a FAILED outcome"
ft_recovered
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V")" 0 "no fenced purchase became an order"
ft_stop f1
ft_front f2
ft_buy f2 "$V" 1001 60 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f2 "$V"
ft_finish
