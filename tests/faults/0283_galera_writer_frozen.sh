#!/usr/bin/env bash
# 0283_galera_writer_frozen.sh: the database's writer node freezes mid-sale (DESIGN.md 16).
# The book of record is the local three-node Galera cluster (scripts/stack.sh galera up,
# 127.0.0.1:3311-3313). While purchases, closes (unpaid orders past a 6 s deadline) and the
# provider's payment callbacks are in flight through node1, node1 is SIGSTOPped for 14 s:
# past Galera's suspect timeout (evs.suspect_timeout, 5 s) node2 and node3 evict it and go
# on as a primary component of two, and the binaries move to node2 (their statements stuck
# on node1 time out, their next connection walks the list). Then SIGCONT: node1 wakes up
# believing it is still in the cluster, with sessions of the binaries open on it. It must
# not accept a stale write after the others moved on: it is non-primary (refuses with
# 1047) until it rejoins by IST. Checks: node2's cluster size is 2 while node1 is frozen
# and the front's /readyz names node2 as its writer; a write sent to node1 at the moment it
# wakes up is refused, or, if acknowledged, is on node2 too; every invariant of DESIGN.md 9
# (ft_check); every payment answered 200 PAID is PAID in the DB and every orders/me CREATED
# answer is an order row (ft_db.sh); node1 Synced again and its rows equal node2's
# (no write landed only on node1). The budget (docs/SCALING.md): no purchase answered 503
# "lease" (the worker lease's renewal on the frozen node times out and goes to node2 at
# once, inside its confirmed window), and the first order committed after the freeze at
# most 2 s after node2 saw node1 evicted.
# fault: the Galera writer node (node1 of three) SIGSTOPped for 14 s mid-sale (evicted), then SIGCONT: no stale write, it rejoins
# Buckets: 2.
. "$(dirname "$0")/../support/ft_galera.sh"
# node1's pid, only if we started it.
NODE1_PID=$(ft_galera_pids 1)
# Whatever happens, node1 runs again at the end, Synced (the next case needs three nodes):
# ft_galera.sh's hook, redefined to SIGCONT node1 first.
galera_heal() {
        local i
        [[ -n $NODE1_PID ]] && kill -CONT "$NODE1_PID" 2>/dev/null
        for ((i = 0; i < 60; i++)); do
                "$GREPO/scripts/stack.sh" galera status >/dev/null 2>&1 && return 0
                sleep 1
        done
        ft_log "node1 not Synced 60 s after SIGCONT: restarting it"
        [[ -n $NODE1_PID ]] && kill -KILL "$NODE1_PID" 2>/dev/null
        sleep 1
        "$GREPO/scripts/stack.sh" galera up >/dev/null 2>&1 || ft_log "galera up at cleanup failed"
}
ft_init galera_writer_frozen
[[ $NODE1_PID =~ ^[1-9][0-9]*$ ]] || ft_die "node1 was not started by scripts/stack.sh galera up (pid '$NODE1_PID')"
n1sql() {
        mysql --no-defaults -uroot -h127.0.0.1 -P3311 --protocol=TCP --connect-timeout=3 -N -B "$FT_DB" -e "$1" 2>&1
}
wsrep() {
        mysql --no-defaults -uroot -h127.0.0.1 -P"$1" --protocol=TCP --connect-timeout=3 -N -B \
                -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | awk '{print $2}'
}

ft_db_services
ft_log "front writer before the freeze: $(ft_galera_writer f1)"
# The stale-write probe's table, replicated to every node before the freeze.
ft_sql "CREATE TABLE ft_probe (id INT PRIMARY KEY, at VARCHAR(16) NOT NULL)" || ft_die "CREATE TABLE ft_probe"

ft_buy f1 "$V" 1 40 8
ft_settle 60 || ft_fail "first purchases not decided"
ft_db_sale f1 "$V" 1001
sleep 4
ft_galera_watch 3312
sleep 1
kill_ms=$(date +%s%3N)
kill -STOP "$NODE1_PID" || ft_die "SIGSTOP node1 (pid $NODE1_PID)"
ft_log "node1 (the writer, pid $NODE1_PID) SIGSTOPped"
ft_note "writer node1 SIGSTOPped for 14 s, then SIGCONT"
sleep 9
size=$(wsrep 3312 wsrep_cluster_size)
ft_eq "$size" 2 "node2 and node3 evicted the frozen node1 (node2's wsrep_cluster_size)"
w=$(ft_galera_writer f1)
[[ $w == *3312* ]] && ft_ok "the front writes through node2 while node1 is frozen ($w)" ||
        ft_fail "front writer while node1 is frozen: '$w' (want 127.0.0.1:3312)"
sleep 5
kill -CONT "$NODE1_PID" || ft_fail "SIGCONT node1"
ft_log "node1 SIGCONT"
# A write sent to node1 the moment it wakes up (the others moved on without it).
for k in 1 2 3 4 5; do
        out=$(n1sql "INSERT INTO ft_probe VALUES ($k, 'node1')")
        echo "$k rc=$? $(grep -o 'ERROR [0-9]*' <<<"$out" | head -n 1 | tr ' ' '_') $(tr '\n' ' ' <<<"$out" | cut -c1-160)" >>"$FT_WORK/probe.log"
        sleep 0.2
done
ft_log "writes to node1 at SIGCONT: $(awk '{print $2, $3}' "$FT_WORK/probe.log" | sort | uniq -c | tr '\n' ' ')"
ft_log "node1 after SIGCONT: $(wsrep 3311 wsrep_cluster_status) $(wsrep 3311 wsrep_local_state_comment)"
for ((i = 0; i < 60; i++)); do
        [[ $(wsrep 3311 wsrep_local_state_comment) == Synced && $(wsrep 3311 wsrep_cluster_size) == 3 ]] && break
        sleep 1
done
ft_eq "$(wsrep 3311 wsrep_local_state_comment) $(wsrep 3311 wsrep_cluster_size)" "Synced 3" \
        "node1 rejoined by itself after SIGCONT (${i} s)"
ft_fault_over
sleep 3
ft_db_sale_stop
ft_db_log_503
ft_galera_budget "$kill_ms"

# No stale write: every probe row node1 acknowledged is on node2 as well.
acked=$(awk '$2 == "rc=0" {print $1}' "$FT_WORK/probe.log" | paste -sd, -)
on2=$(mysql --no-defaults -uroot -h127.0.0.1 -P3312 --protocol=TCP -N -B \
        --init-command="SET SESSION wsrep_sync_wait = 1" "$FT_DB" -e "SELECT COUNT(*) FROM ft_probe WHERE id IN (${acked:-0})")
ft_eq "$on2" "$(awk '$2 == "rc=0"' "$FT_WORK/probe.log" | wc -l)" "every write node1 acknowledged after SIGCONT is on node2 (acknowledged: ${acked:-none})"
ft_db_promised f1 "$V"
# node1 holds the same book as node2: no write landed only on node1.
n1=$(ft_db_node_rows 3311)
n2=$(ft_db_node_rows 3312)
ft_log "orders (count, sum of status): node1 $n1, node2 $n2"
ft_eq "$n1" "$n2" "node1 (woken up, rejoined) and node2 hold the same orders"
pay() {
        mysql --no-defaults -uroot -h127.0.0.1 -P"$1" --protocol=TCP -N -B --init-command="SET SESSION wsrep_sync_wait = 1" \
                "$FT_DB" -e "SELECT COUNT(*), COALESCE(SUM(result), 0) FROM tb_payment" 2>&1 | tr '\t' ' '
}
ft_eq "$(pay 3311)" "$(pay 3312)" "node1 and node2 hold the same payments"
ft_finish
