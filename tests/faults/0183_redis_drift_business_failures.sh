#!/usr/bin/env bash
# 0183_redis_drift_business_failures.sh: Redis drifts from the DB (10 units too many in
# the stock, 5 buyers missing from the users hash), so the front admits purchases the DB
# must refuse: sold_out (no stock left in the DB) and has_order (the buyer already has
# an order). DESIGN.md 7-8: the consumer records FAILED first, then runs rollback.lua
# (sold_out: release the user, no restore, clamp Redis stock to the DB's; has_order:
# restore, users[U] re-pointed to the trace of the buyer's order). The first consumer
# dies at consumer.before_rollback=exit, between the FAILED insert and rollback.lua; its
# successor meets the FAILED row on redelivery and must follow it (run the rollback,
# never create an order).
# fault: Redis drift (10 phantom units, 5 forgotten buyers) -> sold_out / has_order FAILED; consumer SIGKILLed between FAILED and rollback.lua
# Buckets: 1: its drift is written into bucket 0's keys.
. "$(dirname "$0")/../support/ft.sh"
ft_init redis_drift_business_failures
V=$(ft_voucher 40)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_settle 30 || ft_fail "first batch not decided"
ft_stop c1
# Drift: 10 phantom units, and buyers 1..5 forgotten by the admission gate.
ft_rcli incrby "$(ft_key "$V" stock)" 10 >/dev/null
ft_rcli hdel "$(ft_key "$V" users)" 1 2 3 4 5 >/dev/null
ft_consumer c2 SECKILL_FAILPOINTS="consumer.before_rollback=exit"
ft_buy f1 "$V" 1 5 5          # again: admitted by Redis, has_order in the DB
ft_buy f1 "$V" 1001 60 8      # 30 units left in Redis: 20 real, then phantom ones
if ft_wait_exit c2 30; then ft_ok "consumer c2 died at consumer.before_rollback"; else ft_fail "consumer c2 never reached consumer.before_rollback"; fi
ft_consumer c3
ft_fault_over
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2 AND reason = 'sold_out'")
((n >= 1)) && ft_ok "$n purchase(s) FAILED sold_out" || ft_fail "no sold_out failure (drift not exercised)"
n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2 AND reason = 'has_order'")
ft_eq "$n" 5 "the 5 second purchases FAILED has_order"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE user_id BETWEEN 1 AND 5")" 5 "buyers 1..5 keep exactly one order"
ft_finish
