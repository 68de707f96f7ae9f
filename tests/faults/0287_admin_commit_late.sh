#!/usr/bin/env bash
# 0287_admin_commit_late.sh: seckill-admin's voucher create and add-stock whose COMMIT
# is still being applied when the link drops (DESIGN.md 16 "Answers after an unknown
# COMMIT" (b): "the DB-only path, voucher create and add-stock alike"). The COMMIT proxy
# (support/sk_sqlproxy.py, action late_commit) drops the admin's link as the COMMIT
# arrives and forwards it to MariaDB 1.5 s later. The admin's resolution read finds
# nothing yet and runs the transaction again with the same keys; the re-run waits on the
# lost transaction's locks and then meets
#   voucher create: the minted id's primary key (before: "Duplicate entry", exit 2, for a
#     voucher that exists) -> reads again with a locking read, reports the voucher it
#     made (exit 0, its id printed, one voucher row with its bucket and switch rows);
#   add-stock: its own request id (before: "applied":false, "request id already
#     applied; nothing changed" for the run that applied it) -> a duplicate request id
#     whose voucher and amount match is success: "applied":true, the stock added once.
# Then the voucher sells out through a front; every invariant of DESIGN.md 9 holds.
# No failpoint: the proxy holds the COMMIT on the wire.
# fault: seckill-admin voucher create and add-stock whose COMMIT is forwarded 1.5 s after the proxy dropped the admin's link: the re-run meeting its own key reports the voucher it made and "applied":true, never a failure
# Buckets: 2
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_db.sh"
ft_init admin_commit_late
ft_sqlproxy px
ft_consumer c1
ft_front f1
now=$(date +%s)
n0=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_voucher")

# voucher create
ft_eq "$(ft_sqlproxy_ctl px "arm late_commit 1500 0 1 INSERT INTO tb_seckill_voucher")" ok "proxy armed (create)"
out=$(SECKILL_MYSQL_URL="${FT_SQLPROXY_URL[px]}" "$FT_BIN/seckill-admin" voucher create --stock 4 --buckets 2 \
        --begin "$((now - 60))" --end "$((now + 7200))" --preheat 2>"$FT_WORK/create.err")
rc=$?
ft_eq "$rc" 0 "voucher create exits 0 ($(tr '\n' ' ' <"$FT_WORK/create.err" | cut -c1-300))"
V=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out" | tail -n 1)
[[ -n $V ]] && ft_ok "voucher create printed the voucher it made: $V" || ft_die "voucher create printed no voucherId: $out"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_voucher") $(ft_sql "SELECT COUNT(*) FROM tb_seckill_voucher WHERE voucher_id = $V")" \
        "$((n0 + 1)) 1" "one voucher row, the printed one"
ft_eq "$(ft_sql "SELECT COUNT(*), SUM(init_stock) FROM tb_seckill_stock WHERE voucher_id = $V" | tr '\t' ' ')" "2 4" "its 2 bucket rows, 4 units"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_switch WHERE scope = $V")" 1 "its switch row"
grep -q 'voucher_create_commit_unknown.*found=0' "$FT_WORK/create.err" && ft_ok "the first resolution read found nothing (the COMMIT still held)" ||
        ft_fail "no voucher_create_commit_unknown found=0 (the interleaving was not met)"
grep -q 'voucher_create_rerun_resolved.*found=1' "$FT_WORK/create.err" && ft_ok "the re-run met the id's key and resolved again: found" ||
        ft_fail "no voucher_create_rerun_resolved found=1"
FT_VOUCHERS+=("$V")

# add-stock
ft_eq "$(ft_sqlproxy_ctl px "arm late_commit 1500 0 1 INSERT IGNORE INTO tb_seckill_stock_change")" ok "proxy armed (add-stock)"
rid="r0287-$RANDOM$RANDOM"
out=$(SECKILL_MYSQL_URL="${FT_SQLPROXY_URL[px]}" "$FT_BIN/seckill-admin" voucher add-stock "$V" --stock 2 \
        --request-id "$rid" 2>"$FT_WORK/addstock.err")
rc=$?
ft_eq "$rc" 0 "add-stock exits 0 ($(tr '\n' ' ' <"$FT_WORK/addstock.err" | cut -c1-300))"
[[ $out == *'"applied":true'* ]] && ft_ok "add-stock reports the change it made: $out" || ft_fail "add-stock: '$out', want \"applied\":true"
grep -q 'add_stock_commit_unknown.*found=0' "$FT_WORK/addstock.err" && ft_ok "the first resolution read found nothing (the COMMIT still held)" ||
        ft_fail "no add_stock_commit_unknown found=0 (the interleaving was not met)"
grep -q 'add_stock_rerun_resolved.*match=1' "$FT_WORK/addstock.err" && ft_ok "the re-run met its request id: voucher and amount match" ||
        ft_fail "no add_stock_rerun_resolved match=1"
ft_eq "$(ft_sql "SELECT init_stock FROM tb_seckill_voucher WHERE voucher_id = $V") $(ft_sql "SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = $V")" \
        "6 6" "the stock added once (init 6, stock 6)"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_stock_change WHERE request_id = '$rid'")" 1 "one stock-change row"
ft_sqlproxy_fired px 2 5 && ft_ok "the proxy fired twice" || ft_fail "the proxy did not fire twice"
# The same request id again, directly: a repeat, nothing changes.
out=$("$FT_BIN/seckill-admin" voucher add-stock "$V" --stock 2 --request-id "$rid" 2>>"$FT_WORK/addstock.err")
[[ $out == *'"applied":false'* ]] && ft_ok "the same request id again: \"applied\":false" || ft_fail "repeat: '$out'"
ft_eq "$(ft_sql "SELECT init_stock FROM tb_seckill_voucher WHERE voucher_id = $V")" 6 "still 6 units"
ft_fault_over
ft_note "create: exit 0, reported $V; add-stock: applied true, once"

ft_buy f1 "$V" 1 12 4
ft_settle 30 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_check_told "$V"
ft_finish
