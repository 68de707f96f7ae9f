#!/usr/bin/env bash
# 0220_admin_payments.sh: the merchant's side of payments in seckill-admin (DESIGN.md 13):
#   - voucher create --price MINOR [--currency CUR]: stored on the voucher row; default
#     price 0 and SECKILL_CURRENCY; a negative, signed, leading-zero or fractional price
#     and a currency that is not three letters A-Z are exit 2 with nothing created;
#   - payment refunds [--json]: the refund_due rows without refunded_at, oldest first
#     (applied and refunded rows are not listed);
#   - payment refunded --txn ID --ref R: marks one (exit 0), a repeat with the same ref
#     is 0, another ref 2, an unknown or applied txn 2, a missing --ref 2;
#   - the consumer's gauges seckill_payments_refund_due and _oldest_seconds.
. "$(dirname "$0")/../support/ft.sh"
ft_init admin_payments
ADMIN="$FT_BIN/seckill-admin"
now=$(date +%s)
create() { "$ADMIN" voucher create --stock 5 --begin "$((now - 60))" --end "$((now + 3600))" "$@" 2>>"$FT_WORK/admin.err"; }
vid() { sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p'; }

v=$(create --price 1999 --currency USD | vid)
ft_eq "$(ft_sql "SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = ${v:-0}" | tr '\t' ' ')" "1999 USD" \
        "--price 1999 --currency USD stored"
v=$(create | vid)
ft_eq "$(ft_sql "SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = ${v:-0}" | tr '\t' ' ')" "0 CNY" \
        "defaults: price 0, SECKILL_CURRENCY CNY"
v=$(SECKILL_CURRENCY=JPY create --price 500 | vid)
ft_eq "$(ft_sql "SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = ${v:-0}" | tr '\t' ' ')" "500 JPY" \
        "SECKILL_CURRENCY=JPY is the default currency"
n0=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_voucher")
for bad in -1 +5 05 1.5 12abc 9999999999999999999; do
        create --price "$bad" >/dev/null
        ft_eq "$?" 2 "--price $bad: exit 2"
done
for bad in usd US USDX 'U$D'; do
        create --currency "$bad" >/dev/null
        ft_eq "$?" 2 "--currency $bad: exit 2"
done
SECKILL_CURRENCY=yen create >/dev/null
ft_eq "$?" 2 "SECKILL_CURRENCY=yen: exit 2"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_voucher")" "$n0" "no voucher created by a refused command"
"$ADMIN" payment refunds --price 5 >/dev/null 2>&1
ft_eq "$?" 2 "payment refunds --price: the option does not apply, exit 2"

# Rows as the callback records them (DESIGN.md 6): two refund_due, one applied.
ft_sql "INSERT INTO tb_payment (provider_txn_id, order_id, amount_minor, currency, received_at, result, reason) VALUES
        ('R-old', 11, 500, 'CNY', NOW(3) - INTERVAL 2 HOUR, 2, 'late'),
        ('R-new', 12, 700, 'USD', NOW(3) - INTERVAL 1 MINUTE, 2, 'duplicate'),
        ('A-1', 13, 500, 'CNY', NOW(3), 1, NULL)"
out=$("$ADMIN" payment refunds --json)
ft_eq "$?" 0 "payment refunds --json: exit 0"
ft_eq "$(jq -r '.count' <<<"$out")" 2 "two refunds due"
ft_eq "$(jq -r '[.refunds[] | .providerTxnId + ":" + .orderId + ":" + .amount + ":" + .currency + ":" + .reason] | join(",")' <<<"$out")" \
        "R-old:11:500:CNY:late,R-new:12:700:USD:duplicate" "oldest first, ids and amounts as strings"
age=$(jq -r '.refunds[0].ageSeconds' <<<"$out")
((age >= 7190 && age <= 7300)) && ft_ok "the oldest is about 2 h old ($age s)" || ft_fail "age $age"
"$ADMIN" payment refunds | grep -q '^2 refund(s) due' && ft_ok "table output: 2 refund(s) due" || ft_fail "table output"

# Marks.
"$ADMIN" payment refunded --txn R-old --ref RF-1 >"$FT_WORK/m1" 2>&1
ft_eq "$?" 0 "refunded R-old: exit 0"
ft_eq "$(ft_sql "SELECT refunded_at IS NOT NULL, refund_ref FROM tb_payment WHERE provider_txn_id = 'R-old'" | tr '\t' ' ')" "1 RF-1" \
        "R-old: refunded_at set, refund_ref RF-1"
"$ADMIN" payment refunded --txn R-old --ref RF-1 >/dev/null 2>&1
ft_eq "$?" 0 "the same mark again: exit 0"
"$ADMIN" payment refunded --txn R-old --ref RF-2 >/dev/null 2>"$FT_WORK/m2"
ft_eq "$?" 2 "another ref for a refunded payment: exit 2"
ft_eq "$(ft_sql "SELECT refund_ref FROM tb_payment WHERE provider_txn_id = 'R-old'")" RF-1 "the first ref stays"
"$ADMIN" payment refunded --txn NOPE --ref RF-3 >/dev/null 2>&1
ft_eq "$?" 2 "an unknown txn: exit 2"
"$ADMIN" payment refunded --txn A-1 --ref RF-4 >/dev/null 2>&1
ft_eq "$?" 2 "an applied payment: exit 2"
ft_eq "$(ft_sql "SELECT refunded_at IS NULL FROM tb_payment WHERE provider_txn_id = 'A-1'")" 1 "the applied row is untouched"
"$ADMIN" payment refunded --txn R-new >/dev/null 2>&1
ft_eq "$?" 2 "no --ref: exit 2"
ft_eq "$("$ADMIN" payment refunds --json | jq -r '[.count, .refunds[0].providerTxnId] | join(" ")')" "1 R-new" \
        "after the mark: only R-new is due"

# The consumer's gauges (its metrics listener).
port=$(ft_free_port)
ft_consumer c SECKILL_CLOSE_INTERVAL_MS=200 -- --metrics-addr "127.0.0.1:$port"
for ((i = 0; i < 100; i++)); do
        m=$(curl -s -m 2 "http://127.0.0.1:$port/metrics")
        [[ $(awk '$1 == "seckill_payments_refund_due" {print $2}' <<<"$m") == 1 ]] && break
        sleep 0.2
done
ft_eq "$(awk '$1 == "seckill_payments_refund_due" {print $2}' <<<"$m")" 1 "gauge seckill_payments_refund_due = 1"
old=$(awk '$1 == "seckill_payments_refund_due_oldest_seconds" {print $2}' <<<"$m")
((${old:-0} >= 55 && ${old:-0} <= 200)) && ft_ok "gauge _oldest_seconds = $old (R-new, ~60 s)" || ft_fail "oldest gauge: '$old'"
ft_finish
