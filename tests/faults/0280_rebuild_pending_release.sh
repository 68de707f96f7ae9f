#!/usr/bin/env bash
# 0280_rebuild_pending_release.sh: a rebuild meets closed orders whose Redis release a
# crash left undone (consumer killed at closer.after_db_commit, DESIGN.md 8 "rebuild", 13).
# The rebuild sets Redis stock from the DB (which counts the released units) and records a
# `T:x` (by rebuild) for each pending release, so the reconciler's later release gives
# nothing back twice: Redis stock = DB stock, never above it.
# fault: consumer SIGKILLed by closer.after_db_commit=exit, then a rebuild from the DB before the reconciler
# Buckets: 1: its checks read bucket 0's keys.
. "$(dirname "$0")/../support/ft.sh"
ft_init rebuild_pending_release
V=$(ft_voucher 4)
ft_front f1
# c0 creates the 4 orders (its closer idle: 1 h); only once all 4 are past their deadline
# does c1 start, so its first closer batch closes all 4 before the failpoint kills it
# (a closer running while they were created closed 3 of 4 in its first batch once, in CI).
ft_consumer c0 SECKILL_PAY_TIMEOUT_S=2 SECKILL_CLOSE_INTERVAL_MS=3600000
ft_buy f1 "$V" 1 4 4
ft_settle 60 || ft_fail "purchases not decided"
ft_stop c0
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1 AND pay_deadline < NOW(3)" 4 100 0.1 ||
        ft_log "not all 4 orders past their deadline after 10 s"
ft_consumer c1 SECKILL_PAY_TIMEOUT_S=2 SECKILL_CLOSE_INTERVAL_MS=200 SECKILL_FAILPOINTS="closer.after_db_commit=exit"
ft_wait_exit c1 30 && ft_ok "consumer killed at closer.after_db_commit" || ft_fail "consumer still alive"
closed=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 4")
ft_eq "$closed" 4 "every order CLOSED in the DB"
ft_eq "$(ft_rcli get "$(ft_key "$V" stock)")" 0 "Redis not released"
# A consumer without the failpoint catches the group up (the rebuild waits for it).
ft_consumer c2 SECKILL_PAY_TIMEOUT_S=2 SECKILL_CLOSE_INTERVAL_MS=200
ft_fault_over
ft_wait_lag0 60 || ft_fail "group lag"
"$FT_BIN/seckill-admin" voucher preheat "$V" --rebuild-from-db --wait-ms 60000 >"$FT_WORK/rebuild.log" 2>&1 ||
        ft_fail "rebuild: $(tail -n 3 "$FT_WORK/rebuild.log")"
ft_eq "$(ft_rcli get "$(ft_key "$V" stock)")" 4 "rebuild: Redis stock = DB stock"
ft_eq "$(ft_rcli hgetall "$(ft_key "$V" trace)" | grep -c '"by":"rebuild","restored":0')" 4 "rebuild recorded the 4 pending releases"
timeout 120 "$FT_BIN/seckill-reconciler" --grace-seconds "$FT_GRACE_S" >"$FT_WORK/recon.a.log" 2>&1
ft_eq "$(ft_rcli get "$(ft_key "$V" stock)")" 4 "after the reconciler: still 4 (no unit released twice)"
ft_stop c2
ft_consumer c3 SECKILL_PAY_TIMEOUT_S=600
ft_buy f1 "$V" 11 6 6
ft_settle 60 || ft_fail "second round not decided"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1")" 4 "4 units sold again, no more"
ft_reconcile 60 || ft_fail "reconciler: last exit $FT_RECON_RC"
ft_check "$V"
ft_finish
