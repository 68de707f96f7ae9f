#!/usr/bin/env bash
# 0486_galera_clamp_race.sh: the sold_out clamp racing a restock on another Galera node
# (DESIGN.md 16 "Answers after an unknown COMMIT" (d), 4 rollback.lua, 9 invariants 3, 7).
# The book of record is the local three-node Galera cluster (scripts/stack.sh galera up);
# two writer nodes at once: front f1 and consumer c1 write through node1 (127.0.0.1:3311),
# front f2 through node2 (127.0.0.1:3312) only. Five units sell out; Redis is given one
# phantom unit, so a sixth buyer is admitted and the consumer decides sold_out (its
# affected-row count confirmed by a read with wsrep_sync_wait = 1), records FAILED and
# opens the clamp transaction on node1: bumps bucket 0's row, reads its stock (0), and is
# held there by the failpoint consumer.before_rollback=1*sleep(10000) (the interleaving
# cannot be timed from outside the consumer). Meanwhile buyer 1 cancels through f2: the
# cancel's transaction (stock + 1 on the same row) certifies first on node2, aborts the
# clamp's transaction on node1 (a brute-force abort), and its release.lua gives the unit
# back to Redis. The consumer wakes and runs rollback.lua with the stale clamp-to 0:
# Redis 0 while the DB holds 1 (the released unit clamped away); its COMMIT fails
# (1213), and it writes the drift mark tb_lock 'drift:V:0' (event clamp_commit_failed
# drift_mark=1). Checks: the mark is seen; ONE plain reconciler pass (no --repair) logs
# drift_mark, rebuilds, and leaves Redis = DB for bucket 0 with the mark cleared; the
# unit is sold again; then every invariant of DESIGN.md 9 (ft_check, sold out) with
# invariant 7 (ft_check_told). Failpoint: consumer.before_rollback (docs/FAULTS.md).
# Lock `galera`.
# fault: a sold_out clamp held (failpoint) on node1 while a cancel through node2 certifies first and releases the unit: the clamp's COMMIT fails after clamping Redis to the stale 0; its drift mark makes one reconciler pass rebuild the bucket
# Buckets: 1
. "$(dirname "$0")/../support/ft_galera.sh"
ft_init galera_clamp_race
N2_URL="mysql://root@127.0.0.1:3312/$FT_DB"
n2() {
        mysql --no-defaults -uroot -h127.0.0.1 -P3312 --protocol=TCP --connect-timeout=3 -N -B \
                --init-command="SET SESSION wsrep_sync_wait = 1" "$FT_DB" -e "$1" 2>&1
}
rstock() { ft_rcli get "$(ft_key "$V" stock)"; }

ft_front f1
ft_front f2 SECKILL_MYSQL_URL="$N2_URL"
V=$(ft_voucher 5 1)
ft_consumer c1 SECKILL_FAILPOINTS="consumer.before_rollback=1*sleep(10000)"
[[ $(ft_galera_writer f1) == *3311* ]] || ft_die "f1 writes through '$(ft_galera_writer f1)', want node1"
[[ $(ft_galera_writer f2) == *3312* ]] || ft_die "f2 writes through '$(ft_galera_writer f2)', want node2"
ft_buy f1 "$V" 1 5 5
ft_settle 60 || ft_die "the first five purchases not decided"
ft_eq "$(n2 "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $V AND bucket = 0")" 0 "sold out in the DB"
order1=$(ft_sql "SELECT id FROM tb_voucher_order WHERE voucher_id = $V AND user_id = 1")
[[ $order1 =~ ^[0-9]+$ ]] || ft_die "no order of buyer 1"

# One phantom unit in Redis: buyer 100 is admitted and the DB says sold out.
ft_rcli incrby "$(ft_key "$V" stock)" 1 >/dev/null
ft_buy f1 "$V" 100 1 1
ft_wait_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = $V AND user_id = 100 AND outcome = 2 AND reason = 'sold_out'" \
        1 600 0.05 || ft_die "buyer 100 never FAILED sold_out"
sleep 0.5       # the clamp transaction (bump, stock read) follows the FAILED commit at once
ft_log "buyer 100 FAILED sold_out; the consumer's clamp holds bucket 0's row on node1 (failpoint sleep 10 s)"
# The restock on the other node: buyer 1 cancels through f2 (node2).
out=$(ft_cancel f2 1 "$order1")
[[ ${out%% *} == 200 ]] && ft_ok "buyer 1 cancelled through node2 ($out)" || ft_fail "cancel through f2: $out"
ft_eq "$(n2 "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $V AND bucket = 0")" 1 "the cancel's unit is back in the DB (node2)"
for ((i = 0; i < 300; i++)); do
        grep -q 'event=clamp_commit_failed' "$FT_WORK/c1.log" && break
        sleep 0.1
done
line=$(grep 'event=clamp_commit_failed' "$FT_WORK/c1.log" | tail -n 1)
[[ $line == *drift_mark=1* ]] && ft_ok "the clamp's COMMIT failed and wrote the drift mark ($(grep -o 'reason="[^"]*"' <<<"$line" | cut -c1-120))" ||
        ft_fail "no clamp_commit_failed with drift_mark=1 in c1's log (last: '${line:-none}')"
mark=$(n2 "SELECT COUNT(*) FROM tb_lock WHERE name = 'drift:$V:0' AND until >= NOW(3)")
ft_eq "$mark" 1 "the drift mark drift:$V:0 is pending (seen on node2)"
r=$(rstock)
d=$(n2 "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $V AND bucket = 0")
ft_log "before the reconciler: Redis stock $r, DB stock $d (the released unit clamped away when Redis < DB)"
ft_note "clamp held 10 s on node1, cancel through node2 certified first: Redis $r / DB $d before the pass, drift mark drift:$V:0"
ft_fault_over

# ONE reconciler pass, without --repair: the mark makes it rebuild bucket 0 at once.
sleep $((FT_GRACE_S + 1))
timeout 120 "$FT_BIN/seckill-reconciler" --grace-seconds "$FT_GRACE_S" >"$FT_WORK/recon.mark.log" 2>&1
ft_log "reconciler pass with the mark: exit $?"
grep -q "event=drift_mark .*voucher=$V .*buckets=0" "$FT_WORK/recon.mark.log" &&
        ft_ok "the reconciler read the drift mark" || ft_fail "no drift_mark event in the reconciler's log"
grep -q "event=rebuilt .*voucher=$V .*drift_marks=1" "$FT_WORK/recon.mark.log" &&
        ft_ok "the reconciler rebuilt the voucher for the mark" || ft_fail "no rebuilt ... drift_marks=1 in the reconciler's log"
ft_eq "$(rstock)" "$(n2 "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $V AND bucket = 0")" \
        "after one reconciler pass: Redis stock = DB stock of bucket 0"
ft_eq "$(n2 "SELECT COUNT(*) FROM tb_lock WHERE name = 'drift:$V:0' AND until >= NOW(3)")" 0 "the drift mark is cleared"

# The released unit sells again; then the usual end.
ft_buy f1 "$V" 200 3 1
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_told "$V"
ft_finish
