#!/usr/bin/env bash
# 0391_kafka_freeze.sh: the Kafka broker is frozen (SIGSTOP) for 10 s, well past the
# 2 s delivery timeout, in the middle of a sale, then resumed (SIGCONT). In-flight
# produce requests end NOT_PERSISTED or POSSIBLY_PERSISTED (DESIGN.md 8): the front
# fences or leaves the purchase to the reconciler, answers 503, and nothing it
# answered 202 may vanish. A private broker (scripts/stack.sh, own state dir and spare
# ports), never the shared dev broker; the case still holds the `kafka` resource lock.
# fault: private single broker frozen (SIGSTOP) 10 s mid-sale, past the 2 s delivery timeout
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init kafka_freeze
ft_private_kafka
V=$(ft_voucher 400)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_buy_loop f1 "$V" 100001 4 6 0.3
sleep 3
ft_log "freezing the broker: $(ft_kafka_ctl kafka-freeze 2>&1 | tail -n 1)"
sleep 10
ft_log "thawing the broker: $(ft_kafka_ctl kafka-thaw 2>&1 | tail -n 1)"
ft_fault_over
sleep 6
ft_buy_loop_stop
ft_log "answers during the run: $(awk '{print $2}' "$FT_WORK/results.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
n=$(awk '$2 == 503' "$FT_WORK/results.txt" | wc -l)
((n > 0)) && ft_ok "$n purchases answered 503 around the freeze" || ft_fail "no 503 around the freeze"
ft_alive f1 && ft_ok "front survived the freeze" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived the freeze" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
ft_settle 90 || ft_fail "202s not decided after the freeze"
ft_reconcile 120 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V"
ft_buy f1 "$V" 200001 500 8
ft_settle 60 || ft_fail "202s after the freeze not decided"
ft_reconcile 90 || ft_fail "reconciler after the last burst: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
