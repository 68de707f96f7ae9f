#!/usr/bin/env bash
# 0609_queue_generation_draw.sh: a room that lost its Redis keys after begin starts a new
# generation whose first 30 s of joins are drawn at random (DESIGN.md 18 "Outage and
# failover": "joins during the first 30 s of the new generation are drawn at random like a
# pre-queue, so the fastest clients do not win the restart"). One front, stock 20:
#   - member 1 joins after begin (position 1) and is admitted: the front's tick has seen
#     the room's generation;
#   - the room's seven keys are deleted (a Redis data loss); members 2..9 join at once, in
#     order: each is told "prequeue" with no position (before, they got positions 1..8 in
#     arrival order: the fastest won the restart);
#   - no sooner than 30 s after the new generation began, they hold positions that are a
#     permutation of 1..8, not their arrival order (1 chance in 40,320 of being so);
#   - member 10 joining after the draw is first come first served: position 9;
#   - the new generation is logged and counted.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_generation_draw
ftq_keys
ftq_voucher 3 --stock 20 --queue --queue-overbook 100 --queue-ttl 300 --title "Draw"
ft_consumer c
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
F=${FT_ADDR[f]}
Q=/api/v1/vouchers/$V/queue
# req METHOD USER -> "CODE BODY" of the room's route (also in transcript.txt)
req() {
        local o
        o=$(curl -s -m 20 -w '\n%{http_code}' -X "$1" -H "X-User-Id: $2" "http://$F$Q")
        printf '%s %s\n' "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
        printf '%s %s %s user=%s -> %s %s\n' "$(date +%s%3N)" "$1" "$Q" "$2" "${o##*$'\n'}" \
                "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/transcript.txt"
}
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

while (($(date +%s) < BEGIN)); do sleep 0.2; done
r=$(req POST 1)
[[ $(field position "$r") == 1 ]] || ft_die "member 1 after begin: $r"
for ((i = 0; i < 120; i++)); do
        r=$(req GET 1)
        [[ $r == *'"state":"admitted"'* ]] && break
        sleep 0.25
done
[[ $r == *'"state":"admitted"'* ]] && ft_ok "member 1 admitted: the tick has seen generation 1" ||
        ft_die "member 1 never admitted: $r"

# A Redis data loss: the room's keys are gone.
keys=()
for k in state pre post used gone ticks uselog; do keys+=("$FT_PREFIX:{q:$V}:$k"); done
ft_rcli DEL "${keys[@]}" >/dev/null || ft_die "DEL of the room's keys"
t0=$(date +%s%3N)
bad=""
for u in 2 3 4 5 6 7 8 9; do
        r=$(req POST "$u")
        [[ $r == "200 "*'"state":"prequeue"'* && $r != *'"position"'* ]] || bad+=" $u:$r"
done
ft_eq "$bad" "" "members 2..9 joining the new generation are drawn: prequeue, no position"

# The draw ends 30 s after the new generation began; then the positions are given.
declare -A POS
for ((i = 0; i < 240; i++)); do
        r=$(req GET 9)
        [[ -n $(field position "$r") ]] && break
        sleep 0.25
done
waited=$(($(date +%s%3N) - t0))
((waited >= 29500)) && ft_ok "positions given $waited ms after the loss (>= 30 s)" ||
        ft_fail "positions given only $waited ms after the loss (< 30 s)"
order=""
for u in 2 3 4 5 6 7 8 9; do
        POS[$u]=$(field position "$(req GET "$u")")
        order+="${POS[$u]} "
done
ft_eq "$(tr ' ' '\n' <<<"$order" | sed '/^$/d' | sort -n | tr '\n' ' ')" "1 2 3 4 5 6 7 8 " \
        "the drawn members hold a permutation of 1..8 ($order)"
[[ $order != "1 2 3 4 5 6 7 8 " ]] && ft_ok "not the arrival order: $order" ||
        ft_fail "the positions are the arrival order (the fastest won the restart)"
r=$(req POST 10)
ft_eq "$(field position "$r")" 9 "a join after the draw is first come first served: position 9"
for ((i = 0; i < 40; i++)); do [[ $(metric seckill_queue_new_generations_total) -ge 1 ]] && break; sleep 0.25; done
ft_eq "$(metric seckill_queue_new_generations_total)" 1 "the new generation counted"
ft_eq "$(grep -c 'event=queue_new_generation' "$FT_WORK/f.log")" 1 "the new generation logged"
ft_alive f && ft_ok "the front is alive" || ft_fail "the front died"
ft_finish
