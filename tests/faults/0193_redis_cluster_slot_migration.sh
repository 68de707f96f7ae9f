#!/usr/bin/env bash
# 0193_redis_cluster_slot_migration.sh: DESIGN.md 4b "Resharding the slots of a voucher
# that is on sale is supported only as '503 while the slot moves, invariants hold'" and 8
# "Cluster MOVED / ASK / TRYAGAIN / CLUSTERDOWN: a script refused with TRYAGAIN did not
# run; a redirect never changes the traceId". A sale runs on a private Redis Cluster
# (ft_redis_topo.sh) with a 4-bucket voucher; mid-sale the slot of its bucket 0 (hash tag
# {v:ID:0}) is moved to another master by hand while the other buckets keep selling, as
# `redis-cli --cluster reshard` does: CLUSTER SETSLOT IMPORTING on the target, MIGRATING
# on the source, MIGRATE of the slot's keys one at a time, 1.5 s apart (so purchases meet
# the half-moved slot: ASK for keys already moved, TRYAGAIN for scripts whose keys are
# split), then SETSLOT NODE everywhere (MOVED for stale maps). The front and consumer are
# not restarted. Purchases must be accepted (202) meanwhile. Afterwards the sale sells out exactly; every 202 decided once; zero
# oversell; Redis = DB after --repair (DESIGN.md 9).
# fault: one bucket's Cluster slot of a 4-bucket voucher migrated to another master mid-sale, the other buckets selling (SETSLOT IMPORTING/MIGRATING, MIGRATE one key every 1.5 s, SETSLOT NODE)
# Buckets: 4 ("migrate a bucketed voucher's slot during a sale").
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_redis_topo.sh"
ft_init redis_cluster_slot_migration
ft_cluster_start
V=$(ft_voucher 200 4)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 30 8
ft_settle 30 || ft_fail "first batch not decided"
K=$(ft_key "$V" stock)
SRC=$(ft_cluster_master_of "$K") || ft_die "no master serves $K"
SLOT=$(ft_topo_cli "$SRC" cluster keyslot "$K")
DST=
for p in "${FT_TOPO_PORTS[@]}"; do
        [[ $p != "$SRC" && $(ft_topo_cli "$p" role | head -n 1) == master ]] && { DST=$p; break; }
done
[[ -n $DST ]] || ft_die "no other master"
SRC_ID=$(ft_topo_cli "$SRC" cluster myid) DST_ID=$(ft_topo_cli "$DST" cluster myid)
NKEYS=$(ft_topo_cli "$SRC" cluster countkeysinslot "$SLOT")
ft_log "voucher $V: bucket 0's slot $SLOT ($NKEYS keys) moves from $SRC to $DST; the other buckets' slots: $(for b in 1 2 3; do printf '%s ' "$(ft_topo_cli "$SRC" cluster keyslot "$(ft_key "$V" stock "$b")")"; done)"

# 1. Move the slot while purchases go on.
ft_buy_loop f1 "$V" 100001 2 4 0.3
sleep 1
T0=$SECONDS
ft_eq "$(ft_topo_cli "$DST" cluster setslot "$SLOT" importing "$SRC_ID")" OK "target $DST importing slot $SLOT"
ft_eq "$(ft_topo_cli "$SRC" cluster setslot "$SLOT" migrating "$DST_ID")" OK "source $SRC migrating slot $SLOT"
MOVED=0
while ((SECONDS - T0 < 120)); do
        mapfile -t keys < <(ft_topo_cli "$SRC" cluster getkeysinslot "$SLOT" 1 | grep -v '^$')
        ((${#keys[@]} == 0)) && break
        out=$(ft_topo_cli "$SRC" migrate 127.0.0.1 "$DST" "" 0 5000 keys "${keys[@]}" 2>&1)
        [[ $out == OK || $out == NOKEY ]] || ft_log "MIGRATE: $out"
        MOVED=$((MOVED + ${#keys[@]}))
        sleep 1.5
done
for p in "${FT_TOPO_PORTS[@]}"; do
        [[ $(ft_topo_cli "$p" role | head -n 1) == master ]] && ft_topo_cli "$p" cluster setslot "$SLOT" node "$DST_ID" >/dev/null
done
MIGRATE_S=$((SECONDS - T0))
ft_eq "$(ft_topo_cli "$SRC" cluster countkeysinslot "$SLOT")" 0 "no key of slot $SLOT left on $SRC"
ft_cluster_wait_ok 30 || ft_fail "cluster not ok after the migration"
ft_eq "$(ft_cluster_master_of "$K")" "$DST" "slot $SLOT served by $DST"
ft_fault_over
sleep 2
ft_buy_loop_stop
ft_log "slot moved in ${MIGRATE_S}s ($MOVED keys migrated)"
N503=$(awk '$1 >= 100001 && $2 == 503' "$FT_WORK/results.txt" | wc -l)
N202=$(awk '$1 >= 100001 && $2 == 202' "$FT_WORK/results.txt" | wc -l)
ft_log "answers while the slot moved: $(awk '$1 >= 100001 {print $2}' "$FT_WORK/results.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
# Buyers whose home bucket is 1-3 (or who overflow there) never meet the moving slot.
((N202 > 0)) && ft_ok "$N202 purchases accepted while bucket 0's slot moved" || ft_fail "no 202 while bucket 0's slot moved: the other buckets did not keep selling"
grep -q -E 'ASK|TRYAGAIN|MOVED|redirect' "$FT_WORK/f1.log" && ft_log "front log mentions redirects: $(grep -c -E 'ASK|TRYAGAIN|MOVED|redirect' "$FT_WORK/f1.log")"
ft_alive f1 && ft_ok "front survived the migration" || ft_fail "front exited: $(tail -n 3 "$FT_WORK/f1.log")"
ft_alive c1 && ft_ok "consumer survived the migration" || ft_fail "consumer exited: $(tail -n 3 "$FT_WORK/c1.log")"
ft_note "slot with $NKEYS keys moved in ${MIGRATE_S}s; meanwhile ${N202}×202, ${N503}×503"

# 2. Drain on the new owner and check every 202.
ft_drain_check f1 "$V" 300001 250
ft_finish
