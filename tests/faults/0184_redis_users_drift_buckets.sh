#!/usr/bin/env bash
# 0184_redis_users_drift_buckets.sh: the users hashes of a 2-bucket voucher drift from the
# DB mid-sale (DESIGN.md 9.3, 14): a stranger with no order gets an
# entry in its home bucket, a real buyer's entry is removed from its home bucket. Before
# the repair the stranger is refused (10006) and `seckill-admin verify --quiesced` fails
# while the live `verify` passes; a plain reconciler pass reports users drift (exit 2)
# without touching Redis; `--repair` rebuilds; then verify --quiesced passes, the stranger
# buys, the real buyer is refused again (10006: one order per user), and the sale sells out.
# fault: a bucketed voucher's users hashes drift (a stranger added, a buyer removed); --repair restores invariant 3
# Buckets: 2.
. "$(dirname "$0")/../support/ft.sh"
ft_init redis_users_drift_buckets
N=2
V=$(ft_voucher 40 "$N")
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 20 8
ft_settle 30 || ft_fail "first batch not decided"
ft_reconcile 60 || ft_fail "no consistent pass before the drift (last exit $FT_RECON_RC)"

# The drift: stranger S (home 0, never bought) in users of bucket 0; buyer B removed.
S=$(ft_homed 0 "$N" 900000 1)
B=$(ft_sql "SELECT user_id FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2) ORDER BY user_id LIMIT 1")
HB=$(python3 -c 'import binascii, sys; print(binascii.crc_hqx(sys.argv[1].encode(), 0) % int(sys.argv[2]))' "$B" "$N")
ft_rcli hset "$(ft_key "$V" users 0)" "$S" 386453324609757497 >/dev/null
ft_eq "$(ft_rcli hdel "$(ft_key "$V" users "$HB")" "$B")" 1 "buyer $B removed from users of bucket $HB"

"$FT_BIN/seckill-admin" verify "$V" >"$FT_WORK/verify.live.log" 2>&1
ft_eq "$?" 0 "verify (live: invariants 1, 2, 4, 6) exits 0 despite the drift"
"$FT_BIN/seckill-admin" verify "$V" --quiesced >"$FT_WORK/verify.drift.log" 2>&1
ft_eq "$?" 1 "verify --quiesced exits 1 on the users drift"
"$FT_WORK/buy1.sh" "${FT_ADDR[f1]}" "$V" "$S" "$FT_WORK/results.txt"
ft_eq "$(ft_answer "$S")" "409 10006" "the stranger is refused before the repair"

timeout 120 "$FT_BIN/seckill-reconciler" --grace-seconds "$FT_GRACE_S" --json >"$FT_WORK/recon.plain.log" 2>"$FT_WORK/recon.plain.err"
ft_eq "$?" 2 "a plain reconciler pass reports the drift (exit 2)"
grep -q '"usersDrift":true' "$FT_WORK/recon.plain.log" && ft_ok "plain pass: usersDrift true" ||
        ft_fail "plain pass did not report users drift: $(cut -c1-400 "$FT_WORK/recon.plain.log")"
ft_eq "$(ft_rcli hexists "$(ft_key "$V" users 0)" "$S")" 1 "the plain pass left Redis alone"

ft_fault_over
ft_reconcile 90 || ft_fail "--repair never reached a consistent pass (last exit $FT_RECON_RC)"
ft_recovered
"$FT_BIN/seckill-admin" verify "$V" --quiesced >"$FT_WORK/verify.repaired.log" 2>&1 && ft_ok "verify --quiesced after --repair: exit 0" ||
        ft_fail "verify --quiesced after --repair: $(tr '\n' ' ' <"$FT_WORK/verify.repaired.log" | cut -c1-500)"
ft_check_redis "$V"
ft_buy_users f1 "$V" 1 "stranger $S" <<<"$S"
ft_eq "$(ft_answer "$S" | cut -d' ' -f1)" 202 "the stranger buys after the repair"
"$FT_WORK/buy1.sh" "${FT_ADDR[f1]}" "$V" "$B" "$FT_WORK/results.txt"
ft_eq "$(ft_answer "$B")" "409 10006" "buyer $B is refused again (one order per user)"

ft_buy f1 "$V" 1001 80 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_redis "$V"
ft_check_me f1 "$V"
ft_finish
