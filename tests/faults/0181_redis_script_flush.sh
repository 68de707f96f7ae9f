#!/usr/bin/env bash
# 0181_redis_script_flush.sh: SCRIPT FLUSH on a private Redis, three times in the middle
# of a sale (DESIGN.md 4: EVALSHA, NOSCRIPT -> SCRIPT LOAD and retry once). The sale
# goes on, sells out exactly, every 202 is accounted for and Redis = DB.
# fault: SCRIPT FLUSH three times mid-sale (private Redis)
# Buckets: 4 (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
ft_init redis_script_flush
ft_private_redis
V=$(ft_voucher 80 4)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_buy f1 "$V" 1001 160 4 &
BUYER=$!
for i in 1 2 3; do
        sleep 0.7
        ft_log "SCRIPT FLUSH: $(ft_rcli script flush)"
done
ft_fault_over
wait "$BUYER"
n=$(awk '$2 >= 500' "$FT_WORK/results.txt" | wc -l)
ft_eq "$n" 0 "no 5xx answer across the flushes (NOSCRIPT reloads)"
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
