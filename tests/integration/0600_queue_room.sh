#!/usr/bin/env bash
# 0600_queue_room.sh: the waiting room end to end (DESIGN.md 3, 18, invariant 8), two fronts
# both advancing the line, one consumer. Stock 2, overbook 200% (window 4), 5 members
# join the pre-queue, one more after begin:
#   - GET /api/v1/vouchers/{id}: queue on, opensAt, serverTime; a poll of a non-member is
#     404 10016; a purchase before begin is 403 10002;
#   - join is idempotent (same state, same member count); no position before begin;
#     after begin the pre-queue holds positions 1..5 (a permutation), the late joiner 6;
#   - positions 1..4 are admitted, in order, never more than the window;
#   - a purchase without a token, or with another user's token, is 403 10014; with its
#     own token 202; the same token again 403 10014 (a token buys once);
#   - position 3 buys after the two units went (10005 from Redis: the front's sold-out
#     cache is now warm); waiting members see sold_out with unitsHeld 2; with its
#     position ticket (X-Queue-Ticket) such a poll is answered from the front's room state
#     on either front, a tampered or another member's ticket reads Redis;
#   - a cancel gives a unit back: the next position is admitted and position 4's valid
#     admission buys (202) past the warm sold-out cache;
#   - the cancelled buyer joins again and gets a new place at the end.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_room
ftq_keys
# The services first, then the voucher with begin 20 s ahead: five members join before it,
# on a loaded Galera or Cluster rerun too (with the voucher made first, the fronts' start
# at load 20-30 used up the lead and begin came before the joins)
ft_consumer c
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_SOLDOUT_CACHE_MS=60000
ft_front g SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_SOLDOUT_CACHE_MS=60000
# Admissions live 120 s: position 4's token, taken early, buys only after the cancel
# (30 s ran out before that step at load 15 on the Cluster rerun)
ftq_voucher 20 --stock 2 --queue --queue-overbook 200 --queue-ttl 120 --title "Test sale"
F=${FT_ADDR[f]}
G=${FT_ADDR[g]}
# req METHOD ADDR PATH USER [X-Admission] -> "CODE BODY" (ftq_req: also in the transcript)
req() { ftq_req "$@"; }
Q=/api/v1/vouchers/$V/queue

r=$(curl -s -m 10 "http://$F/api/v1/vouchers/$V")
echo "GET /api/v1/vouchers/$V -> $r" >>"$FT_WORK/transcript.txt"
[[ $r == *'"mode":"on"'* && $r == *'"opensAt":'* && $r == *'"serverTime":'* && $r == *'"title":"Test sale"'* ]] &&
        ft_ok "voucher facts: $r" || ft_fail "voucher facts: $r"
r=$(req GET "$F" "$Q" 99)
[[ $r == "404 "*10016* ]] && ft_ok "poll of a non-member: 404 10016" || ft_fail "poll of a non-member: $r"
r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" 1)
[[ $r == "403 "*10002* ]] && ft_ok "purchase before begin: 403 10002" || ft_fail "purchase before begin: $r"

for u in 1 2 3 4 5; do
        r=$(req POST "$F" "$Q" "$u")
        [[ $r == "200 "*'"state":"prequeue"'* && $r != *'"position"'* ]] || ft_fail "join $u: $r"
done
r1=$(req POST "$G" "$Q" 3)
[[ $r1 == "200 "*'"state":"prequeue"'*'"members":5'* ]] && ft_ok "a repeat join (other front) changes nothing: $r1" ||
        ft_fail "repeat join: $r1"
while (($(date +%s) < BEGIN)); do sleep 0.2; done
r=$(req POST "$G" "$Q" 6)
[[ $(field position "$r") == 6 ]] && ft_ok "joined after begin: position 6 ($r)" || ft_fail "late join: $r"

declare -A POS TOK
for ((i = 0; i < 100; i++)); do
        n=0
        for u in 1 2 3 4 5 6; do
                r=$(req GET "$F" "$Q" "$u")
                POS[$u]=$(field position "$r")
                [[ $r == *'"state":"admitted"'* ]] && { TOK[$u]=$(field admission "$r"); n=$((n + 1)); }
        done
        ((n >= 4)) && break
        sleep 0.25
done
ft_eq "$(printf '%s\n' "${POS[1]}" "${POS[2]}" "${POS[3]}" "${POS[4]}" "${POS[5]}" | sort -n | tr '\n' ' ')" \
        "1 2 3 4 5 " "pre-queue positions are a permutation of 1..5"
declare -A AT
for u in 1 2 3 4 5 6; do AT[${POS[$u]}]=$u; done
adm=""
for p in 1 2 3 4 5 6; do [[ -n ${TOK[${AT[$p]}]:-} ]] && adm+="$p "; done
ft_eq "$adm" "1 2 3 4 " "positions 1..4 admitted, in order, window 4 (2 units x 200%)"
u1=${AT[1]} u2=${AT[2]} u3=${AT[3]} u4=${AT[4]} u5=${AT[5]}

r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" "$u1")
[[ $r == "403 "*10014* ]] && ft_ok "purchase without a token: 403 10014" || ft_fail "no token: $r"
r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" "$u1" "${TOK[$u2]}")
[[ $r == "403 "*10014* ]] && ft_ok "purchase with another user's token: 403 10014" || ft_fail "other's token: $r"
r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" "$u1" "${TOK[$u1]}")
[[ $r == "202 "* ]] && ft_ok "position 1 buys with its admission: $r" || ft_fail "position 1: $r"
O1=$(field orderId "$r")
r=$(req POST "$G" "/api/v1/vouchers/$V/seckill" "$u1" "${TOK[$u1]}")
[[ $r == "403 "*10014* ]] && ft_ok "the same token again (other front): 403 10014" || ft_fail "token twice: $r"
r=$(req POST "$G" "/api/v1/vouchers/$V/seckill" "$u2" "${TOK[$u2]}")
[[ $r == "202 "* ]] && ft_ok "position 2 buys: $r" || ft_fail "position 2: $r"
r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" "$u3" "${TOK[$u3]}")
[[ $r == "409 "*10005* ]] && ft_ok "position 3 after the last unit: 409 10005 (front f's sold-out cache warm)" ||
        ft_fail "position 3: $r"
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)" 2 120 0.25 ||
        ft_fail "two orders"
for ((i = 0; i < 60; i++)); do
        r=$(req GET "$F" "$Q" "$u5")
        [[ $r == *'"state":"sold_out"'*'"unitsHeld":2'* ]] && break
        sleep 0.25
done
[[ $r == *'"state":"sold_out"'*'"unitsHeld":2'*'"closed":false'* ]] && ft_ok "waiting member told sold_out, 2 units held: $r" ||
        ft_fail "position 5 after sell-out: $r"
r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" "$u5")
[[ $r == "403 "*10014* ]] && ft_ok "a waiting member's purchase: 403 10014 (never reaches Redis)" || ft_fail "waiting purchase: $r"
# DESIGN.md 18 "Polling costs little": with its position ticket, a waiting member's poll is
# answered from the room state the front's tick read (no Redis: such an answer hands no new
# ticket), on either front; a tampered ticket, or another member's, is read from Redis.
TIC=$(field ticket "$(req GET "$F" "$Q" "$u5")")
[[ $TIC == t1.* ]] && ft_ok "a member's answer carries its position ticket" || ft_fail "no ticket: $TIC"
# reqt ADDR USER TICKET: GET …/queue with X-Queue-Ticket -> "CODE BODY"
reqt() {
        local o
        o=$(curl -s -m 20 -w '\n%{http_code}' -H "X-User-Id: $2" -H "X-Queue-Ticket: $3" "http://$1$Q")
        printf '%s %s\n' "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
        printf 'GET %s user=%s ticket -> %s %s\n' "$Q" "$2" "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/transcript.txt"
}
for a in "$F" "$G"; do
        # the tick's state is at most 1 s old; a loaded machine may make it older: retry
        for ((i = 0; i < 40; i++)); do
                r=$(reqt "$a" "$u5" "$TIC")
                [[ $r == "200 "* && $r != *'"ticket"'* ]] && break
                sleep 0.25
        done
        [[ $r == "200 "*'"state":"sold_out"'*'"unitsHeld":2'*'"closed":false'* && $r != *'"ticket"'* ]] &&
                ft_ok "a poll with the ticket on $a: answered from the room state: $r" ||
                ft_fail "a poll with the ticket on $a: $r"
done
[[ ${TIC: -1} == A ]] && bad=${TIC%?}B || bad=${TIC%?}A
r=$(reqt "$F" "$u5" "$bad")
[[ $r == "200 "*'"state":"sold_out"'*'"ticket":"t1.'* ]] && ft_ok "a tampered ticket: read from Redis: $r" ||
        ft_fail "a tampered ticket: $r"
r=$(reqt "$F" "$u4" "$TIC")
[[ $r == "200 "*'"state":"admitted"'*'"ticket":"t1.'* ]] && ft_ok "another member's ticket: the caller's own state, from Redis: $r" ||
        ft_fail "another member's ticket: $r"

r=$(ft_cancel f "$u1" "$O1")
[[ $r == 200* ]] && ft_ok "position 1 cancels its order: $r" || ft_fail "cancel: $r"
for ((i = 0; i < 80; i++)); do
        r=$(req GET "$G" "$Q" "$u5")
        [[ $r == *'"state":"admitted"'* ]] && break
        sleep 0.25
done
[[ $r == *'"state":"admitted"'* ]] && ft_ok "the released unit admits position 5: $r" || ft_fail "position 5 after the release: $r"
r=$(req POST "$F" "/api/v1/vouchers/$V/seckill" "$u4" "${TOK[$u4]}")
[[ $r == "202 "* ]] && ft_ok "position 4's admission buys the released unit past front f's warm sold-out cache: $r" ||
        ft_fail "position 4 after the release: $r"
r=$(req GET "$F" "$Q" "$u1")
[[ $r == *'"state":"used"'* ]] && ft_ok "the cancelled buyer's state: used" || ft_fail "cancelled buyer: $r"
# The new place is position 7. Its state is "waiting" (with the position) until a tick has
# read the stock position 4's purchase took, and "sold_out" (no position, DESIGN.md 3)
# once one has: either is right, so a sold_out answer is checked against the room itself.
r=$(req POST "$F" "$Q" "$u1")
if [[ $(field position "$r") == 7 ]]; then
        ft_ok "the cancelled buyer joins again at the end: $r"
elif [[ $r == *'"state":"sold_out"'* ]] &&
        q=$("$FT_BIN/seckill-admin" voucher queue "$V" 2>&1) &&
        [[ $q == *'"members":7,'* && $q == *'"afterBegin":2,'* ]]; then
        ft_ok "the cancelled buyer joins again at the end (told sold_out: no unit left): $r; $q"
else
        ft_fail "join again: $r ${q:-}"
fi
r=$(curl -s -m 5 "http://${FT_OPS[f]}/readyz")
[[ $r == *'"queue":{"keys":true'* ]] && ft_ok "/readyz says the room is served" || ft_fail "/readyz: $r"
"$FT_BIN/seckill-admin" voucher queue "$V" >>"$FT_WORK/transcript.txt" 2>&1 && ft_ok "voucher queue: $(tail -n 1 "$FT_WORK/transcript.txt")" ||
        ft_fail "voucher queue: $(tail -n 1 "$FT_WORK/transcript.txt")"
metric() { curl -s -m 5 "http://${FT_OPS[$1]}/metrics" | awk -v m="$2" 'index($1, m) == 1 {s += $2} END {print s + 0}'; }
(($(metric f seckill_queue_polls_total) > 0)) && ft_ok "seckill_queue_polls_total counted" || ft_fail "no poll metric"
ft_alive f && ft_alive g && ft_ok "fronts alive" || ft_fail "a front exited"
cp "$FT_WORK/transcript.txt" "${FT_OUT:-/tmp}/0600_queue_room.transcript.txt" 2>/dev/null || true
ft_finish
