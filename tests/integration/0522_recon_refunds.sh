#!/usr/bin/env bash
# 0522_recon_refunds.sh: the reconciler's refund rule (DESIGN.md 13): a pass exits 2
# while a refund_due payment without refunded_at is older than 24 h, and says so; a
# younger one, an applied one or a refunded one does not hold the pass.
. "$(dirname "$0")/../support/ft.sh"
ft_init recon_refunds
V=$(ft_voucher 3)
pass() { timeout 120 "$FT_BIN/seckill-reconciler" --json >"$FT_WORK/recon.out" 2>"$FT_WORK/recon.err"; echo $?; }

ft_eq "$(pass)" 0 "no payments: exit 0"
ft_sql "INSERT INTO tb_payment (provider_txn_id, order_id, amount_minor, currency, received_at, result, reason) VALUES
        ('P-young', 21, 500, 'CNY', NOW(3) - INTERVAL 23 HOUR, 2, 'late'),
        ('P-applied', 22, 500, 'CNY', NOW(3) - INTERVAL 30 HOUR, 1, NULL)"
ft_eq "$(pass)" 0 "a refund_due row 23 h old and an old applied row: exit 0"
# received_at set back past 24 h by SQL.
ft_sql "UPDATE tb_payment SET received_at = NOW(3) - INTERVAL 25 HOUR WHERE provider_txn_id = 'P-young'"
ft_eq "$(pass)" 2 "a refund_due row 25 h old: exit 2"
grep -q 'refund(s) due, the oldest' "$FT_WORK/recon.out" && ft_ok "the output says why" ||
        ft_fail "no note: $(head -c 400 "$FT_WORK/recon.out")"
ft_eq "$(jq -r '.exit' "$FT_WORK/recon.out" 2>/dev/null)" 2 "JSON exit 2"
"$FT_BIN/seckill-admin" payment refunded --txn P-young --ref RF-0522 >/dev/null 2>&1 || ft_fail "payment refunded"
ft_eq "$(pass)" 0 "once marked refunded: exit 0"
ft_finish
