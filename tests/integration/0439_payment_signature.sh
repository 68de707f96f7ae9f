#!/usr/bin/env bash
# 0439_payment_signature.sh: who may call POST /api/v1/payments/callback (DESIGN.md 15):
#   - no SECKILL_PAYMENT_KEYS_FILE: the route is 404 (with or without a body);
#   - a keys file that does not load (a secret under 16 bytes): the front refuses to start (exit 2);
#   - a wrong secret, a t 400 s old or 400 s ahead, no header, a malformed header, a
#     v1 that is not 64 hex digits: 401/10008, nothing recorded, counted;
#   - several v1= (one per active secret): any may match;
#   - a valid signature over a malformed body: 400/10001; a body over 4 KiB: 413;
#     GET: 405; the signature covers the raw bytes (one byte changed after signing: 401);
#   - rotation: a secret added to the file is refused until SIGHUP, accepted after it;
#     the retired secret is refused after the next SIGHUP; a reload of a broken file
#     keeps the old keys and counts seckill_payment_key_reload_failures_total.
. "$(dirname "$0")/../support/ft.sh"
ft_init payment_signature

OLD=0439-old-secret-$RANDOM-$RANDOM NEW=0439-new-secret-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$OLD"
ft_front f SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_front nokeys
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 SECKILL_CLOSE_INTERVAL_MS=3600000
V=$(ft_voucher 10 1 250 EUR)
ft_buy f "$V" 1 4 4
ft_settle 60 || ft_die "purchases not settled"
order_of() { awk -v u="$1" '$1 == u {o = $2} END {print o}' "$FT_WORK/accepted.tsv"; }
o1=$(order_of 1) o2=$(order_of 2) o3=$(order_of 3)
A=${FT_ADDR[f]}
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
code_of() { cut -d' ' -f1-2 <<<"$1" | sed 's/ {"code":/ /; s/,.*//'; }
body_of() { printf '{"orderId":"%s","providerTxnId":"%s","amount":"%s","currency":"%s"}' "$@"; }
post() { # SIG BODY [ADDR]: prints the status code
        curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST ${1:+-H "X-Payment-Signature: $1"} \
                --data-binary "$2" "http://${3:-$A}/api/v1/payments/callback"
}
rows() { ft_sql "SELECT COUNT(*) FROM tb_payment"; }

# No keys file: no route.
ft_eq "$(post "t=1,v1=00" "$(body_of "$o1" X 250 EUR)" "${FT_ADDR[nokeys]}")" 404 "no keys file: POST with a body 404"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST "http://${FT_ADDR[nokeys]}/api/v1/payments/callback")" 404 \
        "no keys file: POST without a body 404"
# A keys file that does not load: a configuration error.
ft_pay_keys "$FT_WORK/bad.keys" "q7z!x"
SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/bad.keys" \
        timeout 20 "$FT_BIN/seckill-front" --http-addr "127.0.0.1:$(ft_free_port)" \
        >"$FT_WORK/short.log" 2>&1
ft_eq "$?" 2 "a keys file with a 5-byte secret: the front exits 2"
grep -q 'secret must be' "$FT_WORK/short.log" && ft_ok "it says why" || ft_fail "no reason: $(tail -n 2 "$FT_WORK/short.log")"
grep -qF 'q7z!x' "$FT_WORK/short.log" && ft_fail "the secret appears in the log" || ft_ok "the secret is not printed"

# Refused signatures.
b=$(body_of "$o1" S1 250 EUR) now=$(date +%s)
ft_eq "$(post "t=$now,v1=$(ft_pay_sign "wrong-secret-0123456789" "$now" "$b")" "$b")" 401 "wrong secret: 401"
ft_eq "$(ft_pay "$A" "$o1" S1 250 EUR "wrong-secret-0123456789" | cut -c1-17)" \
        '401 {"code":10008' "wrong secret: code 10008"
ft_eq "$(post "t=$((now - 400)),v1=$(ft_pay_sign "$OLD" "$((now - 400))" "$b")" "$b")" 401 "t 400 s old: 401"
ft_eq "$(post "t=$((now + 400)),v1=$(ft_pay_sign "$OLD" "$((now + 400))" "$b")" "$b")" 401 "t 400 s ahead: 401"
ft_eq "$(post "" "$b")" 401 "no X-Payment-Signature: 401"
ft_eq "$(post "v1=$(ft_pay_sign "$OLD" "$now" "$b")" "$b")" 401 "no t=: 401"
ft_eq "$(post "t=$now,v1=abc" "$b")" 401 "v1 not 64 hex digits: 401"
ft_eq "$(post "t=$now,v1=$(ft_pay_sign "$OLD" "$now" "$b")" "${b/250/251}")" 401 "body changed after signing: 401"
ft_eq "$(rows)" 0 "nothing recorded for a refused signature"
ft_eq "$(metric seckill_payments_signature_refused_total)" 8 "seckill_payments_signature_refused_total = 8"

# Accepted: t at the edge of the window, several v1= (any may match), v0= ignored.
t=$((now - 250))
ft_eq "$(post "t=$t, v0=zz, v1=$(ft_pay_sign "other-secret-0123456789" "$t" "$b"), v1=$(ft_pay_sign "$OLD" "$t" "$b")" "$b")" \
        200 "t 250 s old, second of two v1= matches: 200"
ft_eq "$(ft_sql "SELECT status FROM tb_voucher_order WHERE id = $o1")" 2 "order 1 PAID (EUR 250)"
# A valid signature over a bad body; oversize; method.
bad='{"orderId":"'$o2'","providerTxnId":"S2","amount":250,"currency":"EUR"}'
ft_eq "$(post "t=$now,v1=$(ft_pay_sign "$OLD" "$now" "$bad")" "$bad")" 400 "amount as a JSON number: 400"
bad=$(body_of "0$o2" S2 250 EUR)
ft_eq "$(post "t=$now,v1=$(ft_pay_sign "$OLD" "$now" "$bad")" "$bad")" 400 "non-canonical orderId: 400"
bad=$(body_of "$o2" S2 250 eur)
ft_eq "$(post "t=$now,v1=$(ft_pay_sign "$OLD" "$now" "$bad")" "$bad")" 400 "lower-case currency: 400"
big=$(head -c 5000 /dev/zero | tr '\0' ' ')$(body_of "$o2" S2 250 EUR)
ft_eq "$(post "t=$now,v1=$(ft_pay_sign "$OLD" "$now" "$big")" "$big")" 413 "a 5 KB body: 413"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 "http://$A/api/v1/payments/callback")" 405 "GET: 405"
ft_eq "$(rows)" 1 "only the accepted callback is recorded"

# Rotation: NEW added to the file; refused until SIGHUP.
ft_pay_keys "$FT_WORK/pay.keys" "$OLD" "$NEW"
ft_eq "$(ft_pay "$A" "$o2" S2 250 EUR "$NEW" | cut -c1-17)" '401 {"code":10008' "the new secret before SIGHUP: 401"
kill -HUP "${FT_PID[f]}"
for ((i = 0; i < 30; i++)); do [[ $(metric seckill_payment_key_reloads_total) == 1 ]] && break; sleep 0.1; done
ft_eq "$(ft_pay "$A" "$o2" S2 250 EUR "$NEW" | cut -d' ' -f1)" 200 "the new secret after SIGHUP: 200"
ft_eq "$(ft_pay "$A" "$o1" S1 250 EUR "$OLD" | cut -d' ' -f1)" 200 "the old secret still works while listed (repeat of S1)"
# A broken file: the reload fails, the keys stay.
printf 'tiny\n' >"$FT_WORK/pay.keys"
kill -HUP "${FT_PID[f]}"
for ((i = 0; i < 30; i++)); do [[ $(metric seckill_payment_key_reload_failures_total) == 1 ]] && break; sleep 0.1; done
ft_eq "$(metric seckill_payment_key_reload_failures_total)" 1 "a broken file: reload failure counted"
ft_eq "$(ft_pay "$A" "$o2" S2 250 EUR "$NEW" | cut -d' ' -f1)" 200 "the keys stayed: the new secret still accepted"
# OLD retired.
ft_pay_keys "$FT_WORK/pay.keys" "$NEW"
kill -HUP "${FT_PID[f]}"
for ((i = 0; i < 30; i++)); do [[ $(metric seckill_payment_key_reloads_total) == 2 ]] && break; sleep 0.1; done
ft_eq "$(ft_pay "$A" "$o3" S3 250 EUR "$OLD" | cut -c1-17)" '401 {"code":10008' "the retired secret after SIGHUP: 401"
ft_eq "$(ft_pay "$A" "$o3" S3 250 EUR "$NEW" | cut -d' ' -f1)" 200 "the new secret: 200"
ft_alive f && ft_ok "the front survived every SIGHUP" || ft_fail "the front died"
ft_finish
