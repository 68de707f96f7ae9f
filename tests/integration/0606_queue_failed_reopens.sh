#!/usr/bin/env bash
# 0606_queue_failed_reopens.sh: a FAILED purchase's unit reopens a room that showed sold
# out (DESIGN.md 18 "any unit that comes back reopens the window in order", 7-8 has_order).
# Stock 1, overbook 100% (window 1); members 1 and 2 join after begin: 1 admitted, 2 waits.
# The DB already holds an active order of member 1 that Redis does not know (drift, as in
# fault case 0183), so member 1's purchase is admitted by Redis (202) and, once the
# consumer runs, FAILED has_order; its rollback gives the unit back.
#   - member 1's deduct is held 1.5 s after its used bit (failpoint front.after_queue_use):
#     ticks in between read a stock that does not show it, and must not admit member 2;
#   - after member 1's 202 (no consumer yet) member 2 sees sold_out, closed false, and was
#     never admitted;
#   - the consumer starts: member 1's purchase is FAILED has_order (outcome row);
#   - the unit back reopens the line in order: member 2 is admitted and buys (202), and
#     its order is CREATED.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_failed_reopens
ftq_keys
ftq_voucher 2 --stock 1 --queue --queue-overbook 100 --queue-ttl 120 --title "Failed"
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_SOLDOUT_CACHE_MS=60000 \
        SECKILL_FAILPOINTS="front.after_queue_use=1*sleep(1500)"
F=${FT_ADDR[f]}
# req METHOD PATH USER [X-Admission] -> "CODE BODY" through front f (ftq_req)
req() { ftq_req "$1" "$F" "$2" "$3" "${4:-}"; }
Q=/api/v1/vouchers/$V/queue
S=/api/v1/vouchers/$V/seckill
# wait_state USER STATE: poll (up to 60 s) until the member's state is STATE; prints the answer
wait_state() {
        local r i
        for ((i = 0; i < 240; i++)); do
                r=$(req GET "$Q" "$1")
                [[ $r == *"\"state\":\"$2\""* ]] && break
                sleep 0.25
        done
        echo "$r"
}

ft_sql "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, bucket, status, pay_deadline)
        VALUES (9001, 1, $V, 9002, 0, 1, NOW(3) + INTERVAL 1 HOUR)" || ft_die "the drift order"
while (($(date +%s) < BEGIN)); do sleep 0.2; done
for u in 1 2; do
        r=$(req POST "$Q" "$u")
        [[ $(field position "$r") == "$u" ]] || ft_fail "join $u: $r"
done
r=$(wait_state 1 admitted)
[[ $r == *'"state":"admitted"'* ]] && ft_ok "member 1 admitted" || ft_die "member 1: $r"
T1=$(field admission "$r")
r=$(req POST "$S" 1 "$T1")
[[ $r == "202 "* ]] && ft_ok "member 1's purchase admitted by Redis (it does not know the DB's order): $r" ||
        ft_die "member 1's purchase: $r"
r=$(wait_state 2 sold_out)
[[ $r == *'"state":"sold_out"'*'"closed":false'* ]] && ft_ok "member 2 told sold out, room open: $r" ||
        ft_fail "member 2 before the FAILED: $r"
# invariant 8: member 2 was never admitted while member 1's purchase was on its way (the
# failpoint holds its deduct 1.5 s after the used bit: every tick in between read a stock
# that did not show it yet)
grep -q "user=2 -> 200 .*\"state\":\"admitted\"" "$FT_WORK/transcript.txt" &&
        ft_fail "member 2 was admitted on a reading that did not show member 1's deduct" ||
        ft_ok "member 2 never admitted before the FAILED"

ft_consumer c
ft_wait_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = $V AND user_id = 1 AND outcome = 2" 1 120 0.25 &&
        ft_ok "member 1's purchase FAILED ($(ft_sql "SELECT reason FROM tb_seckill_outcome WHERE voucher_id = $V AND user_id = 1"))" ||
        ft_fail "no FAILED outcome for member 1"
r=$(wait_state 2 admitted)
[[ $r == *'"state":"admitted"'*'"position":2'* ]] && ft_ok "the unit back reopens the line: member 2 admitted ($r)" ||
        ft_fail "member 2 after the FAILED: $r"
r=$(req POST "$S" 2 "$(field admission "$r")")
[[ $r == "202 "* ]] && ft_ok "member 2 buys the unit (past the warm sold-out cache): $r" || ft_fail "member 2's purchase: $r"
ft_wait_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = $V AND user_id = 2 AND outcome = 1" 1 120 0.25 &&
        ft_ok "member 2's order CREATED" || ft_fail "member 2's order not CREATED"
ft_alive f && ft_alive c && ft_ok "front and consumer alive" || ft_fail "a service exited"
ft_finish
