#!/usr/bin/env bash
# 0601_queue_expiry_close.sh: the waiting room after begin (DESIGN.md 18): first come
# first served, an admission that expires unused, the expired member joining again, and
# the room closing once every unit is in a PAID order (the consumer creates orders PAID:
# SECKILL_PAY_TIMEOUT_S=0). Stock 1, overbook 100% (window 1), admission ttl 10 s (at
# least the request deadline of the suite, 2 x 2 s + 1 s; position 2's token must still be
# valid after the six requests between its admission and its purchase: with 5 s, a loaded
# Galera rerun had little margin; a failed purchase now logs the token's expiry and the
# time):
#   - three members join after begin: positions 1, 2, 3 in arrival order;
#   - position 1 is admitted alone; unused, it expires after 10 s and position 2 is
#     admitted; position 1's state is "expired" and its old token no longer buys (10014);
#   - position 1 joins again: a new place at the end (4); a repeat join changes nothing;
#   - position 2 buys: the order is PAID, the room closes: position 3 sees sold_out with
#     closed true, and a new join is 409 10005;
#   - a front without SECKILL_QUEUE_KEYS_FILE answers the room's routes and the queued
#     voucher's purchases 503, and its /readyz says "keys":false.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_expiry_close
ftq_keys
ftq_voucher -5 --stock 1 --queue --queue-overbook 100 --queue-ttl 10
ft_consumer c SECKILL_PAY_TIMEOUT_S=0
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
F=${FT_ADDR[f]}
req() {
        local hdr=() o
        [[ -n ${4:-} ]] && hdr=(-H "X-Admission: $4")
        o=$(curl -s -m 20 -w '\n%{http_code}' -X "$1" -H "X-User-Id: $3" "${hdr[@]}" "http://$F$2")
        printf '%s %s\n' "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
}
Q=/api/v1/vouchers/$V/queue
# wait_state USER STATE [TRIES]: poll until the member's state is STATE; prints the last answer
wait_state() {
        local i r
        for ((i = 0; i < ${3:-80}; i++)); do
                r=$(req GET "$Q" "$1")
                [[ $r == *"\"state\":\"$2\""* ]] && break
                sleep 0.25
        done
        echo "$r"
}

for u in 11 12 13; do
        r=$(req POST "$Q" "$u")
        ft_eq "$(field position "$r")" $((u - 10)) "user $u joined after begin: position $((u - 10)) (first come first served)"
done
r=$(wait_state 11 admitted)
[[ $r == *'"state":"admitted"'* ]] && ft_ok "position 1 admitted: $r" || ft_fail "position 1: $r"
T11=$(field admission "$r")
r=$(req GET "$Q" 12)
[[ $r == *'"state":"waiting"'* ]] && ft_ok "position 2 waits while the window (1) is full" || ft_fail "position 2: $r"
r=$(wait_state 12 admitted 120)
[[ $r == *'"state":"admitted"'* ]] && ft_ok "position 1's admission expired unused: position 2 admitted: $r" ||
        ft_fail "position 2 after the expiry: $r"
T12=$(field admission "$r")
A12=$(field admitUntil "$r")
r=$(req GET "$Q" 11)
[[ $r == *'"state":"expired"'* ]] && ft_ok "position 1's state: expired" || ft_fail "position 1: $r"
r=$(req POST "/api/v1/vouchers/$V/seckill" 11 "$T11")
[[ $r == "403 "*10014* ]] && ft_ok "an expired token does not buy: 403 10014" || ft_fail "expired token: $r"
r=$(req POST "$Q" 11)
ft_eq "$(field position "$r")" 4 "the expired member joins again at the end"
r=$(req POST "$Q" 11)
ft_eq "$(field position "$r")" 4 "a repeat join changes nothing"
r=$(req POST "/api/v1/vouchers/$V/seckill" 12 "$T12")
[[ $r == "202 "* ]] && ft_ok "position 2 buys: $r" ||
        ft_fail "position 2's purchase: $r (its admission valid until $A12, now $(date +%s%3N))"
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 2" 1 120 0.25 ||
        ft_fail "no PAID order"
r=$(wait_state 13 sold_out 80)
for ((i = 0; i < 40; i++)); do
        [[ $r == *'"closed":true'* ]] && break
        sleep 0.25
        r=$(req GET "$Q" 13)
done
[[ $r == *'"state":"sold_out"'*'"closed":true'* ]] && ft_ok "every unit PAID: the room is closed: $r" ||
        ft_fail "position 3 after the last unit was paid: $r"
r=$(req POST "$Q" 14)
[[ $r == "409 "*10005* ]] && ft_ok "a join into a closed room: 409 10005" || ft_fail "join after closing: $r"
for path in /api/v1/vouchers/999999999999999 /api/v1/vouchers/999999999999999/queue; do
        for m in GET POST; do
                [[ $m == POST && $path != */queue ]] && continue
                r=$(req "$m" "$path" 14)
                [[ $r == "404 "*10004* ]] && ft_ok "$m $path of an unknown voucher: 404 10004" ||
                        ft_fail "$m $path of an unknown voucher: $r"
        done
done
ft_front h
r=$(curl -s -m 10 -w ' %{http_code}' -X POST -H 'X-User-Id: 15' "http://${FT_ADDR[h]}$Q")
[[ $r == *10013*" 503" ]] && ft_ok "a front without the keys file: join 503" || ft_fail "join on a front without keys: $r"
r=$(curl -s -m 10 -w ' %{http_code}' -X POST -H 'X-User-Id: 12' -H "X-Admission: $T12" \
        "http://${FT_ADDR[h]}/api/v1/vouchers/$V/seckill")
[[ $r == *" 503" ]] && ft_ok "a front without the keys file: a queued voucher's purchase 503" ||
        ft_fail "purchase on a front without keys: $r"
r=$(curl -s -m 5 "http://${FT_OPS[h]}/readyz")
[[ $r == *'"queue":{"keys":false'* ]] && ft_ok "its /readyz says so" || ft_fail "/readyz without keys: $r"
ft_alive f && ft_ok "front alive" || ft_fail "front exited"
ft_finish
