#!/usr/bin/env bash
# 0386_poison_collision.sh: poison messages and an id collision are produced straight
# into the order topic (key = the voucher, so they sit on the sale's partition between
# real purchases). DESIGN.md 8 "poison message: DLQ with the reason, offset stored";
# 7 "a mismatch is an id collision: the consumer DLQs, never a decision". The partition
# keeps flowing, the sale sells out exactly, nothing is decided for the poison, the
# collided purchase keeps its original order.
# fault: poison messages and an id collision produced into the order topic
# Buckets: 1: its poison is keyed by the voucher id, the partition of a 1-bucket voucher's purchases.
. "$(dirname "$0")/../support/ft.sh"
ft_init poison_collision
V=$(ft_voucher 60)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_settle 30 || ft_fail "first batch not decided"
read -r T O U < <(ft_sql "SELECT trace_id, order_id, user_id FROM tb_seckill_outcome WHERE outcome = 1 ORDER BY trace_id LIMIT 1")
NOW_MS=$(($(date +%s) * 1000))
msg() { # msg TRACE ORDER USER VOUCHER BEFORE DEDUCT AFTER
        printf '{"traceId":"%s","orderId":"%s","userId":"%s","voucherId":"%s","beforeQty":%s,"deductQty":%s,"afterQty":%s,"ts":%s}' \
                "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$NOW_MS"
}
{
        printf '%s\t%s\n' "$V" 'not json at all'
        printf '%s\t%s\n' "$V" '{"traceId":"77"}'
        printf '%s\t%s\n' "$V" "$(msg 0123 5 900001 "$V" 10 1 9)"
        printf '%s\t%s\n' "$V" "$(msg 9223372036854775808 5 900002 "$V" 10 1 9)"
        printf '%s\t%s\n' "$V" "$(msg 77001 5 900003 "$V" 10 1 8)"
        printf '%s\t%s\n' "$V" "$(msg 77002 5 900004 "$V" 10 -1 11)"
        printf '%s\t%s\n' "$V" '{"traceId":77003,"orderId":"5","userId":"900005","voucherId":"1","beforeQty":1,"deductQty":1,"afterQty":0,"ts":1}'
        printf '%s\t%s\n' "$V" '[]'
        # The collision: an existing traceId with another order and user.
        printf '%s\t%s\n' "$V" "$(msg "$T" $((O + 1)) 900006 "$V" 10 1 9)"
} >"$FT_WORK/poison.tsv"
NPOISON=$(wc -l <"$FT_WORK/poison.tsv")
timeout 60 "$FT_TOOL" produce "$SECKILL_KAFKA_BROKERS" "$FT_TOPIC" <"$FT_WORK/poison.tsv" >"$FT_WORK/poison.out" 2>&1 &&
        ft_ok "produced $NPOISON poison/collision messages" || ft_fail "produce: $(cat "$FT_WORK/poison.out")"
ft_fault_over
ft_buy f1 "$V" 1001 100 8
ft_settle 60 || ft_fail "the partition stopped behind the poison"
N=0
for ((i = 0; i < 30; i++)); do
        N=$(timeout 20 "$FT_TOOL" count "$SECKILL_KAFKA_BROKERS" "$FT_TOPIC.dlq" 2>/dev/null || echo 0)
        ((N >= NPOISON)) && break
        sleep 1
done
ft_eq "$N" "$NPOISON" "every poison message and the collision went to the DLQ"
ft_wait_lag0 30 || ft_fail "offsets of the poison were not stored"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE user_id >= 900000 OR trace_id IN (77, 77001, 77002, 77003)")" 0 \
        "nothing decided for the poison"
ft_eq "$(ft_sql "SELECT CONCAT_WS(',', order_id, user_id, outcome) FROM tb_seckill_outcome WHERE trace_id = $T")" "$O,$U,1" \
        "the collided trace keeps its outcome"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = $T OR user_id >= 900000")" 1 "no order from the collision"
ft_alive c1 && ft_ok "consumer still running" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
# The reconciler reads the DLQ: a DLQ'd traceId is reported (exit 2) until fixed, never
# rolled back (DESIGN.md 8). Accept 0 or 2 here; the state must be consistent either way.
ft_reconcile 30
ft_log "reconciler's last pass: exit $FT_RECON_RC: $(grep -i -m3 'dlq\|collision' "$FT_WORK"/recon.*.log | tr '\n' ' ' | cut -c1-300)"
[[ $FT_RECON_RC == 0 || $FT_RECON_RC == 2 ]] && ft_ok "reconciler exit $FT_RECON_RC" || ft_fail "reconciler exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_finish
