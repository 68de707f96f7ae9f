#!/usr/bin/env bash
# 0385_consumer_rebalance.sh: three consumer processes share the group; in the middle of
# a burst over four vouchers (key = voucherId, so several partitions are busy) a fourth
# joins, one is SIGKILLed and one leaves gracefully (SIGTERM): rebalances while
# transactions run. DESIGN.md 5/8: offsets are stored only for settled messages, the
# outcome key makes any redelivery harmless. Every voucher sells out exactly.
# consumer.between_statements=sleep(150) keeps transactions open across the rebalances.
# fault: four vouchers, three consumers: one joins, one SIGKILLed, one leaves mid-burst (rebalances)
# Buckets: 4 for two of the four vouchers, 1 for the other two (about half of the cases sell bucketed vouchers).
FT_PARTITIONS=6
. "$(dirname "$0")/../support/ft.sh"
ft_init consumer_rebalance
VS=()
for b in 4 1 4 1; do VS+=("$(ft_voucher 50 "$b")"); done
ft_front f1
ft_consumer c1 SECKILL_FAILPOINTS="consumer.between_statements=sleep(150)"
ft_consumer c2 SECKILL_FAILPOINTS="consumer.between_statements=sleep(150)"
ft_consumer c3 SECKILL_FAILPOINTS="consumer.between_statements=sleep(150)"
sleep 3
BUYERS=()
for i in 0 1 2 3; do
        ft_buy f1 "${VS[$i]}" $((i * 1000 + 1)) 90 3 &
        BUYERS+=($!)
done
sleep 2
ft_consumer c4 SECKILL_FAILPOINTS="consumer.between_statements=sleep(150)"
sleep 2
ft_kill c1
ft_log "consumer c1 SIGKILLed"
sleep 2
ft_stop c2
ft_log "consumer c2 stopped (SIGTERM)"
ft_fault_over
wait "${BUYERS[@]}"
ft_settle 90 || ft_fail "202s not decided after the rebalances"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
for v in "${VS[@]}"; do ft_check "$v" --sold-out; done
n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2")
ft_eq "$n" 0 "no purchase failed"
ft_finish
