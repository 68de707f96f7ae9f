#!/usr/bin/env bash
# 0410_order_lifecycle.sh: the order lifecycle of DESIGN.md 3 and 13 end to end with the
# real front, consumer (its closer loop), Redis, Kafka and MariaDB. v5: an order is paid
# only by the payment provider's signed callback (ft_pay; the buyer's /pay is 404): pay
# before the deadline (and its repeat), another user's cancel is 404, pay then cancel
# (409 10022), cancel then pay (409 10021, refund_due), the closer closes an unpaid order
# and releases its unit, the same user buys again after the close, the released units are
# bought by other users, pay after the deadline with no closer running (409 10021, closed
# on the spot by the front, refund_due late), and at the end the invariants
# (seckill-admin verify: 1, 2, 3, 4, 6).
. "$(dirname "$0")/../support/ft.sh"
ft_init order_lifecycle

TIMEOUT_S=20  # pay deadline: the steps up to the cancel must fit in it (8 s did not at load 15 on Sentinel)
FT_PAY_SECRET=0410-secret-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
ft_front f SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_consumer c SECKILL_PAY_TIMEOUT_S=$TIMEOUT_S SECKILL_CLOSE_INTERVAL_MS=200
V=$(ft_voucher 3)

# act ACTION USER ORDER: POST /orders/ORDER/ACTION; prints "CODE BODY". pay ORDER [TXN]:
# the provider's signed callback for ORDER (amount 0 CNY, the voucher's price).
pay() { ft_pay "${FT_ADDR[f]}" "$1" "${2:-txn-$1}" 0; }
act() {
        local out
        out=$(curl -s -m 20 -w '\n%{http_code}' -X POST -H "X-User-Id: $2" \
                "http://${FT_ADDR[f]}/api/v1/orders/$3/$1")
        printf '%s %s\n' "${out##*$'\n'}" "$(tr -d '\n' <<<"${out%$'\n'*}")"
}
me() { curl -s -m 10 -H "X-User-Id: $1" "http://${FT_ADDR[f]}/api/v1/vouchers/$V/orders/me"; }
order_of() { awk -v u="$1" '$1 == u {o = $2} END {print o}' "$FT_WORK/accepted.tsv"; }
trace_of() { awk -v u="$1" '$1 == u {t = $3} END {print t}' "$FT_WORK/accepted.tsv"; }
status_of() { ft_sql "SELECT status FROM tb_voucher_order WHERE id = $1"; }
rstock() { ft_rcli get "$(ft_key "$V" stock)"; }
dstock() { ft_sql "SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = $V"; }
restore_type() { ft_sql "SELECT business_type FROM tb_voucher_reconcile_log WHERE trace_id = $1 AND log_type = 1"; }
in_users() { ft_rcli hexists "$(ft_key "$V" users)" "$1"; }
wait_status() { # ORDER STATUS TIMEOUT_S
        local i
        for ((i = 0; i < $3 * 10; i++)); do
                [[ $(status_of "$1") == "$2" ]] && return 0
                sleep 0.1
        done
        return 1
}

ft_buy f "$V" 1 3 3
ft_settle 60 || ft_fail "purchases not settled"
o1=$(order_of 1) o2=$(order_of 2) o3=$(order_of 3)
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1 AND pay_deadline > create_time")" 3 \
        "three orders created UNPAID with a deadline"

# The buyer cannot pay (v5): POST /orders/{id}/pay is no route.
ft_eq "$(act pay 1 "$o1" | cut -d' ' -f1)" 404 "buyer's POST /orders/{id}/pay: 404 (no route)"
ft_eq "$(status_of "$o1")" 1 "order 1 still UNPAID after the buyer's /pay"
# Pay before the deadline (the provider's callback), and its repeat.
ft_eq "$(pay "$o1")" "200 {\"code\":0,\"orderId\":\"$o1\",\"orderStatus\":\"PAID\"}" "pay before the deadline: 200 PAID"
ft_eq "$(pay "$o1" | cut -d' ' -f1)" 200 "the same txn again: 200"
ft_eq "$(status_of "$o1")" 2 "order 1 is PAID in the DB"
ft_eq "$(ft_sql "SELECT result, reason IS NULL FROM tb_payment WHERE provider_txn_id = 'txn-$o1'" | tr '\t' ' ')" "1 1" \
        "tb_payment: one applied row"
ft_eq "$(act cancel 2 "$o1" | cut -d' ' -f1)" 404 "another user's cancel: 404"
# Bad requests: nothing changes.
code() { curl -s -o /dev/null -m 10 -w '%{http_code}' "$@"; }
ft_eq "$(code -X GET -H 'X-User-Id: 1' "http://${FT_ADDR[f]}/api/v1/orders/$o1/cancel")" 405 "GET /cancel: 405"
ft_eq "$(code -X POST -H 'X-User-Id: 1' "http://${FT_ADDR[f]}/api/v1/orders/0$o1/cancel")" 400 "non-canonical order id: 400"
ft_eq "$(code -X POST "http://${FT_ADDR[f]}/api/v1/orders/$o1/cancel")" 400 "no X-User-Id: 400"
ft_eq "$(code -X POST -H 'X-User-Id: 1' "http://${FT_ADDR[f]}/api/v1/orders/$o1/refund")" 404 "unknown action: 404"
ft_eq "$(code -X POST -H 'X-User-Id: 1' "http://${FT_ADDR[f]}/api/v1/orders/9223372036854775807/cancel")" 404 "unknown order: 404"
# Pay then cancel.
ft_eq "$(act cancel 1 "$o1" | cut -c1-17)" '409 {"code":10022' "cancel after pay: 409 10022"
ft_eq "$(status_of "$o1")" 2 "order 1 still PAID"
ft_eq "$(me 1 | sed -n 's/.*"state":"\([A-Z]*\)".*"orderStatus":"\([A-Z]*\)".*/\1 \2/p')" "CREATED PAID" "orders/me: CREATED, PAID"

# Cancel then pay.
ft_eq "$(act cancel 2 "$o2" | cut -d' ' -f1-2)" "200 {\"code\":0,\"orderId\":\"$o2\",\"orderStatus\":\"CANCELLED\"}" "cancel: 200 CANCELLED"
ft_eq "$(act cancel 2 "$o2" | cut -d' ' -f1)" 200 "cancel again: 200"
ft_eq "$(pay "$o2" | cut -c1-17)" '409 {"code":10021' "pay after cancel: 409 10021"
ft_eq "$(ft_sql "SELECT result, reason FROM tb_payment WHERE provider_txn_id = 'txn-$o2'" | tr '\t' ' ')" "2 cancelled" \
        "tb_payment: refund_due cancelled"
ft_eq "$(status_of "$o2")" 3 "order 2 is CANCELLED"
ft_eq "$(restore_type "$(trace_of 2)")" 4 "RESTORE row of the cancel (business_type 4, original trace)"
# Order 3 may already be closed (its TIMEOUT_S deadline passes during the steps above
# when they are slow, e.g. on a Cluster through sk-rcli): then its unit is back too.
closed3=0; [[ $(status_of "$o3") == 4 ]] && closed3=1
ft_eq "$(dstock)" $((1 + closed3)) "DB stock got the cancelled unit back"
ft_eq "$(rstock)" $((1 + closed3)) "Redis stock got the cancelled unit back"
ft_eq "$(in_users 2)" 0 "user 2 released in Redis"
ft_eq "$(ft_rcli hget "$(ft_key "$V" trace)" "$(trace_of 2):x" | grep -c '"by":"cancel","restored":1')" 1 "T:x of the cancel"
ft_eq "$(me 2 | sed -n 's/.*"state":"\([A-Z]*\)".*"orderStatus":"\([A-Z]*\)".*/\1 \2/p')" "CLOSED CANCELLED" "orders/me after cancel: CLOSED, CANCELLED"

# The closer closes order 3 after its deadline and releases its unit.
wait_status "$o3" 4 $((TIMEOUT_S + 10)) && ft_ok "order 3 CLOSED by the closer" || ft_fail "order 3 not closed: $(status_of "$o3")"
ft_eq "$(restore_type "$(trace_of 3)")" 5 "RESTORE row of the close (business_type 5)"
for ((i = 0; i < 50; i++)); do [[ $(rstock) == 2 ]] && break; sleep 0.1; done
ft_eq "$(rstock)" 2 "Redis stock got the closed unit back"
ft_eq "$(dstock)" 2 "DB stock got the closed unit back"
ft_eq "$(in_users 3)" 0 "user 3 released in Redis"
ft_eq "$(pay "$o3" | cut -c1-17)" '409 {"code":10021' "pay after the close: 409 10021"
ft_eq "$(me 3 | sed -n 's/.*"state":"\([A-Z]*\)".*"orderStatus":"\([A-Z]*\)".*/\1 \2/p')" "CLOSED CLOSED" "orders/me after close: CLOSED, CLOSED"
get=$(curl -s -m 10 -H "X-User-Id: 3" "http://${FT_ADDR[f]}/api/v1/orders/$o3")
ft_eq "$(sed -n 's/.*"orderStatus":"\([A-Z]*\)".*/\1/p' <<<"$get")" CLOSED "GET /orders/{id}: orderStatus CLOSED"
[[ $get == *'"payDeadline":"20'* ]] && ft_ok "GET /orders/{id} has payDeadline" || ft_fail "no payDeadline: $get"

# The same user buys again after the close; the released units are sold to others.
ft_buy f "$V" 3 1
ft_buy f "$V" 4 1
ft_buy f "$V" 5 1
ft_settle 60 || ft_fail "second purchases not settled"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND user_id IN (3, 4) AND status = 1")" 2 \
        "user 3 again and user 4 got the released units"
ft_eq "$(grep -c '^5 409 .*10005' "$FT_WORK/results.txt")" 1 "user 5: sold out"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND user_id = 3")" 2 "user 3 has a closed and an active order"

# Pay after the deadline with no closer running: the front closes it on the spot.
ft_stop c 15
o3b=$(order_of 3)
sleep $((TIMEOUT_S + 1))
ft_eq "$(status_of "$o3b")" 1 "no closer: order still UNPAID past its deadline"
ft_eq "$(pay "$o3b" | cut -c1-17)" '409 {"code":10021' "pay after the deadline: 409 10021"
ft_eq "$(ft_sql "SELECT result, reason FROM tb_payment WHERE provider_txn_id = 'txn-$o3b'" | tr '\t' ' ')" "2 late" \
        "tb_payment: refund_due late"
ft_eq "$(status_of "$o3b")" 4 "closed on the spot by the pay"
ft_eq "$(restore_type "$(trace_of 3)")" 5 "its RESTORE row (business_type 5)"
ft_eq "$(ft_sql "SELECT paid_at IS NULL FROM tb_voucher_order WHERE id = $o3b")" 1 "no payment recorded"

# The closer finishes user 4's order; then everything is consistent.
mport=$(ft_free_port)
ft_consumer c2 SECKILL_PAY_TIMEOUT_S=$TIMEOUT_S SECKILL_CLOSE_INTERVAL_MS=200 -- --metrics-addr "127.0.0.1:$mport"
wait_status "$(order_of 4)" 4 30 || ft_fail "order 4 not closed"
for ((i = 0; i < 50; i++)); do [[ $(rstock) == 2 ]] && break; sleep 0.1; done
cm=$(curl -s -m 5 "http://127.0.0.1:$mport/metrics")
ft_eq "$(awk '$1 == "seckill_orders_closed_total" {print $2}' <<<"$cm")" 1 "consumer metric: one order closed"
grep -q '^seckill_orders_release_lag_seconds_count 1' <<<"$cm" && ft_ok "consumer metric: release lag observed" ||
        ft_fail "release lag metric: $(grep release_lag <<<"$cm" | tail -n 2)"
grep -q '^seckill_orders_unpaid_overdue_oldest_seconds ' <<<"$cm" && ft_ok "consumer metric: overdue gauge" || ft_fail "no overdue gauge"
fm=$(curl -s -m 5 "http://${FT_OPS[f]}/metrics")
ft_eq "$(awk '$1 == "seckill_orders_paid_total" {print $2}' <<<"$fm") $(awk '$1 == "seckill_orders_cancelled_total" {print $2}' <<<"$fm") $(awk '$1 == "seckill_orders_closed_total" {print $2}' <<<"$fm")" \
        "1 1 1" "front metrics: paid 1, cancelled 1, closed on the spot 1"
ft_eq "$(rstock) $(dstock)" "2 2" "Redis and DB stock: the two released units"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)")" 1 "one active order (user 1, PAID)"
# SECKILL_PAY_TIMEOUT_S=0: orders are created PAID, no deadline; the closer leaves them.
ft_stop c2
ft_consumer c3 SECKILL_PAY_TIMEOUT_S=0 SECKILL_CLOSE_INTERVAL_MS=200
V2=$(ft_voucher 2)
ft_buy f "$V2" 7 1
ft_settle 60 || ft_fail "PAID-at-creation purchase not settled"
o7=$(order_of 7)
ft_eq "$(ft_sql "SELECT status, pay_deadline IS NULL, paid_at IS NOT NULL FROM tb_voucher_order WHERE id = $o7" | tr '\t' ' ')" \
        "2 1 1" "timeout 0: created PAID, no deadline, paid_at set"
ft_eq "$(pay "$o7" | cut -c1-17)" '409 {"code":10024' "timeout 0: already PAID, a callback is a duplicate (409 10024)"
ft_eq "$(act cancel 7 "$o7" | cut -c1-17)" '409 {"code":10022' "timeout 0: cancel is 409 10022"
sleep 1
ft_eq "$(status_of "$o7")" 2 "timeout 0: the closer leaves it PAID"
"$FT_BIN/seckill-admin" verify "$V2" >"$FT_WORK/verify.$V2.log" 2>&1 && ft_ok "verify $V2" ||
        ft_fail "verify $V2: $(tr '\n' ' ' <"$FT_WORK/verify.$V2.log")"

ft_check "$V"
grep -q '4 cancelled/closed: RESTORE, unit  PASS' "$FT_WORK/verify.$V.log" && ft_ok "verify: invariant 4 PASS" || ft_fail "verify invariant 4"
grep -q '6 never both paid and closed       PASS' "$FT_WORK/verify.$V.log" && ft_ok "verify: invariant 6 PASS" || ft_fail "verify invariant 6"
# verify can fail: a PAID order forced to CLOSED without its release breaks 4 and 6.
ft_sql "UPDATE tb_voucher_order SET status = 4 WHERE id = $o1"
"$FT_BIN/seckill-admin" verify "$V" >"$FT_WORK/verify.bad.log" 2>&1
ft_eq "$?" 1 "verify exits 1 on a corrupted order"
grep -q '4 cancelled/closed: RESTORE, unit  FAIL' "$FT_WORK/verify.bad.log" && ft_ok "verify: invariant 4 FAIL" || ft_fail "verify 4 did not fail"
grep -q '6 never both paid and closed       FAIL' "$FT_WORK/verify.bad.log" && ft_ok "verify: invariant 6 FAIL" || ft_fail "verify 6 did not fail"
ft_finish
