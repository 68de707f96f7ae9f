#!/usr/bin/env bash
# 0450_db_grants_columns.sh: one database user per binary with column grants (DESIGN.md 15
# "Least privilege in the book of record"), with the real MariaDB, front, consumer and
# reconciler. Before, `db grants` printed one app user with SELECT, INSERT, UPDATE on
# every table for every binary, host '%' by default: the internet-facing front could set
# prices and mark refunds done.
#   - `db grants` without --host exits 2 (no '%' default);
#   - the four users of ft_least_privilege (admin, front, consumer, reconciler, host
#     127.0.0.1); each binary runs as its own: a priced sale (6 UNPAID orders), a payment
#     callback applied (the front inserts tb_payment and updates the order), a refund_due
#     callback, a cancel (order status, stock back), the consumer's closer closing an
#     overdue order, the reconciler's --repair, `seckill-admin verify`; no access-denied
#     line in any log;
#   - what the front's user may not do, each an access-denied error: change a voucher's
#     price, insert a voucher, change an order's amount, mark a refund done (UPDATE
#     tb_payment.refunded_at), insert a tb_payment row with refunded_at set, change
#     init_stock, set a degrade switch's mode; the consumer may not insert a tb_payment
#     row, the reconciler may not update an order; `seckill-admin payment refunded` (the
#     admin user) marks the refund done.
. "$(dirname "$0")/../support/ft.sh"
ft_init db_grants_columns

"$FT_BIN/seckill-admin" db grants --users front >/dev/null 2>"$FT_WORK/nohost.err"
ft_eq "$?" 2 "db grants without --host: exit 2"
grep -q "host part of the accounts is required" "$FT_WORK/nohost.err" && ft_ok "it says --host is required" ||
        ft_fail "no --host: $(cat "$FT_WORK/nohost.err")"

ft_least_privilege
as() { mysql --no-defaults -u"$FT_DBU$1" -p"${FT_DBPW[$1]}" -h"$FT_MYSQL_HOST" -P"$FT_MYSQL_PORT" --protocol=TCP \
        -N -B "$FT_DB" -e "$2" 2>&1; }
denied() {      # ROLE SQL LABEL
        local out
        if out=$(as "$1" "$2"); then
                ft_fail "$3: succeeded"
        elif grep -qE 'ERROR (1142|1143)' <<<"$out"; then
                ft_ok "$3: denied ($(grep -m1 '^ERROR' <<<"$out" | cut -c1-100))"
        else
                ft_fail "$3: failed for another reason: $out"
        fi
}

FT_PAY_SECRET=0450-secret-$RANDOM-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
ft_front f SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 SECKILL_CLOSE_INTERVAL_MS=200
V=$(ft_voucher 10 1 500 CNY)
ft_buy f "$V" 1 6 6
ft_settle 60 || ft_die "purchases not settled"
order_of() { awk -v u="$1" '$1 == u {o = $2} END {print o}' "$FT_WORK/accepted.tsv"; }
o1=$(order_of 1) o2=$(order_of 2) o3=$(order_of 3) o4=$(order_of 4)
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1 AND amount_minor = 500")" 6 \
        "six UNPAID orders of 500 written by the consumer's user"

# The front's user at work: payment applied, refund due, cancel.
ft_eq "$(ft_pay "${FT_ADDR[f]}" "$o1" T1 500 | cut -d' ' -f1)" 200 "payment callback applied as the front's user: 200"
ft_eq "$(ft_sql "SELECT status FROM tb_voucher_order WHERE id = $o1")" 2 "order 1 PAID"
ft_eq "$(ft_pay "${FT_ADDR[f]}" "$o2" T2 499 | cut -d' ' -f1)" 422 "a wrong amount: 422 (refund due)"
ft_eq "$(ft_sql "SELECT result, refunded_at IS NULL FROM tb_payment WHERE provider_txn_id = 'T2'" | tr '\t' ' ')" "2 1" \
        "tb_payment T2: refund_due, not refunded"
ft_eq "$(ft_cancel f 3 "$o3" | cut -d' ' -f1)" 200 "cancel as the front's user: 200"
ft_eq "$(ft_sql "SELECT status FROM tb_voucher_order WHERE id = $o3")" 3 "order 3 CANCELLED"
# The consumer's closer, as its user: an overdue order closed.
ft_sql "UPDATE tb_voucher_order SET pay_deadline = NOW(3) - INTERVAL 1 HOUR WHERE id = $o4"
ft_wait_sql "SELECT status FROM tb_voucher_order WHERE id = $o4" 4 300 0.2 || ft_fail "order 4 not closed by the consumer"
ft_eq "$(ft_sql "SELECT status FROM tb_voucher_order WHERE id = $o4")" 4 "order 4 CLOSED by the consumer's user"
ft_reconcile 90 || ft_fail "reconciler --repair as its user: exit $FT_RECON_RC"
ft_check "$V"
ft_eq "$(cat "$FT_WORK"/f.log "$FT_WORK"/c.log "$FT_WORK"/recon.*.log | grep -ciE 'command denied|access denied')" 0 \
        "no access-denied error in the front's, consumer's and reconciler's logs"

# What the front's user may not do.
denied front "UPDATE tb_seckill_voucher SET price_minor = 1 WHERE voucher_id = $V" "front: change a price"
denied front "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time, end_time, price_minor) VALUES (1, 1, NOW(), NOW(), 0)" \
        "front: insert a voucher"
denied front "UPDATE tb_voucher_order SET amount_minor = 1 WHERE id = $o2" "front: change an order's amount"
denied front "UPDATE tb_payment SET refunded_at = NOW(3), refund_ref = 'x' WHERE provider_txn_id = 'T2'" "front: mark a refund done"
denied front "INSERT INTO tb_payment (provider_txn_id, order_id, amount_minor, currency, result, refunded_at) VALUES ('T9', 1, 1, 'CNY', 2, NOW(3))" \
        "front: insert a payment already refunded"
denied front "UPDATE tb_seckill_stock SET init_stock = init_stock + 1 WHERE voucher_id = $V" "front: change init_stock"
denied front "UPDATE tb_seckill_switch SET mode = 'db_only' WHERE scope = 0" "front: set a switch's mode"
denied consumer "INSERT INTO tb_payment (provider_txn_id, order_id, amount_minor, currency, result) VALUES ('T9', 1, 1, 'CNY', 1)" \
        "consumer: insert a payment"
denied reconciler "UPDATE tb_voucher_order SET status = 2 WHERE id = $o2" "reconciler: update an order"
ft_eq "$(ft_sql "SELECT price_minor FROM tb_seckill_voucher WHERE voucher_id = $V")" 500 "the price is still 500"
# The admin marks the refund done.
"$FT_BIN/seckill-admin" payment refunded --txn T2 --ref R2 >"$FT_WORK/refunded.log" 2>&1
ft_eq "$?" 0 "seckill-admin payment refunded as the admin user"
ft_eq "$(ft_sql "SELECT refunded_at IS NOT NULL FROM tb_payment WHERE provider_txn_id = 'T2'")" 1 "T2 refunded"
ft_finish
