#!/usr/bin/env bash
# 0282_galera_writer_kill.sh: the database's writer node dies mid-sale (DESIGN.md 16). The
# book of record is the local three-node Galera cluster (scripts/stack.sh galera up,
# 127.0.0.1:3311-3313; started here when it is not running, stopped by scripts/test.sh at
# its exit). Every binary gets the multi-host URL and writes through node1, the first
# writable node. While purchases (202s the consumer turns into orders), closes (unpaid
# orders past a 6 s deadline) and the provider's payment callbacks are in flight, node1 is
# SIGKILLed; the binaries move to node2 within about a second; 8 s later node1 is
# restarted and rejoins (IST). Checks: the front's /readyz names node2 as its writer while
# node1 is down; every invariant of DESIGN.md 9 (ft_check: one decision per 202, every
# CREATED 202 has its order row, no oversell, one active order per user, Redis = DB); every
# payment answered 200 PAID and every orders/me CREATED answer is in the DB (survived the
# writer's death; ft_db.sh); orders were both paid and closed around the kill; no
# orderId or traceId minted twice across the failover (the worker-id lease lives in the
# replicated DB); node1 is Synced again with the same rows. The budget (docs/SCALING.md):
# no purchase answered 503 "lease" (the lease's confirmed window, 10-20 s ahead with the
# shipped 30 s lease, outlasts the eviction, and its renewals step to node2 at once), and
# the first order committed after the kill at most 2 s after node2 saw node1 evicted.
# fault: the Galera writer node (node1 of three) SIGKILLed mid-sale with purchases, closes and payments in flight; restarted 8 s later, it rejoins
# Buckets: 2.
. "$(dirname "$0")/../support/ft_galera.sh"
ft_init galera_writer_kill

ft_db_services
ft_log "front writer before the kill: $(ft_galera_writer f1)"

ft_buy f1 "$V" 1 40 8
ft_settle 60 || ft_fail "first purchases not decided"
ft_db_sale f1 "$V" 1001
sleep 4
ft_galera_watch 3312
sleep 1
kill_ms=$(date +%s%3N)
"$GREPO/scripts/stack.sh" galera kill 1 >>"$FT_WORK/galera.log" 2>&1 || ft_fail "galera kill 1"
ft_log "node1 (the writer) SIGKILLed"
ft_note "writer node1 SIGKILLed, restarted after 8 s"
ft_galera_down_then_up f1
ft_log "node1 restarted: $("$GREPO/scripts/stack.sh" galera status 2>/dev/null | awk '$1 == "galera-node1" {print $3, $NF}')"
sleep 3
ft_db_sale_stop
ft_db_log_503
ft_galera_budget "$kill_ms"
ft_db_promised f1 "$V"
# node1 rejoined with the same book: its counts equal node2's.
ft_eq "$(ft_db_node_rows 3311)" "$(ft_db_node_rows 3312)" "node1 (rejoined) and node2 hold the same orders"
ft_finish
