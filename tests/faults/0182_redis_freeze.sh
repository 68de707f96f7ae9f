#!/usr/bin/env bash
# 0182_redis_freeze.sh: a private Redis is frozen (SIGSTOP) for 4 s in the middle of a
# sale, past the front's 1 s command timeout and the consumer's 2 s, then resumed
# (SIGCONT) with every pending command still executing. DESIGN.md 8 "Redis timeout or
# I/O error during deduct: outcome unknown: repeat the same EVALSHA (same traceId) on a
# fresh connection up to twice (a REPLAY continues the purchase); still unknown ->
# rollback.lua mode front (fences T) -> 503". The deducts that ran late must be fenced
# or continued, never lost or doubled: the sale still sells out exactly.
# fault: private Redis frozen (SIGSTOP) 4 s mid-sale, past the command timeouts
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init redis_freeze
ft_private_redis
V=$(ft_voucher 300)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_buy_loop f1 "$V" 100001 8 16 0.2
sleep 2
kill -STOP "$FT_PRIV_REDIS_PID"
ft_log "redis frozen (SIGSTOP)"
sleep 4
kill -CONT "$FT_PRIV_REDIS_PID"
ft_log "redis resumed (SIGCONT)"
ft_fault_over
sleep 3
ft_buy_loop_stop
ft_log "answers during the run: $(awk '{print $2}' "$FT_WORK/results.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
n=$(awk '$2 == 503' "$FT_WORK/results.txt" | wc -l)
((n > 0)) && ft_ok "$n purchases answered 503 around the freeze" || ft_log "no 503 around the freeze (the front waited it out)"
ft_alive f1 && ft_ok "front survived the freeze" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived the freeze" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
ft_settle 60 || ft_fail "202s not decided after the freeze"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V"
ft_buy f1 "$V" 200001 400 8
ft_settle 60 || ft_fail "202s after the freeze not decided"
ft_reconcile 90 || ft_fail "reconciler after the last burst: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
