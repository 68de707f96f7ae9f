#!/usr/bin/env bash
# 0607_queue_db_only_switch.sh: the waiting room while an operator runs the voucher on the
# DB alone (`seckill-admin degrade db-only --voucher V`, DESIGN.md 12) and Redis is up.
# DESIGN.md 18 "Outage and failover": "While the front sells on the DB alone (§12),
# admissions already issued still buy until they expire ..., joins and polls answer 503 +
# Retry-After, and the line does not advance." Stock 3, overbook 100%: members 1..4 join
# after begin, 1..3 are admitted; member 1 buys through Redis; then the switch:
#   - admitted tokens still buy on the DB-only path (200): members 2 and 3;
#   - a purchase without a token, or with another user's, is 403 10014;
#   - a join (member 5) and a poll (member 4) answer 503 with a Retry-After header;
#   - the DB holds exactly the three buyers' orders.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_db_only_switch
ftq_keys
ftq_voucher 3 --stock 3 --queue --queue-overbook 100 --queue-ttl 120 --title "DB only"
ftq_three_admitted

"$FT_BIN/seckill-admin" degrade db-only --voucher "$V" >>"$FT_WORK/admin.log" 2>&1 || ft_die "degrade db-only: $(tail -n 3 "$FT_WORK/admin.log")"
ft_log "voucher $V switched to db-only (Redis up)"
for ((i = 0; i < 240; i++)); do
        st=$("$FT_BIN/seckill-admin" degrade status --voucher "$V" 2>/dev/null | grep "voucher=$V ")
        [[ $st == *' state=db '* ]] && break
        sleep 0.25
done
[[ $st == *' state=db '* ]] && ft_ok "the voucher is on the DB-only path: $st" || ft_die "not in state db: $st"
# The front follows the switch rows within a second or two; the join must turn 503.
for ((i = 0; i < 120; i++)); do
        r=$(req POST "$Q" 5)
        [[ $r == "503 "* ]] && break
        sleep 0.25
done
[[ $r =~ ^503\ [0-9]+\  ]] && ft_ok "a join on the DB alone: 503 + Retry-After ($r)" ||
        ft_fail "a join on the DB alone, 30 s after the switch: $r (DESIGN.md 18: 503 + Retry-After)"
r=$(req GET "$Q" 4)
[[ $r =~ ^503\ [0-9]+\  ]] && ft_ok "a poll on the DB alone: 503 + Retry-After ($r)" ||
        ft_fail "a poll on the DB alone: $r (DESIGN.md 18: 503 + Retry-After)"
for u in 2 3; do
        for ((i = 0; i < 120; i++)); do
                r=$(req POST "$S" "$u" "${TOK[$u]}")
                [[ $r == "503 "* ]] || break
                sleep 0.25
        done
        [[ $r == "200 "* ]] && ft_ok "member $u's admission buys on the DB-only path: $r" || ft_fail "member $u on the DB alone: $r"
done
r=$(req POST "$S" 4)
[[ $r == "403 "*10014* ]] && ft_ok "a purchase without a token on the DB alone: 403 10014" || ft_fail "no token: $r"
r=$(req POST "$S" 4 "${TOK[2]}")
[[ $r == "403 "*10014* ]] && ft_ok "another user's token on the DB alone: 403 10014" || ft_fail "other's token: $r"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(user_id ORDER BY user_id) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)")" \
        "1,2,3" "the DB holds one order each for members 1, 2, 3 and nothing else"
ft_alive f && ft_ok "front alive" || ft_fail "the front exited"
ft_finish
