#!/usr/bin/env bash
# 0281_add_stock_mid_sale.sh: `seckill-admin voucher add-stock` while a crowd buys a
# 4-bucket voucher through a front (DESIGN.md 14 add-stock, 8 rebuild, 9 invariants 1-5).
# 24 units; a crowd buys in the background; add-stock +22 (spread 6,6,5,5) with request id
# R commits once and rebuilds (every bucket paused, then Redis set from the DB) while the
# crowd keeps coming; `verify` holds on the live state; the same R again adds nothing
# (and rebuilds again). At the end the voucher sells out exactly 24 + 22: zero oversell,
# zero undersell, one order per user, every 202 decided, Redis = DB per bucket.
# fault: add-stock mid-sale on a 4-bucket voucher (its rebuild pauses every bucket while a crowd buys), then the same request id again
. "$(dirname "$0")/../support/ft.sh"
ft_init add_stock_mid_sale
ft_consumer c1
ft_front f1
INIT=24
V=$(ft_voucher "$INIT" 4)
R="crowd-$V"
ADD=22

# add N: voucher add-stock V --stock ADD --request-id R; prints its exit status, keeps its output.
add() {
        "$FT_BIN/seckill-admin" voucher add-stock "$V" --stock "$ADD" --request-id "$R" --wait-ms 20000 \
                >"$FT_WORK/add.$1.out" 2>"$FT_WORK/add.$1.err"
        echo $?
}
orders() { ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)"; }

ft_buy_loop f1 "$V" 1 4 10 0.3
sleep 1
before=$(orders)
ft_eq "$(add 1)" 0 "add-stock $ADD with request id $R: exit 0 (sale running, $before orders so far)"
grep -q '"applied":true,"rebuilt":true' "$FT_WORK/add.1.out" && ft_ok "first add-stock applied and rebuilt" ||
        ft_fail "first add-stock: $(cat "$FT_WORK/add.1.out" "$FT_WORK/add.1.err")"
"$FT_BIN/seckill-admin" verify "$V" >"$FT_WORK/verify.live.log" 2>&1 && ft_ok "verify on the live sale: exit 0" ||
        ft_fail "verify on the live sale: $(tr '\n' ' ' <"$FT_WORK/verify.live.log" | cut -c1-400)"
mid=$(orders)
ft_eq "$(add 2)" 0 "add-stock with the same request id: exit 0"
grep -q '"applied":false' "$FT_WORK/add.2.out" && ft_ok "the repeat applied nothing" ||
        ft_fail "repeat: $(cat "$FT_WORK/add.2.out" "$FT_WORK/add.2.err")"
sleep 1
ft_buy_loop_stop
ft_fault_over
ft_note "orders before add-stock $before, after it $mid, when the crowd stopped $(orders)"

ft_eq "$(ft_sql "SELECT init_stock FROM tb_seckill_voucher WHERE voucher_id = $V")" $((INIT + ADD)) "voucher init_stock $INIT + $ADD"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(init_stock ORDER BY bucket) FROM tb_seckill_stock WHERE voucher_id = $V")" \
        "12,12,11,11" "bucket init_stock 6+6, 6+6, 6+5, 6+5"
ft_eq "$(ft_sql "SELECT COUNT(*), SUM(amount) FROM tb_seckill_stock_change WHERE voucher_id = $V" | tr '\t' ' ')" \
        "1 $ADD" "one stock change of $ADD"
ft_buy f1 "$V" 5001 80 8
ft_settle 30 || ft_fail "202s of the drain not decided"
ft_reconcile 60 || ft_fail "reconciler after the drain: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_eq "$(orders)" $((INIT + ADD)) "sold out exactly $INIT + $ADD"
ft_check_me f1 "$V"
ft_finish
