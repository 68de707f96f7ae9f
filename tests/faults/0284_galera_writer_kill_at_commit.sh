#!/usr/bin/env bash
# 0284_galera_writer_kill_at_commit.sh: the database's writer node dies exactly while a
# consumer batch is at its COMMIT (DESIGN.md 16 "Errors"). The book of record is the local
# three-node Galera cluster (scripts/stack.sh galera up, 127.0.0.1:3311-3313). The consumer
# runs with SECKILL_FAILPOINTS="db.before_commit=1*sleep(15000)": its first COMMIT (the
# first batch of the sale; no order is due to close yet) is held 15 s after the batch's
# statements ran on node1 (4 s was not enough on a CI machine at load 24: finding the
# transaction, the dirty read and `stack.sh galera kill` took the rest of the hold, the
# COMMIT went through before the kill and nothing was left unknown). The case sees that
# transaction open on node1 (information_schema.innodb_trx: rows modified, older than
# 1 s), reads the outcome rows it
# wrote (READ UNCOMMITTED, on node1), and SIGKILLs node1 during the hold; purchases, closes
# and payments go on meanwhile. The COMMIT is then sent on a dead link: an unknown outcome,
# which the consumer resolves on node2 (fresh session, wsrep_sync_wait = 1: the batch is
# not there) and re-runs with the same keys. 8 s later node1 is restarted and rejoins (IST).
# Checks: the consumer logged commit_unknown_resolved; every purchase of the held batch has
# exactly one outcome and, when CREATED, exactly one order row (no duplicate order, no lost
# order); every invariant of DESIGN.md 9 (ft_check); every payment answered 200 PAID is
# PAID and every orders/me CREATED answer is an order row (ft_db.sh); node1 Synced
# again with node2's rows.
# fault: the Galera writer node (node1 of three) SIGKILLed while a consumer batch's COMMIT is held (db.before_commit=1*sleep(15000)); restarted 8 s later
# Buckets: 2.
. "$(dirname "$0")/../support/ft_galera.sh"
ft_init galera_writer_kill_at_commit
n1sql() {
        mysql --no-defaults -uroot -h127.0.0.1 -P3311 --protocol=TCP --connect-timeout=3 -N -B "$FT_DB" -e "$1" 2>/dev/null
}

# The consumer starts before any purchase: its first COMMIT is the sale's first batch.
ft_db_services SECKILL_FAILPOINTS="db.before_commit=1*sleep(15000)"
ft_log "front writer: $(ft_galera_writer f1)"

ft_db_sale f1 "$V" 1
# The held COMMIT: a transaction on node1 that wrote rows and is older than 1 s.
held=
for ((i = 0; i < 300; i++)); do
        held=$(n1sql "SELECT trx_mysql_thread_id, trx_rows_modified FROM information_schema.innodb_trx
                WHERE trx_rows_modified > 0 AND trx_started < NOW() - INTERVAL 1 SECOND LIMIT 1")
        [[ -n $held ]] && break
        sleep 0.1
done
[[ -n $held ]] || ft_die "no transaction held at its COMMIT on node1 within 30 s"
# What it wrote: its outcome rows, visible only to a dirty read (one session, two reads).
n1sql "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;
        SELECT CONCAT('D ', trace_id, ' ', outcome) FROM tb_seckill_outcome;
        SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
        SELECT CONCAT('C ', trace_id) FROM tb_seckill_outcome" >"$FT_WORK/held.raw"
"$GREPO/scripts/stack.sh" galera kill 1 >>"$FT_WORK/galera.log" 2>&1 || ft_fail "galera kill 1"
ft_log "node1 (the writer) SIGKILLed while transaction (thread, rows modified) '$(tr '\t' ' ' <<<"$held")' waits at its COMMIT"
awk '$1 == "C" {c[$2] = 1} $1 == "D" {d[$2] = $3} END {for (t in d) if (!(t in c)) print t, d[t]}' \
        "$FT_WORK/held.raw" >"$FT_WORK/held.txt"
nheld=$(wc -l <"$FT_WORK/held.txt")
ft_log "the held batch: $nheld outcome row(s) uncommitted on node1 ($(awk '{print $2}' "$FT_WORK/held.txt" | sort | uniq -c | tr '\n' ' '))"
((nheld > 0)) && ft_ok "the held COMMIT is a consumer batch ($nheld purchases)" ||
        ft_fail "no uncommitted outcome row on node1: the held COMMIT was not a consumer batch"
ft_note "writer node1 SIGKILLed during a batch COMMIT held by db.before_commit ($nheld purchases), restarted after 8 s"
ft_galera_down_then_up f1
sleep 3
ft_db_sale_stop
ft_mysql_pick
ft_db_log_503
ft_log "consumer on the held COMMIT: $(grep -E 'event=[a-z_]*(commit|unknown|resolv)' "$FT_WORK/c1.log" | head -n 3 | cut -c1-200 | tr '\n' '|')"
grep -q 'commit_unknown_resolved' "$FT_WORK/c1.log" &&
        ft_ok "the consumer resolved its unknown COMMIT: $(grep -m 1 commit_unknown_resolved "$FT_WORK/c1.log" | cut -c1-160)" ||
        ft_fail "the consumer never logged commit_unknown_resolved"

ft_db_promised f1 "$V"
# The held batch: one outcome per purchase, one order per CREATED one (the re-run wrote
# them once, on node2; nothing of the killed COMMIT survived or doubled).
if ((nheld > 0)); then
        traces=$(awk '{print $1}' "$FT_WORK/held.txt" | paste -sd, -)
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id IN ($traces)")" "$nheld" \
                "every purchase of the held batch has exactly one outcome"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id IN ($traces)")" \
                "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 1 AND trace_id IN ($traces)")" \
                "every CREATED purchase of the held batch has exactly one order row"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome o LEFT JOIN tb_voucher_order vo ON vo.trace_id = o.trace_id
                AND vo.id = o.order_id WHERE o.outcome = 1 AND o.trace_id IN ($traces) AND vo.id IS NULL")" 0 \
                "no CREATED purchase of the held batch is without its order"
fi
n1=$(ft_db_node_rows 3311)
n2=$(ft_db_node_rows 3312)
ft_log "orders (count, sum of status): node1 $n1, node2 $n2"
ft_eq "$n1" "$n2" "node1 (rejoined) and node2 hold the same orders"
ft_finish
