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
. "$(dirname "$0")/../support/ft_galera.sh"
# The nodes' pids, only those we started.
PIDS=$(ft_galera_pids 1 2 3)
ft_init galera_all_nodes_killed
[[ $PIDS =~ ^[1-9][0-9]*\ [1-9][0-9]*\ [1-9][0-9]*$ ]] || ft_die "not three nodes started by scripts/stack.sh galera up: '$PIDS'"

ft_db_services

ft_buy f1 "$V" 1 40 8
ft_settle 60 || ft_fail "first purchases not decided"
ft_db_sale f1 "$V" 1001
sleep 5
ft_db_wait_acknowledged 60 || ft_log "no orders/me CREATED and 200 PAID seen within 60 s: killing anyway"
# shellcheck disable=SC2086
kill -KILL $PIDS || ft_fail "kill -KILL $PIDS"
ft_log "the three Galera nodes (pids $PIDS) SIGKILLed at once"
ft_db_mark_before
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
