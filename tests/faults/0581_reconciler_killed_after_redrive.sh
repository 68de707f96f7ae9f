#!/usr/bin/env bash
# 0581_reconciler_killed_after_redrive.sh: the reconciler dies (failpoint
# reconciler.after_redrive=exit, SIGKILL) right after re-driving a DEDUCT that a killed
# front never published, before its bookkeeping; the next passes must converge without
# deciding any purchase twice (DESIGN.md 7-8 re-drive bookkeeping, 11).
# fault: reconciler SIGKILLed right after a re-drive (reconciler.after_redrive=exit)
# Buckets: 4 (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
ft_init reconciler_killed_after_redrive
V=$(ft_voucher 60 4)
ft_consumer c1
ft_front f1
ft_buy f1 "$V" 1 20 8
ft_front f2 SECKILL_FAILPOINTS="front.after_deduct=exit"
ft_buy f2 "$V" 1001 8 8
ft_wait_exit f2 10 && ft_ok "front f2 died at front.after_deduct" || ft_fail "front f2 still alive"
ft_settle 30 || ft_fail "202s not decided"
sleep $((FT_GRACE_S + 1))
SECKILL_FAILPOINTS="reconciler.after_redrive=exit" timeout 120 "$FT_BIN/seckill-reconciler" --repair \
        --grace-seconds "$FT_GRACE_S" >"$FT_WORK/recon.killed.log" 2>&1
rc=$?
ft_eq "$rc" 137 "reconciler killed at reconciler.after_redrive"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM (SELECT user_id FROM tb_seckill_outcome GROUP BY user_id HAVING COUNT(*) > 1) d")" 0 \
        "one outcome per buyer"
ft_check "$V"
ft_buy f1 "$V" 2001 80 8
ft_settle 60 || ft_fail "202s after the repair not decided"
ft_reconcile 60 || ft_fail "reconciler after the second burst: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_finish
