#!/usr/bin/env bash
# 0390_kafka_stop.sh: the Kafka broker is stopped for 20 s in the middle of a sale, then
# started again (DESIGN.md 8: producer unusable -> 503 before deduct; NOT_PERSISTED ->
# front rollback (fence); POSSIBLY_PERSISTED -> the reconciler settles it). A private
# broker of our own (scripts/stack.sh with its own state dir and spare ports), never
# the shared dev broker; the case still holds the `kafka` resource lock.
# fault: private single broker stopped (SIGTERM) 20 s mid-sale, then started
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init kafka_stop
ft_private_kafka
V=$(ft_voucher 600)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_buy_loop f1 "$V" 100001 2 4 0.5
sleep 3
ft_log "stopping the broker: $(ft_kafka_ctl kafka-stop 2>&1 | tail -n 1)"
sleep 20
ft_log "starting the broker: $(ft_kafka_ctl kafka-start 2>&1 | tail -n 1)"
ft_fault_over
sleep 5
ft_buy_loop_stop
ft_log "answers during the run: $(awk '{print $2}' "$FT_WORK/results.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
n=$(awk '$2 == 503' "$FT_WORK/results.txt" | wc -l)
((n > 0)) && ft_ok "$n purchases answered 503 while the broker was down" || ft_fail "no 503 while the broker was down"
ft_settle 90 || ft_fail "202s not decided after the outage"
ft_reconcile 120 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V"
ft_buy f1 "$V" 200001 700 8
ft_settle 60 || ft_fail "202s after the outage not decided"
ft_reconcile 90 || ft_fail "reconciler after the last burst: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
