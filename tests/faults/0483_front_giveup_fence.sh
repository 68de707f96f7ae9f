#!/usr/bin/env bash
# 0483_front_giveup_fence.sh: the give-up fence outlives every delayed copy of a purchase's
# script (DESIGN.md 4 "Give-up fence", 9 invariant 7), with a 1 s delivery timeout (a
# request deadline of 3 s, below the 10 s a delayed deduct is still accepted).
# A 2-bucket voucher of 2 units (one a bucket) is sold to A (home 0) and B (home 1).
#   Part 1: X (home 0) overflows, bucket 1 is empty: the give-up writes f:T and answers
#     409 sold out. f:T must live max(request deadline, 11 s). A's cancel puts a unit back
#     in bucket 0; more than the old PX (3 s) after T was minted, a delayed copy of X's
#     deduct (same traceId and ts, sent with sk-rcli --script) must be FENCED: before,
#     it admitted X, and the reconciler's re-drive gave an order to a buyer told 409.
#   Part 2 (failpoint front.take_unknown=1*error, DESIGN.md 11): Z (home 0) overflows on
#     a second front whose first take on bucket 1 has an unknown outcome; the repeat
#     answers 10005, which says nothing about the first attempt: probing must end with
#     rollback.lua on bucket 1 (T:r there, 503), never a 409 sold out; after B's cancel
#     puts a unit back in bucket 1, a delayed copy of the take is FENCED.
# Each refill is then bought by a new buyer (W, W2): the voucher ends sold out exactly,
# every invariant and invariant 7 (no order for a buyer told only 409 sold out) hold.
# fault: a delayed copy of a given-up purchase's deduct (1 s delivery timeout) and of a take whose first attempt was unknown (front.take_unknown), each after a refill of its bucket: FENCED, no order for a buyer told sold out
# Buckets: 2
FT_DELIVERY_MS=1000
. "$(dirname "$0")/../support/ft.sh"
ft_init front_giveup_fence
V=$(ft_voucher 2 2)
ft_consumer c1
ft_front f1
ft_homed 0 2 1000 4 >"$FT_WORK/home0"
ft_homed 1 2 2000 2 >"$FT_WORK/home1"
read -r A X Z W < <(paste -sd' ' "$FT_WORK/home0")
read -r B W2 < <(paste -sd' ' "$FT_WORK/home1")
printf '%s\n' "$A" "$B" | ft_buy_users f1 "$V" 2 "A (home 0) and B (home 1)"
ft_settle 30 || ft_fail "the first two 202s not decided"
order_of() { awk -v u="$1" '$1 == u {print $2}' "$FT_WORK/accepted.tsv" | tail -n 1; }
OA=$(order_of "$A") OB=$(order_of "$B")
[[ -n $OA && -n $OB ]] || ft_die "A and B have no orders (A '$OA', B '$OB')"

# Part 1: the give-up fence of a purchase that took nothing.
echo "$X" | ft_buy_users f1 "$V" 1 "X (home 0, every bucket empty)"
ft_eq "$(ft_answer "$X")" "409 10005" "X told sold out"
fence=$(ft_rcli --scan --pattern "${FT_PREFIX}:{v:$V:0}:f:*" | head -n 1)
T=${fence##*:f:}
[[ -n $fence && $T =~ ^[1-9][0-9]*$ ]] || ft_die "no give-up fence f:T in bucket 0 ('$fence')"
pttl=$(ft_rcli pttl "$fence")
((pttl > 10000)) && ft_ok "f:T PX = max(deadline 3 s, 11 s): PTTL $pttl ms" ||
        ft_fail "f:T PTTL $pttl ms: it expires before a delayed deduct is refused (10 s)"
ft_eq "$(ft_cancel f1 "$A" "$OA" | cut -c1-3)" 200 "A cancels (a unit back in bucket 0)"
ft_eq "$(ft_rcli get "$(ft_key "$V" stock 0)")" 1 "bucket 0 holds the released unit"
ts=$(ft_trace_ts "$T")
while (($(date +%s%3N) < ts + 3300)); do sleep 0.1; done   # past the request deadline
late=$(ft_script deduct 5 "$(ft_key "$V" meta 0)" "$(ft_key "$V" stock 0)" "$(ft_key "$V" users 0)" \
        "$(ft_key "$V" trace 0)" "$fence" "$T" "$((T + 1))" "$X" "$V" "$ts" | head -n 1)
age=$(($(date +%s%3N) - ts))
ft_fault_over
if [[ $late == FENCED ]]; then
        ft_ok "a delayed copy of X's deduct ${age} ms after T: FENCED"
elif ((age >= 5000)); then
        ft_fail "the delayed copy came ${age} ms after T, outside deduct.lua's ts window: nothing proven ($late)"
else
        ft_fail "a delayed copy of X's deduct ${age} ms after T: '$late', not FENCED"
fi
ft_eq "$(ft_rcli get "$(ft_key "$V" stock 0)")" 1 "bucket 0's unit still there"
ft_note "delayed deduct ${age} ms after T: ${late:-?}"

# Part 2: a take whose first attempt was unknown, then 10005.
echo "$W" | ft_buy_users f1 "$V" 1 "W (home 0) buys the released unit"
ft_eq "$(ft_answer "$W" | cut -d' ' -f1)" 202 "W gets bucket 0's unit"
ft_front f2 SECKILL_FAILPOINTS="front.take_unknown=1*error"
echo "$Z" | ft_buy_users f2 "$V" 1 "Z (home 0) on f2: first take unknown, the repeat 10005"
read -r code err < <(ft_answer "$Z")
T2=$(grep "^$Z " "$FT_WORK/results.txt" | tail -n 1 | sed -n 's/.*"traceId":"\([0-9]*\)".*/\1/p')
if [[ $code == 503 && -n $T2 ]]; then
        ft_ok "Z answered 503 (trace $T2), not 409 sold out"
else
        ft_fail "Z answered $code/$err: a 10005 after an unknown take was read as empty"
fi
grep -q 'take_reject_after_unknown' "$FT_WORK/f2.log" && ft_ok "f2 logged take_reject_after_unknown" ||
        ft_fail "f2 did not log take_reject_after_unknown"
if [[ -n $T2 ]]; then
        ft_eq "$(ft_rcli hexists "$(ft_key "$V" trace 1)" "$T2:r")" 1 "T:r of Z's trace in bucket 1"
        ft_eq "$(ft_cancel f1 "$B" "$OB" | cut -c1-3)" 200 "B cancels (a unit back in bucket 1)"
        late=$(ft_script take 3 "$(ft_key "$V" meta 1)" "$(ft_key "$V" stock 1)" "$(ft_key "$V" trace 1)" \
                "$T2" "$((T2 + 1))" "$Z" "$V" "$(ft_trace_ts "$T2")" 0 | head -n 1)
        ft_eq "$late" FENCED "a delayed copy of Z's first take after the refill"
        ft_eq "$(ft_rcli get "$(ft_key "$V" stock 1)")" 1 "bucket 1's unit still there"
        ft_note "take after an unknown attempt: $code; delayed take: ${late:-?}"
fi
echo "$W2" | ft_buy_users f1 "$V" 1 "W2 (home 1) buys the released unit"
ft_eq "$(ft_answer "$W2" | cut -d' ' -f1)" 202 "W2 gets bucket 1's unit"

ft_settle 30 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
# orders/me: the buyers of the refills CREATED, the cancelled ones CLOSED (DESIGN.md 3).
for u in "$W" "$W2"; do ft_eq "$(ft_me_state f1 "$V" "$u")" CREATED "orders/me of $u"; done
for u in "$A" "$B"; do ft_eq "$(ft_me_state f1 "$V" "$u")" CLOSED "orders/me of $u (cancelled)"; done
ft_check_told "$V"
for u in "$X" "$Z"; do
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND user_id = $u")" 0 \
                "no order for user $u (told 409 or 503)"
done
ft_finish
