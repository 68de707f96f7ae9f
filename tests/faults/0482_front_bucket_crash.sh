#!/usr/bin/env bash
# 0482_front_bucket_crash.sh: a real seckill-front dies in the middle of overflow probing
# on a 4-bucket voucher (DESIGN.md 4 "Overflow probing", 8, 11, 14), once per failpoint,
# each on its own voucher (12 units, 3 a bucket):
#   A  front.after_overflow=exit   OVERFLOW wrote T:h = probing and users[U] = T, no take
#   B  front.after_take=exit       a unit of bucket j taken, T:h still probing
#   C  front.after_deduct=error;rollback.before_home=exit
#                                  the take settled (T:h = j), the publish NOT_PERSISTED,
#                                  rollback.lua fenced and restored j, the home step not run
# A healthy front f1 first empties bucket 0 (3 buyers homed there); then 4 buyers homed at
# bucket 0 go to the crashing front: they overflow, the first to reach the point kills it,
# none of them gets an answer (the others mostly never reach deduct.lua). After the
# reconciler (--repair, grace) each interrupted purchase is one order (CREATED, its order
# row) or one clean failure (no order; FAILED with its RESTORE row, or nothing recorded
# and nothing held), orders/me says which (never PENDING any more), and every buyer the
# crash left without an answer buys again through f1: 202, 409/10005, or 409/10006 only
# with an active order, never a 10006 that no order explains. Then the vouchers sell out
# exactly and ft_check holds per bucket. 0420 checks the Redis state each crash leaves and
# 0520 the reconciler on seeded states; this case runs the crash, the reconciler, the
# consumer and the buyer's retry together.
# fault: front SIGKILLed mid-overflow on a 4-bucket voucher (front.after_overflow, front.after_take, rollback.before_home after a NOT_PERSISTED publish); the reconciler settles, re-drives or finishes the home step; the buyers buy again
. "$(dirname "$0")/../support/ft.sh"
ft_init front_bucket_crash
ft_consumer c1
ft_front f1
POINTS=("front.after_overflow=exit" "front.after_take=exit"
        "front.after_deduct=error;rollback.before_home=exit")
VS=()
: >"$FT_WORK/interrupted.tsv"   # phase voucher user trace

# holds V T: the buckets (0-3) whose trace hash holds T's DEDUCT entry, and those with T:r.
holds() {
        local b out=
        for b in 0 1 2 3; do
                [[ $(ft_rcli hexists "$(ft_key "$1" trace "$b")" "$2") == 1 ]] && out+="T@$b "
                [[ $(ft_rcli hexists "$(ft_key "$1" trace "$b")" "$2:r") == 1 ]] && out+="T:r@$b "
        done
        echo "${out:-none}"
}

for i in 0 1 2; do
        v=$(ft_voucher 12 4)
        VS+=("$v")
        ft_homed 0 4 $(((i + 1) * 100000)) 7 >"$FT_WORK/home0.$i"
        head -n 3 "$FT_WORK/home0.$i" | ft_buy_users f1 "$v" 3 "3 buyers homed at bucket 0 (empty it)"
        ft_eq "$(ft_rcli get "$(ft_key "$v" stock 0)")" 0 "phase $i: bucket 0 of $v empty"
        ft_front "p$i" SECKILL_FAILPOINTS="${POINTS[i]}"
        tail -n 4 "$FT_WORK/home0.$i" | ft_buy_users "p$i" "$v" 4 "4 buyers homed at the empty bucket 0"
        if ft_wait_exit "p$i" 10; then ft_ok "front p$i died at ${POINTS[i]}"; else ft_fail "front p$i still alive (${POINTS[i]})"; fi
        n=0 states=
        while read -r u; do
                read -r code _ < <(ft_answer "$u")
                [[ $code == 000 ]] || continue
                t=$(ft_rcli hget "$(ft_key "$v" users 0)" "$u")
                [[ -n $t ]] || { ft_log "user $u: no answer, no purchase in Redis (never reached deduct.lua)"; continue; }
                n=$((n + 1))
                printf '%s %s %s %s\n' "$i" "$v" "$u" "$t" >>"$FT_WORK/interrupted.tsv"
                states+="[$(ft_rcli hget "$(ft_key "$v" trace 0)" "$t:h") $(holds "$v" "$t")] "
        done < <(tail -n 4 "$FT_WORK/home0.$i")
        ((n > 0)) && ft_ok "phase $i: $n purchase(s) interrupted: $states" || ft_fail "phase $i: no interrupted purchase"
        # The crash left the state of its point (0420 checks it in detail).
        case $i in
        0) [[ $states != *T@* ]] && ft_ok "after_overflow: nothing taken" || ft_fail "after_overflow: a take ($states)" ;;
        1) [[ $states =~ probing\ T@[123] ]] && ft_ok "after_take: a take with T:h probing" || ft_fail "after_take: $states" ;;
        2) [[ $states =~ T:r@[123] ]] && ft_ok "before_home: a fenced take in another bucket" || ft_fail "before_home: $states" ;;
        esac
done
ft_fault_over
ft_settle 30 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"

# Every interrupted purchase: one order or one clean failure, and orders/me says which.
while read -r i v u t; do
        read -r oc reason < <(ft_sql "SELECT outcome, COALESCE(reason, '-') FROM tb_seckill_outcome WHERE trace_id = $t")
        orders=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = $t")
        restore=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = $t AND log_type = 1")
        me=$(ft_me_state f1 "$v" "$u")
        what="phase $i user $u trace $t: outcome ${oc:-none}/${reason:--}, $orders order(s), $restore RESTORE, orders/me $me"
        # orders/me: CREATED with the order, else FAILED or NONE; never PENDING any more.
        if [[ $oc == 1 && $orders == 1 && $restore == 0 && $me == CREATED ]] ||
                [[ $oc == 2 && $orders == 0 && $restore == 1 && $me == FAILED ]] ||
                [[ -z $oc && $orders == 0 && ($me == FAILED || $me == NONE) ]]; then
                ft_ok "$what"
        else
                ft_fail "$what"
        fi
done <"$FT_WORK/interrupted.tsv"
note=
for i in 0 1 2; do note+="${note:+, }${POINTS[i]##*.}: $(awk -v i="$i" '$1 == i' "$FT_WORK/interrupted.tsv" | wc -l)"; done
ft_note "interrupted purchases: $note"

# Every buyer the crashing fronts left without an answer buys again through f1: 202,
# 409/10005, or 409/10006 only with an active order (never a 10006 no order explains).
for i in 0 1 2; do
        tail -n 4 "$FT_WORK/home0.$i" | ft_buy_users f1 "${VS[i]}" 4 "the 4 buyers of p$i again"
        while read -r u; do
                read -r code err < <(ft_answer "$u")
                active=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ${VS[i]} AND user_id = $u AND status IN (1, 2)")
                if [[ $code == 202 || ($code == 409 && $err == 10005) || ($code == 409 && $err == 10006 && $active == 1) ]]; then
                        ft_ok "user $u buys again: $code/$err ($active active order)"
                else
                        ft_fail "user $u buys again: $code/$err with $active active order(s)"
                fi
        done < <(tail -n 4 "$FT_WORK/home0.$i")
done

# Sell the three vouchers out (every buyer gets a unit while any bucket has one).
drains=()
for i in 0 1 2; do
        ft_buy f1 "${VS[i]}" $((900000 + i * 1000)) 12 4 &
        drains+=($!)
done
wait "${drains[@]}"   # not a bare wait: the services are background jobs too
ft_settle 30 || ft_fail "202s of the drain not decided"
ft_reconcile 60 || ft_fail "reconciler after the drain: last exit $FT_RECON_RC"
for v in "${VS[@]}"; do
        ft_check "$v" --sold-out
        ft_check_me f1 "$v"
done
ft_finish
