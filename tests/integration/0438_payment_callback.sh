#!/usr/bin/env bash
# 0438_payment_callback.sh: every decision of the payment provider's signed callback
# (DESIGN.md 3, 13, 15) with the real front, consumer, Redis, Kafka and MariaDB, on a
# voucher priced 500 CNY (minor units; orders copy price and currency, and are UNPAID):
#   applied -> 200 PAID (tb_payment applied); the same txn again -> 200 from its row; the
#   same txn with another amount -> 409/10025 and the alert metric, the row unchanged;
#   another txn for the paid order -> 409/10024 refund_due duplicate; an UNPAID order
#   past its deadline -> 409/10021 refund_due late, closed on the spot (status 4, RESTORE
#   row, unit back in the DB and in Redis, the buyer released); a cancelled order ->
#   409/10021 cancelled; amount 499 -> 422/10023 amount; USD -> 422/10023 currency (the
#   order stays payable: a right callback then pays it); an order whose outcome is FAILED
#   -> 409/10021 failed; an order with no outcome yet -> 503 + Retry-After, nothing
#   recorded; the buyer's POST /orders/{id}/pay -> 404. Every refund_due answer carries
#   "refund":true. The closer is kept out of the way (one scan an hour, grace 0).
. "$(dirname "$0")/../support/ft.sh"
ft_init payment_callback

FT_PAY_SECRET=0438-secret-$RANDOM-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
ft_front f SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 SECKILL_CLOSE_INTERVAL_MS=3600000
V=$(ft_voucher 10 1 500 CNY)
ft_eq "$(ft_sql "SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = $V" | tr '\t' ' ')" \
        "500 CNY" "voucher row: price 500 CNY"
ft_buy f "$V" 1 6 6
ft_settle 60 || ft_die "purchases not settled"
order_of() { awk -v u="$1" '$1 == u {o = $2} END {print o}' "$FT_WORK/accepted.tsv"; }
trace_of() { awk -v u="$1" '$1 == u {t = $3} END {print t}' "$FT_WORK/accepted.tsv"; }
o1=$(order_of 1) o2=$(order_of 2) o3=$(order_of 3) o4=$(order_of 4)
status_of() { ft_sql "SELECT status FROM tb_voucher_order WHERE id = $1"; }
row_of() { ft_sql "SELECT order_id, amount_minor, currency, result, COALESCE(reason, '-') FROM tb_payment WHERE provider_txn_id = '$1'" | tr '\t' ' '; }
pay() { ft_pay "${FT_ADDR[f]}" "$@"; }
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 1 AND amount_minor = 500 AND currency = 'CNY' AND pay_deadline IS NOT NULL")" \
        6 "six orders UNPAID with amount 500 CNY copied from the voucher"

# The buyer cannot pay any more.
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H 'X-User-Id: 1' "http://${FT_ADDR[f]}/api/v1/orders/$o1/pay")" \
        404 "buyer's POST /orders/{id}/pay: 404"

# Applied, repeat, repeat with another amount.
ft_eq "$(pay "$o1" T1 500)" "200 {\"code\":0,\"orderId\":\"$o1\",\"orderStatus\":\"PAID\"}" "applied: 200 PAID"
ft_eq "$(status_of "$o1") $(ft_sql "SELECT paid_at IS NOT NULL FROM tb_voucher_order WHERE id = $o1")" "2 1" "order 1 PAID, paid_at set"
ft_eq "$(row_of T1)" "$o1 500 CNY 1 -" "tb_payment T1: applied"
ft_eq "$(pay "$o1" T1 500 | cut -d' ' -f1)" 200 "repeat of T1: 200 (from its row)"
ft_eq "$(pay "$o1" T1 400 | cut -c1-17)" '409 {"code":10025' "T1 repeated with another amount: 409 10025"
ft_eq "$(pay "$o2" T1 500 | cut -c1-17)" '409 {"code":10025' "T1 repeated for another order: 409 10025"
ft_eq "$(row_of T1)" "$o1 500 CNY 1 -" "T1's row unchanged"
ft_eq "$(metric seckill_payments_txn_reused_total)" 2 "alert metric seckill_payments_txn_reused_total = 2"
ft_eq "$(status_of "$o2")" 1 "order 2 untouched by the reused txn id"

# Duplicate: another txn for the paid order.
out=$(pay "$o1" T2 500)
ft_eq "$(cut -c1-17 <<<"$out")" '409 {"code":10024' "another txn for a paid order: 409 10024"
[[ $out == *'"refund":true'*'"reason":"duplicate"'* ]] && ft_ok "duplicate answer says refund, reason duplicate" || ft_fail "duplicate answer: $out"
ft_eq "$(row_of T2)" "$o1 500 CNY 2 duplicate" "tb_payment T2: refund_due duplicate"

# Late: order 2 past its deadline (grace 0), no closer: closed on the spot, unit released.
rstock0=$(ft_rstock "$V") dstock0=$(ft_sql "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $V AND bucket = 0")
ft_sql "UPDATE tb_voucher_order SET pay_deadline = NOW(3) - INTERVAL 1 SECOND WHERE id = $o2"
out=$(pay "$o2" T3 500)
ft_eq "$(cut -c1-17 <<<"$out")" '409 {"code":10021' "late: 409 10021"
[[ $out == *'"refund":true'*'"reason":"late"'* ]] && ft_ok "late answer says refund, reason late" || ft_fail "late answer: $out"
ft_eq "$(row_of T3)" "$o2 500 CNY 2 late" "tb_payment T3: refund_due late"
ft_eq "$(status_of "$o2")" 4 "order 2 closed on the spot"
ft_eq "$(ft_sql "SELECT business_type FROM tb_voucher_reconcile_log WHERE trace_id = $(trace_of 2) AND log_type = 1")" 5 \
        "RESTORE row of the close (business_type 5)"
ft_eq "$(ft_sql "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $V AND bucket = 0")" $((dstock0 + 1)) "DB stock + 1"
for ((i = 0; i < 50; i++)); do [[ $(ft_rstock "$V") == $((rstock0 + 1)) ]] && break; sleep 0.1; done
ft_eq "$(ft_rstock "$V")" $((rstock0 + 1)) "Redis stock + 1 (release.lua after the commit)"
ft_eq "$(ft_rcli hexists "$(ft_key "$V" users)" 2)" 0 "user 2 released in Redis"
ft_eq "$(pay "$o2" T3 500 | cut -c1-17)" '409 {"code":10021' "repeat of T3: the same 409 10021"

# Cancelled.
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H 'X-User-Id: 3' "http://${FT_ADDR[f]}/api/v1/orders/$o3/cancel")" \
        200 "user 3 cancels order 3"
out=$(pay "$o3" T4 500)
ft_eq "$(cut -c1-17 <<<"$out")" '409 {"code":10021' "cancelled: 409 10021"
[[ $out == *'"refund":true'*'"reason":"cancelled"'* ]] && ft_ok "cancelled answer says refund" || ft_fail "cancelled answer: $out"
ft_eq "$(row_of T4)" "$o3 500 CNY 2 cancelled" "tb_payment T4: refund_due cancelled"

# Amount and currency mismatches; the order stays payable.
out=$(pay "$o4" T5 499)
ft_eq "$(cut -c1-17 <<<"$out")" '422 {"code":10023' "amount 499: 422 10023"
[[ $out == *'"refund":true'*'"reason":"amount"'* ]] && ft_ok "amount answer says refund" || ft_fail "amount answer: $out"
ft_eq "$(row_of T5)" "$o4 499 CNY 2 amount" "tb_payment T5: refund_due amount"
ft_eq "$(pay "$o4" T6 500 USD | cut -c1-17)" '422 {"code":10023' "currency USD: 422 10023"
ft_eq "$(row_of T6)" "$o4 500 USD 2 currency" "tb_payment T6: refund_due currency"
ft_eq "$(status_of "$o4")" 1 "order 4 still UNPAID after the mismatches"
ft_eq "$(pay "$o4" T7 500 CNY | cut -d' ' -f1)" 200 "the right callback then pays order 4"

# An order whose outcome is FAILED (never created), and one with no outcome yet.
FO=4100000000000000001 NO=4100000000000000002
ft_sql "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id, bucket, outcome, reason) VALUES (4100000000000000009, $FO, 99, 4100000000000000003, 0, 2, 'sold_out')"
out=$(pay "$FO" T8 500)
ft_eq "$(cut -c1-17 <<<"$out")" '409 {"code":10021' "FAILED outcome: 409 10021"
[[ $out == *'"reason":"failed"'* ]] && ft_ok "failed answer says reason failed" || ft_fail "failed answer: $out"
ft_eq "$(row_of T8)" "$FO 500 CNY 2 failed" "tb_payment T8: refund_due failed"
hdr=$(FT_PAY_SIG= ; body='{"orderId":"'$NO'","providerTxnId":"T9","amount":"500","currency":"CNY"}'; t=$(date +%s)
        curl -s -D - -o /dev/null -m 10 -X POST -H "X-Payment-Signature: t=$t,v1=$(ft_pay_sign "$FT_PAY_SECRET" "$t" "$body")" \
        --data-binary "$body" "http://${FT_ADDR[f]}/api/v1/payments/callback")
ft_eq "$(head -n 1 <<<"$hdr" | awk '{print $2}')" 503 "no outcome yet: 503"
grep -qi '^retry-after: [0-9]' <<<"$hdr" && ft_ok "503 with Retry-After" || ft_fail "no Retry-After: $hdr"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_payment WHERE provider_txn_id = 'T9'")" 0 "no outcome: nothing recorded"

# Totals: 2 applied rows (T1, T7), 6 refund_due (T2-T6, T8); the paid orders' units stay sold.
ft_eq "$(ft_sql "SELECT SUM(result = 1), SUM(result = 2) FROM tb_payment" | tr '\t' ' ')" "2 6" "tb_payment: 2 applied, 6 refund_due"
ft_eq "$(metric 'seckill_payments_total{result="applied"}') $(metric 'seckill_payments_total{result="refund_due"}')" \
        "3 7" "front metrics: 3 applied answers (one a repeat), 7 refund_due answers (one a repeat)"
ft_check "$V"
ft_finish
