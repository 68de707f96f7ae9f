#!/usr/bin/env bash
# 0604_queue_outage.sh: the waiting room during a Redis outage (DESIGN.md 18 "Outage and
# failover", 12). The room and the stock live in a private Redis; stock 3, overbook 100%:
# members 1..4 join after begin, 1..3 are admitted (4 waits); member 1 buys through Redis.
# Then the private Redis is SIGKILLed (it stays down):
#   - the front's breaker opens and the voucher moves to the DB-only path (mode auto);
#     admitted tokens still buy there: members 2 and 3 get 200 with an order;
#   - a purchase without a token is still 403 10014 (no purchase without a valid token);
#   - a join (new member 5) and a poll (waiting member 4) answer 503 with a Retry-After
#     header: the line cannot move without its store;
#   - the DB holds exactly the three buyers' orders, one each.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_outage
ft_private_redis
ftq_keys
ftq_voucher 3 --stock 3 --queue --queue-overbook 100 --queue-ttl 120 --title "Outage"
ftq_three_admitted

ft_private_redis_kill
ok2=""
for ((i = 0; i < 240; i++)); do
        r=$(req POST "$S" 2 "${TOK[2]}")
        [[ $r == "200 "* ]] && { ok2=$r; break; }
        [[ $r == "503 "* ]] || { ft_fail "member 2 during the outage: $r (want 503 while draining, then 200)"; break; }
        sleep 0.25
done
[[ -n $ok2 ]] && ft_ok "member 2's admission buys on the DB-only path: $ok2" || ft_fail "member 2 never bought: $r"
r=$(req POST "$S" 3 "${TOK[3]}")
[[ $r == "200 "* ]] && ft_ok "member 3's admission buys on the DB-only path: $r" || ft_fail "member 3: $r"
r=$(req POST "$S" 4)
[[ $r == "403 "*10014* ]] && ft_ok "a purchase without a token during the outage: 403 10014" || ft_fail "no token: $r"
r=$(req POST "$S" 4 "${TOK[2]}")
[[ $r == "403 "*10014* ]] && ft_ok "another user's token during the outage: 403 10014" || ft_fail "other's token: $r"
r=$(req POST "$Q" 5)
[[ $r =~ ^503\ [0-9]+\  ]] && ft_ok "a join during the outage: 503 + Retry-After ($r)" || ft_fail "join during the outage: $r"
r=$(req GET "$Q" 4)
[[ $r =~ ^503\ [0-9]+\  ]] && ft_ok "a poll during the outage: 503 + Retry-After ($r)" || ft_fail "poll during the outage: $r"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(user_id ORDER BY user_id) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)")" \
        "1,2,3" "the DB holds one order each for members 1, 2, 3 and nothing else"
ft_alive f && ft_ok "front alive" || ft_fail "the front exited"
ft_finish
