#!/usr/bin/env bash
# 0485_dbonly_commit_late.sh: a DB-only purchase (DESIGN.md 12) whose COMMIT is still
# being applied when the link drops (DESIGN.md 16 "Answers after an unknown COMMIT" (b),
# 9 invariant 7). The COMMIT proxy (support/sk_sqlproxy.py, action late_commit) drops the
# front's link as the COMMIT arrives and forwards the COMMIT to MariaDB 1 s later, the
# transaction and its row locks alive meanwhile. The front's resolution read finds no
# outcome row yet, so the purchase runs again with the same keys; the re-run waits on the
# lost transaction's row locks and, once that COMMIT lands, meets
#   X1 (2 units left): its own outcome row's key (a duplicate key; before: 409/10006),
#   X2 (1 unit left): the now-empty bucket (sold out; before: 409/10005),
# while orders/me already shows the order. A re-run that meets a duplicate key, an
# active order or sold out resolves again with a read that waits for the row locks:
# 200 CREATED (the order is ours) or 503 PENDING, never 409; orders/me agrees. Then the
# voucher returns to Redis (degrade auto) and every invariant of DESIGN.md 9 holds, with
# invariant 7 (ft_check_told, ft_check_db_path). No failpoint: the proxy holds the COMMIT
# on the wire (marker "INSERT INTO tb_seckill_outcome").
# fault: a DB-only purchase's COMMIT forwarded 1 s after the proxy dropped the front's link (still applying while the front resolves and re-runs): the re-run meeting its own key or the empty bucket answers 200 CREATED or 503, never 409
# Buckets: 1
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_db.sh"
ft_init dbonly_commit_late
ft_sqlproxy px
V=$(ft_voucher 3 1)
ft_consumer c1
ft_front f1 SECKILL_MYSQL_URL="${FT_SQLPROXY_URL[px]}"
"$FT_BIN/seckill-admin" degrade db-only --voucher "$V" >>"$FT_WORK/admin.log" 2>&1 || ft_die "degrade db-only"
ft_wait_sql "SELECT state FROM tb_seckill_switch WHERE scope = $V" db 200 0.2 || ft_die "voucher $V never reached state db"
ft_probe_code 200 f1 "$V" 500 30 && ft_ok "the DB-only path sells (first 200 after ${FT_PROBE_S}s)" ||
        ft_die "no 200 from the DB-only path"

# late USER LEFT: one purchase whose COMMIT lands 1 s after the front lost its link.
late() {
        local user=$1 left=$2 code err before
        ft_eq "$(ft_sql "SELECT SUM(stock) FROM tb_seckill_stock WHERE voucher_id = $V")" "$left" "$left unit(s) left before user $user"
        before=$(grep -c 'event=db_only_rerun_resolved' "$FT_WORK/f1.log")
        ft_eq "$(ft_sqlproxy_ctl px "arm late_commit 1000 0 1 INSERT INTO tb_seckill_outcome")" ok "proxy armed for user $user"
        echo "$user" | ft_buy_users f1 "$V" 1 "user $user (COMMIT forwarded 1 s after the link dropped)"
        read -r code err < <(ft_answer "$user")
        case $code in
        200) ft_ok "user $user: 200 CREATED" ;;
        503) ft_ok "user $user: 503 (outcome not known in time)" ;;
        *) ft_fail "user $user: $code/$err, want 200 or 503 (never 409)" ;;
        esac
        ft_eq "$(ft_me_state f1 "$V" "$user")" CREATED "orders/me of user $user"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND user_id = $user")" 1 "one order of user $user"
        (($(grep -c 'event=db_only_rerun_resolved' "$FT_WORK/f1.log") > before)) &&
                ft_ok "user $user: the re-run resolved again ($(grep 'event=db_only_rerun_resolved' "$FT_WORK/f1.log" | tail -n 1 | grep -o 'met=[a-z_]* found=-*[0-9]*'))" ||
                ft_fail "user $user: no db_only_rerun_resolved (the interleaving was not met)"
        NOTE+="user $user ($left left): $code; "
}
NOTE=
late 1001 2
late 1002 1
ft_sqlproxy_fired px 2 5 && ft_ok "the proxy fired twice" || ft_fail "the proxy did not fire twice"
ft_fault_over
ft_note "${NOTE% }"
ft_check_db_path f1 "$V"
ft_check_told "$V"

"$FT_BIN/seckill-admin" degrade auto --voucher "$V" >>"$FT_WORK/admin.log" 2>&1 || ft_fail "degrade auto"
ft_wait_state_redis "$V" 60 || ft_fail "voucher $V not back in state redis"
ft_settle 30 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_finish
