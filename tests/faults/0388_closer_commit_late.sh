#!/usr/bin/env bash
# 0388_closer_commit_late.sh: a closer batch (DESIGN.md 13) whose COMMIT is still being
# applied when the link drops (DESIGN.md 16 "Answers after an unknown COMMIT" (c)). The
# COMMIT proxy (support/sk_sqlproxy.py, action late_commit) drops the consumer's link as
# the batch's COMMIT arrives and forwards the COMMIT to MariaDB 1.5 s later. The closer's
# resolution read finds the orders still UNPAID ("not closed"); the COMMIT lands after
# it, and the next rounds never select those orders again (they are CLOSED). Before, their
# units stayed out of Redis until a reconciler pass; now the closer reads them once more
# after innodb_lock_wait_timeout + 1 s (5 + 1 s) and runs release.lua for those CLOSED by
# then: without any reconciler pass, Redis stock = DB stock, every closed order has its
# `T:x`, and new buyers get the units again (202). Then every invariant of DESIGN.md 9.
# No failpoint: the proxy holds the COMMIT on the wire (marker "SET status = 4, closed_at").
# fault: a closer batch's COMMIT forwarded 1.5 s after the proxy dropped the consumer's link (resolved "not closed", then applied): re-checked once after the lock wait, the units released without the reconciler and sold again
# Buckets: 1
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_db.sh"
ft_init closer_commit_late
ft_sqlproxy px
V=$(ft_voucher 4 1)
ft_front f1
ft_eq "$(ft_sqlproxy_ctl px "arm late_commit 1500 0 1 SET status = 4, closed_at")" ok "proxy armed (the closer's UPDATE)"
ft_consumer c1 SECKILL_MYSQL_URL="${FT_SQLPROXY_URL[px]}" SECKILL_PAY_TIMEOUT_S=3 SECKILL_CLOSE_INTERVAL_MS=200 \
        -- --lock-wait-timeout-s 5
ft_buy f1 "$V" 1 4 4
ft_settle 30 || ft_fail "the four purchases not decided"
ft_sqlproxy_fired px 1 30 && ft_ok "the closer's COMMIT was dropped and forwarded late" || ft_fail "the proxy never fired"
ft_fault_over
t0=$SECONDS
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 4" 4 300 0.1 &&
        ft_ok "the four orders CLOSED in the DB" || ft_fail "orders not closed"
grep -q 'event=close_commit_unknown.*closed=0' "$FT_WORK/c1.log" && ft_ok "the closer read its batch as not closed" ||
        ft_fail "no close_commit_unknown closed=0 (the interleaving was not met)"
# The release happens without any reconciler pass: Redis stock back to 4, a T:x per order.
released=
for ((i = 0; i < 200; i++)); do
        n=0
        while read -r t; do
                [[ $(ft_rcli hexists "$(ft_key "$V" trace 0)" "$t:x") == 1 ]] && n=$((n + 1))
        done < <(ft_sql "SELECT trace_id FROM tb_voucher_order WHERE voucher_id = $V AND status = 4")
        [[ $n == 4 && $(ft_rcli get "$(ft_key "$V" stock 0)") == 4 ]] && { released=$((SECONDS - t0)); break; }
        sleep 0.1
done
[[ -n $released ]] && ft_ok "every closed order released in Redis (T:x, stock 4) ${released}s after the fault, no reconciler" ||
        ft_fail "closed orders not released in Redis ($n of 4 T:x, stock $(ft_rcli get "$(ft_key "$V" stock 0)"))"
grep -q 'event=close_recheck orders=[1-9][0-9]* closed=[1-9]' "$FT_WORK/c1.log" && ft_ok "the closer's re-check released them: $(grep -o 'event=close_recheck.*' "$FT_WORK/c1.log" | head -n 1)" ||
        ft_fail "no close_recheck with closed orders"
ft_note "released by the re-check ${released:-?}s after the late COMMIT, no reconciler"
# The units are sold again (a consumer with a long pay window, directly on the DB).
ft_stop c1
ft_consumer c2 SECKILL_PAY_TIMEOUT_S=600
ft_buy f1 "$V" 100 4 4
ft_eq "$(awk '$2 == 202 && $1 >= 100' "$FT_WORK/results.txt" | wc -l)" 4 "four new buyers get the released units"
ft_settle 30 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_told "$V"
ft_finish
