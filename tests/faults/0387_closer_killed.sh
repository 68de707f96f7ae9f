#!/usr/bin/env bash
# 0387_closer_killed.sh: the consumer is SIGKILLed by the failpoint closer.after_db_commit
# (DESIGN.md 11, 13): the unpaid orders are CLOSED in the DB (stock back, RESTORE rows)
# but Redis is not released. The reconciler finishes the releases, exactly once (a second
# pass and a late release.lua give back nothing more); then the released units are sold
# again, the closed buyers may buy again, and the invariants hold.
# fault: consumer SIGKILLed by closer.after_db_commit=exit (orders closed in the DB, Redis not released)
# Buckets: 4 (2+1+1+1 units: the closes release into each order's own bucket) (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
ft_init closer_killed
V=$(ft_voucher 5 4)
ft_front f1
ft_consumer c1 SECKILL_PAY_TIMEOUT_S=3 SECKILL_CLOSE_INTERVAL_MS=200 SECKILL_FAILPOINTS="closer.after_db_commit=exit"
ft_buy f1 "$V" 1 5 5
ft_settle 60 || ft_fail "purchases not decided"
ft_eq "$(ft_rstock "$V")" 0 "sold out in Redis"
ft_wait_exit c1 30 && ft_ok "consumer killed at closer.after_db_commit" || ft_fail "consumer still alive"
closed=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 4")
((closed >= 1)) && ft_ok "$closed order(s) CLOSED in the DB" || ft_fail "no order closed"
ft_eq "$(ft_sql "SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = $V")" "$closed" "DB stock got the closed units back"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = $V AND log_type = 1 AND business_type = 5")" \
        "$closed" "one RESTORE row per closed order"
ft_eq "$(ft_rstock "$V")" 0 "Redis not released (crash after the DB commit)"
ft_eq "$(ft_rbuyers "$V")" 5 "buyers still in the users hash"

"$FT_BIN/seckill-admin" verify "$V" >"$FT_WORK/verify.pending.log" 2>&1
grep -q "release pending       $closed " "$FT_WORK/verify.pending.log" && ft_ok "verify reports $closed pending releases" ||
        ft_fail "verify: $(grep -i pending "$FT_WORK/verify.pending.log")"
ft_fault_over
timeout 120 "$FT_BIN/seckill-reconciler" --grace-seconds "$FT_GRACE_S" >"$FT_WORK/recon.a.log" 2>&1
ft_eq "$?" 1 "reconciler pass 1: exit 1 (found and repaired)"
ft_eq "$(grep -c '"release_finished"\|release_finished' "$FT_WORK/recon.a.log")" "$closed" "the reconciler released each closed order"
ft_eq "$(ft_rstock "$V")" "$closed" "Redis stock got the units back"
ft_eq "$(ft_rbuyers "$V")" $((5 - closed)) "closed buyers released from the users hash"
timeout 120 "$FT_BIN/seckill-reconciler" --grace-seconds "$FT_GRACE_S" >"$FT_WORK/recon.b.log" 2>&1
ft_eq "$?" 0 "reconciler pass 2: exit 0 (consistent)"
ft_eq "$(grep -c 'release_finished' "$FT_WORK/recon.b.log")" 0 "second pass: nothing to release"
ft_eq "$(ft_rstock "$V")" "$closed" "Redis stock unchanged by the second pass (released once)"

# The consumer comes back without the failpoint: any order still unpaid closes normally.
ft_consumer c2 SECKILL_PAY_TIMEOUT_S=3 SECKILL_CLOSE_INTERVAL_MS=200
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1" 0 100 0.2 ||
        ft_log "orders still unpaid after 20 s"
sleep 1
ft_eq "$(ft_rstock "$V")" 5 "every unit back in Redis"
# Sold again: the old buyers 1..5 and new ones 6..10 (10 buyers, 5 units).
ft_stop c2
ft_consumer c3 SECKILL_PAY_TIMEOUT_S=600
ft_buy f1 "$V" 1 10 5
ft_settle 60 || ft_fail "second round not decided"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1")" 5 "the released units sold again"
ft_reconcile 60 || ft_fail "reconciler after the second round: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_finish
