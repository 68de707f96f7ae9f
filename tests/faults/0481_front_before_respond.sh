#!/usr/bin/env bash
# 0481_front_before_respond.sh: the front dies (failpoint front.before_respond=exit)
# after Kafka said PERSISTED and before it answered 202. The client saw no 202, the
# consumer creates the order anyway: the sale stays exact, and every 202 that was
# answered (by healthy fronts) is accounted for (DESIGN.md 7-9).
# fault: front SIGKILLed after Kafka said PERSISTED, before answering 202 (front.before_respond=exit)
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init front_before_respond
V=$(ft_voucher 80)
ft_consumer c1
ft_front f1
ft_buy f1 "$V" 1 40 8
ft_front f2 SECKILL_FAILPOINTS="front.before_respond=exit"
ft_buy f2 "$V" 1001 16 8
ft_wait_exit f2 10 && ft_ok "front f2 died at front.before_respond" || ft_fail "front f2 still alive"
ft_fault_over
ft_buy f1 "$V" 2001 120 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
# The purchases cut off at before_respond were published: the consumer decided them.
n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE user_id BETWEEN 1001 AND 1016 AND outcome = 1")
((n >= 1)) && ft_ok "$n purchase(s) cut off before the answer still became orders" ||
        ft_fail "no order for the users of the killed front"
ft_finish
