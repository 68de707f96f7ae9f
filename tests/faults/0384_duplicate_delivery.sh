#!/usr/bin/env bash
# 0384_duplicate_delivery.sh: every message of a finished sale is delivered again. The
# consumers stop, the group's committed offsets are moved back to the start of each
# partition with rd_kafka_AlterConsumerGroupOffsets (tools/fttool.c; DESIGN.md 10), and a
# new consumer re-reads the whole topic. DESIGN.md 8 "duplicate message: outcome key:
# one order, no rollback": nothing in the DB or in Redis may change.
# fault: duplicate delivery: the group's committed offsets moved back to the start (AlterConsumerGroupOffsets)
# Buckets: 4 for the first voucher, 1 for the second (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
ft_init duplicate_delivery
V=$(ft_voucher 60 4)
V2=$(ft_voucher 30)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 90 8
ft_buy f1 "$V2" 1 40 8
ft_settle 60 || ft_fail "first delivery not decided"
ft_wait_lag0 60 || ft_fail "the group did not commit the first delivery"
snapshot() {
        ft_sql "SELECT (SELECT COUNT(*) FROM tb_seckill_outcome), (SELECT COUNT(*) FROM tb_voucher_order),
                (SELECT GROUP_CONCAT(stock ORDER BY voucher_id, bucket) FROM tb_seckill_stock),
                (SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE log_type = 1),
                (SELECT COUNT(*) FROM tb_voucher_reconcile_log)" | tr '\t' ' '
        local v b
        for v in "$V" "$V2"; do
                for ((b = 0; b < $(ft_nbuckets "$v"); b++)); do
                        echo "redis $v:$b $(ft_rcli get "$(ft_key "$v" stock "$b")") $(ft_rcli hlen "$(ft_key "$v" users "$b")")"
                done
        done
}
BEFORE=$(snapshot)
ft_log "before: $(tr '\n' ' ' <<<"$BEFORE")"
ft_stop c1
N=$(timeout 20 "$FT_TOOL" count "$SECKILL_KAFKA_BROKERS" "$FT_TOPIC")
ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do   # the group may need a moment to be empty
        if timeout 40 "$FT_TOOL" reset-offsets "$SECKILL_KAFKA_BROKERS" "$FT_GROUP" "$FT_TOPIC" \
                >"$FT_WORK/reset.log" 2>&1; then ok=1; break; fi
        sleep 1
done
((ok)) && ft_ok "offsets moved back ($(tr '\n' ' ' <"$FT_WORK/reset.log"))" || ft_fail "reset-offsets: $(cat "$FT_WORK/reset.log")"
ft_eq "$(ft_lag)" "$N" "the group's lag is the whole topic again ($N messages)"
ft_consumer c2
ft_fault_over
ft_wait_lag0 60 || ft_fail "the redelivery was not consumed"
sleep 1
AFTER=$(snapshot)
ft_eq "$(tr '\n' ' ' <<<"$AFTER")" "$(tr '\n' ' ' <<<"$BEFORE")" "redelivery of $N messages changed nothing (outcomes, orders, stock, logs, Redis)"
n=$(timeout 20 "$FT_TOOL" count "$SECKILL_KAFKA_BROKERS" "$FT_TOPIC.dlq" 2>/dev/null || echo 0)
ft_eq "$n" 0 "no duplicate went to the DLQ"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check "$V2" --sold-out
ft_finish
