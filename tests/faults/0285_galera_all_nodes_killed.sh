#!/usr/bin/env bash
# 0285_galera_all_nodes_killed.sh: the whole database cluster dies at once mid-sale
# (DESIGN.md 16 "What is promised": with innodb_flush_log_at_trx_commit=1 on every node a
# transaction whose COMMIT returned OK survives all three dying at once). The book of
# record is the local three-node Galera cluster (scripts/stack.sh galera up,
# 127.0.0.1:3311-3313). While purchases, closes (unpaid orders past a 6 s deadline) and the
# provider's payment callbacks are in flight, the three mariadbd processes are SIGKILLed
# in one kill(1); 5 s later `scripts/stack.sh galera up` recovers each node's seqno
# (--wsrep-recover), bootstraps the most advanced one and starts the others. While no node
# runs the pipeline waits, it never guesses: the front and the consumer stay up, the front
# answers 503 (lease / degrade), no purchase is decided. Checks: every service survived the
# outage; every payment answered
# 200 PAID and every orders/me CREATED answer (before the kill too) is in the DB;
# every invariant of DESIGN.md 9 (ft_check); the three nodes hold the same rows.
# fault: all three Galera nodes SIGKILLed at once mid-sale with purchases, closes and payments in flight; 5 s later galera up recovers and bootstraps the most advanced node
# Buckets: 2.
GREPO=$(cd "$(dirname "$0")/../.." && pwd)
"$GREPO/scripts/stack.sh" galera up >/tmp/skf.galera_up.$$.log 2>&1 ||
        { tail -n 30 /tmp/skf.galera_up.$$.log; echo "0285: scripts/stack.sh galera up failed"; exit 1; }
rm -f /tmp/skf.galera_up.$$.log
eval "$("$GREPO/scripts/stack.sh" galera env)"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_dbfault.sh"
# The nodes' pids, only those we started (scripts/stack.sh galera status: pid=, started_by_us=yes).
PIDS=$("$GREPO/scripts/stack.sh" galera status 2>/dev/null |
        awk '$1 ~ /^galera-node[123]$/ && $5 == "started_by_us=yes" {sub(/^pid=/, "", $4); print $4}' | paste -sd' ' -)
# Whatever happens, the three nodes run again at the end (the next case needs them).
galera_heal() { "$GREPO/scripts/stack.sh" galera up >/dev/null 2>&1 || ft_log "galera up at cleanup failed"; }
FT_CLEANUP_HOOKS+=(galera_heal)
ft_init galera_all_nodes_killed
[[ $FT_MYSQL_HOSTS == *,* ]] || ft_die "not a multi-host URL: $SECKILL_MYSQL_URL"
[[ $PIDS =~ ^[1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*$ ]] || ft_die "not three nodes started by scripts/stack.sh galera up: '$PIDS'"

FT_PAY_SECRET=0285-secret-$RANDOM-$RANDOM
ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
ft_front f1 SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_consumer c1 SECKILL_PAY_TIMEOUT_S=6 SECKILL_CLOSE_INTERVAL_MS=200
V=$(ft_voucher 400 2)

ft_buy f1 "$V" 1 40 8
ft_settle 60 || ft_fail "first purchases not decided"
ft_db_sale f1 "$V" 1001
sleep 5
# shellcheck disable=SC2086
kill -KILL $PIDS || ft_fail "kill -KILL $PIDS"
ft_log "the three Galera nodes (pids $PIDS) SIGKILLed at once"
# What clients were told before the kill (answers still in flight may land in the files
# just after; they are checked with the rest).
cp "$FT_WORK/seen.txt" "$FT_WORK/seen.before"
awk '$1 == 200 && /"orderStatus":"PAID"/' "$FT_WORK/paid.txt" >"$FT_WORK/paid.before"
ft_log "acknowledged before the kill: $(wc -l <"$FT_WORK/seen.before") orders/me CREATED, $(wc -l <"$FT_WORK/paid.before") payments 200 PAID"
ft_note "all three nodes SIGKILLed at once, galera up 5 s later"
sleep 5
ft_alive f1 && ft_alive c1 && ft_ok "the front and the consumer wait through the outage" ||
        ft_fail "a service died while the cluster was down"
t_up=$SECONDS
"$GREPO/scripts/stack.sh" galera up >>"$FT_WORK/galera.log" 2>&1 || ft_fail "galera up (recover + bootstrap)"
ft_log "galera up took $((SECONDS - t_up)) s: $(grep -E 'recovered seqno|bootstrapping' "$FT_WORK/galera.log" | sed 's/^stack: galera: //' | tr '\n' ';')"
ft_fault_over
ft_mysql_pick
sleep 5
ft_db_sale_stop
ft_db_log_503
ft_alive f1 && ft_alive c1 && ft_ok "the front and the consumer are still up after the recovery" ||
        ft_fail "a service died across the outage"

# What a client saw before the kill is in the DB after it.
ft_db_survived_before "$V"
ft_db_promised f1 "$V"
r1=$(ft_db_node_rows 3311)
r2=$(ft_db_node_rows 3312)
r3=$(ft_db_node_rows 3313)
ft_log "orders (count, sum of status): node1 $r1, node2 $r2, node3 $r3"
ft_eq "$r1 | $r2" "$r3 | $r3" "the three recovered nodes hold the same orders"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2")" 0 \
        "no purchase failed (the outage is waited out, never turned into a business failure)"
ft_finish
