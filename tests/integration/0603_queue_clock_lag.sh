#!/usr/bin/env bash
# 0603_queue_clock_lag.sh: a front whose wall clock lags by 2 s joins no one into the
# pre-queue after begin (DESIGN.md 18: "begun" is decided by Redis TIME in the join script,
# never by a front's clock). Front L runs with tests/support/sk_clock_lag.c preloaded
# (SK_CLOCK_LAG_MS=2000: its CLOCK_REALTIME answers 2 s behind); front f is on time.
#   - L's own clock really lags: its GET /api/v1/vouchers/{id} serverTime (the front's
#     clock) is 1.5-3 s behind this script's;
#   - 3 members join the pre-queue (through both fronts) before begin;
#   - at begin (this host's clock, which is Redis's) two members join through L at once,
#     while L's clock still says "before begin": they get positions 4 and 5, state not
#     prequeue (a pre-queue join after begin would have drawn them among 1..5);
#   - the pre-queue members, polled through L, hold a permutation of 1..3; stock 2 at
#     overbook 100% admits positions 1 and 2 only.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_clock_lag
ftq_keys
LAG_SO=$FT_WORK/sk_clock_lag.so
cc -shared -fPIC -O1 -o "$LAG_SO" "$FT_SRC/tests/support/sk_clock_lag.c" -ldl >"$FT_WORK/lag-build.log" 2>&1 ||
        ft_die "sk_clock_lag.so: $(tail -n 5 "$FT_WORK/lag-build.log")"
PRELOAD=$LAG_SO
# An ASan build wants its runtime first in the preload list.
asan=$(ldd "$FT_BIN/seckill-front" 2>/dev/null | awk '/libasan/ {print $3; exit}')
[[ -n $asan ]] && PRELOAD="$asan:$LAG_SO"
now=$(date +%s)
# begin 30 s ahead: the lag library, two fronts and the lag check take over 10 s at load 20
BEGIN=$((now + 30))
out=$("$FT_BIN/seckill-admin" voucher create --stock 2 --begin "$BEGIN" --end "$((now + 3600))" \
        --queue --queue-overbook 100 --queue-ttl 60 --title "Clock lag" --preheat 2>>"$FT_WORK/admin.log") ||
        ft_die "voucher create: $(tail -n 3 "$FT_WORK/admin.log")"
V=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out")
[[ -n $V ]] || ft_die "no voucher id: $out"
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
ft_front L SECKILL_QUEUE_KEYS_FILE="$KEYS" SK_CLOCK_LAG_MS=2000 LD_PRELOAD="$PRELOAD"
F=${FT_ADDR[f]}
L=${FT_ADDR[L]}
req() {
        local o
        o=$(curl -s -m 20 -w '\n%{http_code}' -X "$1" -H "X-User-Id: $4" "http://$2$3")
        printf '%s %s\n' "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
        printf '%s %s %s user=%s -> %s %s\n' "$(date +%s%3N)" "$1" "$3" "$4" "${o##*$'\n'}" \
                "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/transcript.txt"
}
Q=/api/v1/vouchers/$V/queue

t0=$(date +%s%3N)
r=$(curl -s -m 10 "http://$L/api/v1/vouchers/$V")
t1=$(date +%s%3N)
st=$(field serverTime "$r")
[[ $st =~ ^[0-9]+$ ]] || ft_die "no serverTime from L: $r"
lag_lo=$((t0 - st)) lag_hi=$((t1 - st))
((lag_hi >= 1500 && lag_lo <= 3000)) && ft_ok "front L's clock lags: serverTime $st, this host $t0..$t1" ||
        ft_fail "front L's clock does not lag 2 s: serverTime $st, this host $t0..$t1"

for u in 1 2 3; do
        fr=$F
        ((u == 2)) && fr=$L
        r=$(req POST "$fr" "$Q" "$u")
        [[ $r == "200 "*'"state":"prequeue"'* && $r != *'"position"'* ]] || ft_fail "pre-queue join $u: $r"
done
ft_ok "3 members joined the pre-queue"

while (($(date +%s%3N) < BEGIN * 1000 + 50)); do sleep 0.02; done
tj=$(date +%s%3N)
r4=$(req POST "$L" "$Q" 4)
r5=$(req POST "$L" "$Q" 5)
tk=$(date +%s%3N)
ft_log "joins of 4 and 5 through L sent $((tj - BEGIN * 1000)) ms after begin, answered after $((tk - tj)) ms" \
        "(L's clock then said $((BEGIN * 1000 - tj + 2000)) ms before begin)"
((tk - BEGIN * 1000 < 2000)) || ft_log "note: the joins ended after L's clock passed begin too (loaded host)"
[[ $r4 == "200 "* && $r4 != *'"state":"prequeue"'* && $(field position "$r4") == 4 ]] &&
        ft_ok "join through the lagging front right after begin: position 4, not the pre-queue ($r4)" ||
        ft_fail "join 4 through L after begin: $r4"
[[ $r5 == "200 "* && $r5 != *'"state":"prequeue"'* && $(field position "$r5") == 5 ]] &&
        ft_ok "the next join through L: position 5 ($r5)" || ft_fail "join 5 through L after begin: $r5"

declare -A POS ADM
for ((i = 0; i < 120; i++)); do
        n=0
        for u in 1 2 3 4 5; do
                r=$(req GET "$L" "$Q" "$u")
                POS[$u]=$(field position "$r")
                [[ $r == *'"state":"prequeue"'* ]] && ft_fail "member $u polled through L after begin: still prequeue ($r)"
                [[ $r == *'"state":"admitted"'* ]] && n=$((n + 1))
                ADM[$u]=$([[ $r == *'"state":"admitted"'* ]] && echo 1)
        done
        ((n >= 2)) && break
        sleep 0.25
done
ft_eq "$(printf '%s\n' "${POS[1]}" "${POS[2]}" "${POS[3]}" | sort -n | tr '\n' ' ')" "1 2 3 " \
        "the pre-queue members hold positions 1..3 (a permutation)"
adm=""
for p in 1 2 3 4 5; do
        for u in 1 2 3 4 5; do [[ ${POS[$u]} == "$p" && -n ${ADM[$u]:-} ]] && adm+="$p "; done
done
ft_eq "$adm" "1 2 " "positions 1 and 2 admitted (stock 2, overbook 100%), in order"
ft_alive f && ft_alive L && ft_ok "fronts alive" || ft_fail "a front exited"
ft_finish
