#!/usr/bin/env bash
# 0441_payment_strict.sh: the payment callback's body and txn ids as DESIGN.md 15
# "Hardening rules" fixes them, with the real front, consumer and MariaDB, on a voucher
# priced 500 CNY:
#   - signed bodies parsed as strictly as a JWT: a member given twice (the first won, so a
#     second "amount" the provider's reader may have taken was ignored), "\u0000" inside
#     providerTxnId (cJSON cut it: "T1\u0000x" paid as T1), bytes after the object, a
#     byte-order mark before it: 400/10001, nothing recorded, the order still UNPAID;
#   - providerTxnId compared byte for byte: txn-a1 pays order 1 and txn-A1 pays order 2
#     (before, the case-insensitive key made the second a reused id: 409/10025, no row);
#   - migration 0009_txn_id_bytes: on a database at 0008 whose tb_payment holds ids that
#     are not printable ASCII (two of them would become one), `db migrate` refuses with
#     exit 2 and one line listing them, changing nothing; once they are re-keyed it
#     migrates and the column is ascii_bin.
. "$(dirname "$0")/../support/ft.sh"
ft_init payment_strict

FT_PAY_SECRET=0441-secret-$RANDOM-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
ft_front f SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 SECKILL_CLOSE_INTERVAL_MS=3600000
V=$(ft_voucher 10 1 500 CNY)
ft_buy f "$V" 1 3 3
ft_settle 60 || ft_die "purchases not settled"
order_of() { awk -v u="$1" '$1 == u {o = $2} END {print o}' "$FT_WORK/accepted.tsv"; }
o1=$(order_of 1) o2=$(order_of 2) o3=$(order_of 3)
status_of() { ft_sql "SELECT status FROM tb_voucher_order WHERE id = $1"; }
payments() { ft_sql "SELECT COUNT(*) FROM tb_payment"; }
pay_body() { ft_pay_body "${FT_ADDR[f]}" "$1"; }

# --- strict bodies --------------------------------------------------------------------
refused() {     # BODY WHAT: 400/10001, nothing recorded
        local out
        out=$(pay_body "$1")
        ft_eq "$(cut -c1-17 <<<"$out")" '400 {"code":10001' "$2: 400/10001"
}
refused '{"orderId":"'"$o1"'","providerTxnId":"D1","amount":"500","amount":"1","currency":"CNY"}' \
        "amount given twice"
refused '{"orderId":"'"$o1"'","orderId":"'"$o2"'","providerTxnId":"D2","amount":"500","currency":"CNY"}' \
        "orderId given twice"
refused '{"orderId":"'"$o1"'","providerTxnId":"T1\u0000x","amount":"500","currency":"CNY"}' \
        "\\u0000 inside providerTxnId"
refused '{"orderId":"'"$o1"'","providerTxnId":"T2","amount":"500","currency":"CNY"}{"amount":"1"}' \
        "a second object after the body"
refused '{"orderId":"'"$o1"'","providerTxnId":"T3","amount":"500","currency":"CNY"} x' \
        "bytes after the object"
refused $'\xef\xbb\xbf''{"orderId":"'"$o1"'","providerTxnId":"T4","amount":"500","currency":"CNY"}' \
        "a byte-order mark before the object"
ft_eq "$(payments) $(status_of "$o1")" "0 1" "nothing recorded, order 1 still UNPAID"
# White space around the object is JSON: accepted.
ft_eq "$(pay_body ' {"orderId":"'"$o3"'","providerTxnId":"W1","amount":"500","currency":"CNY"}'$'\n' | cut -d' ' -f1)" \
        200 "white space around the object: 200"

# --- txn ids byte for byte ----------------------------------------------------------------
ft_eq "$(ft_pay "${FT_ADDR[f]}" "$o1" txn-a1 500)" "200 {\"code\":0,\"orderId\":\"$o1\",\"orderStatus\":\"PAID\"}" \
        "txn-a1 pays order 1"
ft_eq "$(ft_pay "${FT_ADDR[f]}" "$o2" txn-A1 500)" "200 {\"code\":0,\"orderId\":\"$o2\",\"orderStatus\":\"PAID\"}" \
        "txn-A1 is another id: it pays order 2"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(CONCAT(provider_txn_id, '=', order_id) ORDER BY order_id) FROM tb_payment WHERE provider_txn_id IN ('txn-a1', 'txn-A1')")" \
        "txn-a1=$o1,txn-A1=$o2" "two rows, one per id"
ft_eq "$(ft_pay "${FT_ADDR[f]}" "$o1" txn-a1 500 | cut -d' ' -f1) $(ft_pay "${FT_ADDR[f]}" "$o2" txn-A1 500 | cut -d' ' -f1)" \
        "200 200" "each repeats from its own row"
ft_eq "$(ft_sql "SELECT CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_payment' AND COLUMN_NAME = 'provider_txn_id'" | tr '\t' ' ')" \
        "ascii ascii_bin" "provider_txn_id is ascii_bin"

# --- the migration guard --------------------------------------------------------------------
# Back to the 0008 definition, with ids 0009 could not keep.
migrate() { timeout 120 "$FT_BIN/seckill-admin" db migrate "$@" >"$FT_WORK/m.out" 2>"$FT_WORK/m.err"; }
ft_sql "DELETE FROM tb_payment WHERE provider_txn_id = 'txn-A1'"   # one with txn-a1 under 0008's key
ft_sql "ALTER TABLE tb_payment MODIFY provider_txn_id VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL" ||
        ft_die "back to 0008's column"
ft_sql "DELETE FROM schema_migrations WHERE name = '0009_txn_id_bytes'"
# x€1 and x中1 (distinct under utf8mb4_unicode_ci) both convert to x?1.
ft_sql "INSERT INTO tb_payment (provider_txn_id, order_id, amount_minor, currency, result, reason)
        VALUES (CONVERT(X'78E282AC31' USING utf8mb4), $o3, 1, 'CNY', 2, 'amount'),
               (CONVERT(X'78E4B8AD31' USING utf8mb4), $o3, 2, 'CNY', 2, 'amount')" ||
        ft_die "insert non-ASCII ids"
for i in 1 2; do
        migrate
        ft_eq "$?" 2 "db migrate with non-ASCII txn ids: exit 2 (run $i)"
        ft_eq "$(wc -l <"$FT_WORK/m.err")" 1 "one error line (run $i)"
        grep -q 'refused: 2 provider txn id(s)' "$FT_WORK/m.err" && grep -qF '"x\xe2\x82\xac1"' "$FT_WORK/m.err" &&
                grep -qF '"x\xe4\xb8\xad1"' "$FT_WORK/m.err" && ft_ok "the line names the count and both ids" ||
                ft_fail "refusal line: $(cat "$FT_WORK/m.err")"
        ft_eq "$(ft_sql "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_payment' AND COLUMN_NAME = 'provider_txn_id'")" \
                utf8mb4_unicode_ci "column unchanged (run $i)"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM schema_migrations WHERE name = '0009_txn_id_bytes'")" 0 "0009 not recorded (run $i)"
done
ft_sql "UPDATE tb_payment SET provider_txn_id = CONCAT('rekeyed-', amount_minor) WHERE order_id = $o3 AND reason = 'amount'"
migrate
ft_eq "$?" 0 "re-keyed: db migrate exit 0"
ft_eq "$(ft_sql "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_payment' AND COLUMN_NAME = 'provider_txn_id'") $(ft_sql "SELECT COUNT(*) FROM schema_migrations WHERE name = '0009_txn_id_bytes'")" \
        "ascii_bin 1" "0009 applied and recorded"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_payment WHERE provider_txn_id IN ('txn-a1', 'rekeyed-1', 'rekeyed-2')")" 3 \
        "every row kept"
ft_finish
