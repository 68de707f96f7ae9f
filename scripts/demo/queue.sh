#!/usr/bin/env bash
# scripts/demo/queue.sh: `scripts/demo.sh --queue` (DESIGN.md 18 "Demo"): a sale through
# the waiting room on the local stack. A front (jwt, the room's keys, the payment keys,
# SECKILL_PAGE_FRAGMENT_TOKEN=1 so a person can watch the buyer page) and a consumer; a
# queued voucher (overbook 125%, priced 500 CNY) whose pre-queue is open and whose sale
# opens --join-s + 15 s later; --members members with their own JWTs join at random times
# during the pre-queue, then poll and buy as the page does (queue_crowd.py), each winner
# pays with a signed callback, so the room closes. Then the room's figures
# (seckill-admin voucher queue), the report (queue_report.py: begin -> sold out,
# sold-out told p50/p99, polls/s, Spearman rho join time/userId <-> position) and every
# invariant (the shell harness's checks, seckill-admin verify).
#   scripts/demo.sh --queue [--members N (20000)] [--stock N (1000)] [--join-s S (60)]
#                          [--out DIR (out)]
# Exit 0 iff every invariant and the §18 bounds hold. Uses tests/support/ft.sh (as
# bench/windows.sh does): its own database, key prefix and topic, dropped at the end.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MEMBERS=20000 STOCK=1000 JOIN_S=60 OUT=$REPO/out
while [[ $# -gt 0 ]]; do
        case $1 in
        --queue) shift ;;
        --members) MEMBERS=${2:?}; shift 2 ;;
        --stock) STOCK=${2:?}; shift 2 ;;
        --join-s) JOIN_S=${2:?}; shift 2 ;;
        --out) OUT=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "demo --queue: unknown option '$1' (--members, --stock, --join-s, --out)" >&2; exit 2 ;;
        esac
done
[[ $MEMBERS =~ ^[1-9][0-9]*$ && $STOCK =~ ^[1-9][0-9]*$ && $JOIN_S =~ ^[1-9][0-9]*$ ]] ||
        { echo "demo --queue: --members, --stock and --join-s are positive integers" >&2; exit 2; }
export SK_BIN=${SK_BIN:-$REPO/build/bin} SK_BUILD=${SK_BUILD:-$REPO/build}
if [[ ! -x $SK_BIN/seckill-front || ! -x $SK_BUILD/tests/sk-mint-jwt ]]; then
        cmake -S "$REPO" -B "$SK_BUILD" >/dev/null && cmake --build "$SK_BUILD" -j2 >/dev/null ||
                { echo "demo --queue: build failed" >&2; exit 3; }
fi
# The local stack, started only when one of its services is not up (a running one is left
# alone); what this run started it stops at the end, as scripts/demo.sh does.
STARTED=$("$REPO/scripts/stack.sh" status 2>/dev/null |
        awk '$1 ~ /^(redis|mariadb|kafka)$/ && $3 != "up" && !seen[$1]++ {printf "%s ", $1}')
if [[ -n $STARTED ]]; then
        "$REPO/scripts/stack.sh" up >/dev/null 2>&1 || { echo "demo --queue: scripts/stack.sh up failed" >&2; exit 3; }
fi
eval "$("$REPO/scripts/stack.sh" env)"
. "$REPO/tests/support/ft.sh"
FT_NAME=demo_queue
ft_init demo_queue
stop_started() {
        [[ -n $STARTED ]] || return 0
        ft_log "stopping what this run started: $STARTED"
        # shellcheck disable=SC2086 # one word per service
        "$REPO/scripts/stack.sh" down $STARTED >/dev/null 2>&1 || ft_log "scripts/stack.sh down $STARTED failed"
}
FT_CLEANUP_LAST+=(stop_started)
mkdir -p "$OUT"
MINT=$SK_BUILD/tests/sk-mint-jwt
"$MINT" gen "$FT_WORK/keys" >/dev/null || ft_die "sk-mint-jwt gen"
FIRST=100001
"$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub "$FIRST" --count "$MEMBERS" --exp-in 7200 \
        --iss https://idp.demo --aud seckill >"$FT_WORK/tokens" || ft_die "sk-mint-jwt sign"
"$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub 1 --exp-in 7200 --iss https://idp.demo \
        --aud seckill >"$FT_WORK/watcher.token" || ft_die "sk-mint-jwt sign"
FT_PAY_SECRET=demo-queue-$RANDOM-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
printf 'd1 %s\n' "$(openssl rand -hex 32)" >"$FT_WORK/queue.keys"
chmod 0600 "$FT_WORK/queue.keys"
ft_front f SECKILL_AUTH=jwt SECKILL_TRUSTED_PROXIES= SECKILL_JWT_KEYS_FILE="$FT_WORK/keys/jwks.json" \
        SECKILL_JWT_ISSUER=https://idp.demo SECKILL_JWT_AUDIENCE=seckill SECKILL_JWT_VERIFY_RATE=0 \
        SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys" SECKILL_QUEUE_KEYS_FILE="$FT_WORK/queue.keys" \
        SECKILL_PAGE_FRAGMENT_TOKEN=1 SECKILL_PAY_TIMEOUT_S=600 SECKILL_MAX_INFLIGHT=100000
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 -- --workers 2
begin=$(($(date +%s) + JOIN_S + 15))
out=$("$FT_BIN/seckill-admin" voucher create --stock "$STOCK" --buckets 1 --begin "$begin" \
        --end $((begin + 3600)) --price 500 --currency CNY --queue --queue-overbook 125 \
        --queue-open $((JOIN_S + 60)) --queue-ttl 60 --title "Demo flash sale" --preheat 2>>"$FT_WORK/admin.log") ||
        ft_die "voucher create --queue: $(tail -n 3 "$FT_WORK/admin.log")"
V=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out" | tail -n 1)
[[ -n $V ]] || ft_die "no voucherId: $out"
FT_VOUCHERS+=("$V")
ft_log "voucher $V: $STOCK units, $MEMBERS members join over ${JOIN_S} s, the sale opens at $(date -d "@$begin" +%T)"
ft_log "watch the line: http://${FT_ADDR[f]}/sale/$V#token=$(cat "$FT_WORK/watcher.token")"
python3 "$REPO/scripts/demo/queue_crowd.py" --addr "${FT_ADDR[f]}" --voucher "$V" --tokens "$FT_WORK/tokens" \
        --first-user "$FIRST" --begin-ms $((begin * 1000)) --join-s "$JOIN_S" --pay-secret "$FT_PAY_SECRET" \
        --price 500 --currency CNY --max-s $((JOIN_S + 900)) --out "$OUT/queue-crowd.json" ||
        ft_fail "the crowd failed"
"$FT_BIN/seckill-admin" voucher queue "$V" >"$FT_WORK/queue.txt" 2>&1 || ft_fail "voucher queue $V"
if python3 "$REPO/scripts/demo/queue_report.py" "$OUT/queue-crowd.json" "$STOCK" "$FT_WORK/queue.txt"; then
        ft_ok "the §18 bounds hold (report: $OUT/queue-report.json)"
else
        ft_fail "a §18 bound failed (report: $OUT/queue-report.json)"
fi
ft_settle 60 || ft_fail "purchases not settled"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 2")" "$STOCK" \
        "every unit in a PAID order"
ft_check "$V"
ft_finish
