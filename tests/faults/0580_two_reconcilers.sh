#!/usr/bin/env bash
# 0580_two_reconcilers.sh: two `seckill-reconciler --repair` runs start at the same time
# while there is real work: DEDUCTs left undecided by a front killed after the deduct
# (front.after_deduct=exit) and Redis drift (stock lowered, a buyer removed from the
# users hash). The run lock (GET_LOCK per database and prefix) lets one work while the
# other says so and exits 0; together they re-drive each purchase once and repair
# once. Then the sale goes on and sells out exactly.
# fault: two reconcilers --repair at once, with re-drives and Redis drift to repair
# Buckets: 1: its drift is written into bucket 0's keys.
. "$(dirname "$0")/../support/ft.sh"
ft_init two_reconcilers
V=$(ft_voucher 60)
ft_consumer c1
ft_front f1
ft_buy f1 "$V" 1 20 8
ft_front f2 SECKILL_FAILPOINTS="front.after_deduct=exit"
ft_buy f2 "$V" 1001 8 8
ft_wait_exit f2 10 && ft_ok "front f2 died at front.after_deduct" || ft_fail "front f2 still alive"
ft_settle 30 || ft_fail "202s not decided"
# Drift: two units missing from Redis stock, one buyer missing from the users hash.
ft_rcli decrby "$(ft_key "$V" stock)" 2 >/dev/null
ft_rcli hdel "$(ft_key "$V" users)" "$(ft_sql "SELECT user_id FROM tb_voucher_order LIMIT 1")" >/dev/null
UNDECIDED=$(ft_rcli hkeys "$(ft_key "$V" trace)" | grep -c '^[0-9]*$')
ft_log "trace entries: $UNDECIDED DEDUCTs, $(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome") outcomes"
sleep $((FT_GRACE_S + 1))
for i in a b; do
        timeout 120 "$FT_BIN/seckill-reconciler" --repair --grace-seconds "$FT_GRACE_S" >"$FT_WORK/recon.$i.log" 2>&1 &
        eval "R_$i=\$!"
done
wait "$R_a"; RC_A=$?
wait "$R_b"; RC_B=$?
ft_log "concurrent reconcilers: exit $RC_A and $RC_B"
[[ $RC_A =~ ^[012]$ && $RC_B =~ ^[012]$ ]] && ft_ok "both exit 0, 1 or 2" || ft_fail "exit $RC_A / $RC_B"
if grep -q "holds the lock" "$FT_WORK/recon.a.log" "$FT_WORK/recon.b.log"; then
        ft_ok "one run saw the other's lock"
else
        ft_log "both runs did work (they did not overlap?)"
fi
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
# Each re-driven purchase was published once per re-drive, and decided once.
ft_eq "$(ft_sql "SELECT COUNT(*) FROM (SELECT user_id FROM tb_seckill_outcome GROUP BY user_id HAVING COUNT(*) > 1) d")" 0 \
        "one outcome per buyer"
ft_check "$V"
ft_buy f1 "$V" 2001 80 8
ft_settle 60 || ft_fail "202s after the repair not decided"
ft_reconcile 60 || ft_fail "reconciler after the second burst: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_finish
