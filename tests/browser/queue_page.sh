#!/usr/bin/env bash
# tests/browser/queue_page.sh: the browser test of DESIGN.md 18 against the real stack:
# a front in jwt mode with the waiting room's keys, the payment keys and
# SECKILL_PAGE_FRAGMENT_TOKEN=1, a consumer (orders UNPAID for 600 s), a queued voucher of
# 5 units priced 500 CNY with overbook 100% whose sale opens 60 s after its creation,
# 30 JWTs (sk-mint-jwt, users 1001..1030); then queue_page.js drives 30 pages of Debian's
# chromium through the scenario (see its top comment), and the invariants are checked.
# Screenshots: SK_BUILD/browser-out/queue_page/ (kept after the run).
. "$(dirname "$0")/../support/ft.sh"
ft_init browser_queue_page
HERE=$FT_SRC/tests/browser
OUT=$FT_BUILD/browser-out/queue_page
bash "$HERE/install.sh" "$FT_BUILD" || ft_die "playwright-core not installed (tests/browser/install.sh)"
[[ -x /usr/bin/chromium ]] || ft_die "no /usr/bin/chromium (apt-get install chromium)"
MINT=$FT_BUILD/tests/sk-mint-jwt
"$MINT" gen "$FT_WORK/keys" >/dev/null || ft_die "sk-mint-jwt gen failed"
"$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub 1001 --count 30 --exp-in 3600 \
        --iss https://idp.test --aud seckill >"$FT_WORK/tokens" || ft_die "sk-mint-jwt sign failed"
ft_eq "$(wc -l <"$FT_WORK/tokens")" 30 "30 buyer tokens"
FT_PAY_SECRET=browser-secret-$RANDOM-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
printf 'q1 %s\n' "$(openssl rand -hex 32)" >"$FT_WORK/queue.keys"
chmod 0600 "$FT_WORK/queue.keys"
ft_front f SECKILL_AUTH=jwt SECKILL_TRUSTED_PROXIES= SECKILL_JWT_KEYS_FILE="$FT_WORK/keys/jwks.json" \
        SECKILL_JWT_ISSUER=https://idp.test SECKILL_JWT_AUDIENCE=seckill SECKILL_JWT_VERIFY_RATE=0 \
        SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys" SECKILL_QUEUE_KEYS_FILE="$FT_WORK/queue.keys" \
        SECKILL_PAGE_FRAGMENT_TOKEN=1 SECKILL_PAY_TIMEOUT_S=600
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 SECKILL_CLOSE_INTERVAL_MS=3600000
now=$(date +%s)
out=$("$FT_BIN/seckill-admin" voucher create --stock 5 --buckets 1 --begin $((now + 60)) --end $((now + 7200)) \
        --price 500 --currency CNY --queue --queue-overbook 100 --queue-open 600 --queue-ttl 120 \
        --title 'Flash <b>sale</b> & "quotes"' --preheat 2>>"$FT_WORK/admin.log") ||
        ft_die "voucher create --queue: $(tail -n 3 "$FT_WORK/admin.log")"
V=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out" | tail -n 1)
[[ -n $V ]] || ft_die "voucher create printed no voucherId: $out"
FT_VOUCHERS+=("$V")
ft_log "voucher $V: 5 units, overbook 100%, opens at $((now + 60))"
rm -rf "$OUT" && mkdir -p "$OUT"
if BASE="http://${FT_ADDR[f]}" VOUCHER=$V TOKENS="$FT_WORK/tokens" STOCK=5 PAY_SECRET=$FT_PAY_SECRET \
        PRICE=500 CURRENCY=CNY OUT=$OUT NODE_MODULES=$FT_BUILD/browser-node/node_modules \
        node "$HERE/queue_page.js"; then
        ft_ok "the browser scenario held (screenshots in $OUT)"
else
        ft_fail "the browser scenario (queue_page.js) failed; screenshots in $OUT"
fi
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 2")" 5 "5 orders PAID"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 3")" 1 "1 order CANCELLED"
ft_check "$V"
ft_finish
