#!/usr/bin/env bash
# 0288_galera_switch_desynced.sh: the degrade follower's switch read on a Galera node that
# is not Synced (DESIGN.md 16 "Answers after an unknown COMMIT" (e), 12 a). The book of
# record is the local three-node Galera cluster (scripts/stack.sh galera up,
# 127.0.0.1:3311-3313). Mid-sale, node1 (the front's writer, where its follower reads the
# switch rows) becomes what a Donor is during a blocking state transfer: `SET GLOBAL
# wsrep_desync = ON` (wsrep_local_state 2, Donor/Desynced), then `FLUSH TABLES WITH READ
# LOCK` held by a session (the node stops applying the others' write sets, so its rows
# go stale while it still answers reads). The operator then moves the voucher to the
# DB-only path through node2. Checks: the follower logs switch_read_not_synced for node1
# and counts seckill_front_switch_not_synced_total (it never counts a read there as
# fresh); node1 still shows the voucher in state redis (its rows really are stale) while
# the front follows node2's rows: the voucher drains and the DB-only path sells (200);
# the follower never went stale (no switch_stale: node2 answered). Then node1 is released
# (UNLOCK, wsrep_desync = OFF) and Synced again, the voucher returns to Redis, the rest
# of the stock is sold, and every invariant of DESIGN.md 9 holds with invariant 7
# (ft_check, ft_check_told, ft_check_db_path). No failpoint: the Desynced state is
# forced on the server. Lock `galera`.
# fault: node1 (the front's writer and switch reader) desynced and frozen by FLUSH TABLES WITH READ LOCK (a Donor during a blocking SST) while the voucher moves to db-only through node2: the follower reads only from a Synced node
# Buckets: 1
. "$(dirname "$0")/../support/ft_galera.sh"
LOCKER_PID=
n1() {
        mysql --no-defaults -uroot -h127.0.0.1 -P3311 --protocol=TCP --connect-timeout=3 -N -B "$@" 2>&1
}
wsrep() {
        mysql --no-defaults -uroot -h127.0.0.1 -P"$1" --protocol=TCP --connect-timeout=3 -N -B \
                -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | awk '{print $2}'
}
# node1 released at the end whatever happened (the next case needs three Synced nodes).
# The read lock lives with its server session: KILL it there (a killed client leaves the
# session sleeping), then resync.
release_node1() {
        local id
        for id in $(n1 -e "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(120)%'"); do
                [[ $id =~ ^[0-9]+$ ]] && n1 -e "KILL $id" >/dev/null
        done
        [[ -n $LOCKER_PID ]] && { kill "$LOCKER_PID" 2>/dev/null; wait "$LOCKER_PID" 2>/dev/null; }
        LOCKER_PID=
        n1 -e "UNLOCK TABLES; SET GLOBAL wsrep_desync = OFF" >/dev/null
}
galera_heal() {
        local i
        release_node1
        for ((i = 0; i < 60; i++)); do
                "$GREPO/scripts/stack.sh" galera status >/dev/null 2>&1 && return 0
                sleep 1
        done
        "$GREPO/scripts/stack.sh" galera up >/dev/null 2>&1 || ft_log "galera up at cleanup failed"
}
ft_init galera_switch_desynced

ft_front f1
V=$(ft_voucher 40 1)
ft_consumer c1
ft_buy f1 "$V" 1 10 4
ft_settle 60 || ft_fail "first purchases not decided"
w=$(ft_galera_writer f1)
[[ $w == *3311* ]] || ft_die "the front writes through '$w', want node1 (127.0.0.1:3311)"
ft_eq "$(wsrep 3311 wsrep_local_state_comment)" Synced "node1 Synced before the fault"

# node1 becomes a Donor during a blocking SST: desynced, then frozen by a read lock.
before=$(grep -c 'event=switch_read_not_synced' "$FT_WORK/f1.log")
n1 -e "SET GLOBAL wsrep_desync = ON" >/dev/null || ft_die "wsrep_desync = ON on node1"
n1 -e "FLUSH TABLES WITH READ LOCK; SELECT SLEEP(120)" >"$FT_WORK/locker.log" &
LOCKER_PID=$!
for ((i = 0; i < 100; i++)); do
        [[ $(wsrep 3311 wsrep_local_state) == 2 ]] && break
        sleep 0.1
done
ft_eq "$(wsrep 3311 wsrep_local_state_comment)" Donor/Desynced "node1 is desynced"
ft_note "node1 desynced (wsrep_desync + FLUSH TABLES WITH READ LOCK) while V moved to db-only through node2"
for ((i = 0; i < 100; i++)); do
        (($(grep -c 'event=switch_read_not_synced' "$FT_WORK/f1.log") > before)) && break
        sleep 0.1
done
line=$(grep 'event=switch_read_not_synced' "$FT_WORK/f1.log" | tail -n 1)
[[ $line == *port=3311* && $line == *wsrep_local_state=2* ]] &&
        ft_ok "the follower refused node1 for the switch read ($(grep -o "port=[0-9]* wsrep_local_state=[0-9]*" <<<"$line"))" ||
        ft_fail "no switch_read_not_synced for node1 within 10 s (last: '${line:-none}')"
m=$(curl -s -m 3 "http://${FT_OPS[f1]}/metrics" | awk '$1 == "seckill_front_switch_not_synced_total" {print $2}')
((${m:-0} >= 1)) && ft_ok "seckill_front_switch_not_synced_total = $m" ||
        ft_fail "seckill_front_switch_not_synced_total = '${m:-absent}', want >= 1"

# The operator moves V to the DB-only path through node2; node1, frozen, never applies it.
SECKILL_MYSQL_URL="mysql://root@127.0.0.1:3312/$FT_DB" "$FT_BIN/seckill-admin" degrade db-only --voucher "$V" \
        >>"$FT_WORK/admin.log" 2>&1 || ft_fail "degrade db-only through node2"
sleep 1
st1=$(n1 "$FT_DB" -e "SELECT state FROM tb_seckill_switch WHERE scope = $V")
ft_eq "$st1" redis "node1 (frozen) still holds the old switch row: reads there are stale"
ft_probe_code 200 f1 "$V" 500 60 && ft_ok "the front followed node2's rows: the DB-only path sells (first 200 after ${FT_PROBE_S} s)" ||
        ft_fail "no 200 from the DB-only path within 60 s (the front kept node1's stale rows?)"
ft_eq "$(grep -c 'event=switch_stale' "$FT_WORK/f1.log")" 0 "the follower never went stale (a Synced node answered every second)"
ft_buy f1 "$V" 600 6 3

# Release node1: it resynchronizes and applies what it missed.
release_node1
for ((i = 0; i < 60; i++)); do
        [[ $(wsrep 3311 wsrep_local_state_comment) == Synced ]] && break
        sleep 1
done
ft_eq "$(wsrep 3311 wsrep_local_state_comment)" Synced "node1 Synced again after UNLOCK and wsrep_desync = OFF (${i} s)"
ft_fault_over
ft_check_db_path f1 "$V"

"$FT_BIN/seckill-admin" degrade auto --voucher "$V" >>"$FT_WORK/admin.log" 2>&1 || ft_fail "degrade auto"
ft_wait_state_redis "$V" 60 || ft_fail "voucher $V not back in state redis"
ft_probe_202 f1 "$V" 700 60 || ft_fail "no 202 after the voucher returned to Redis"
ft_buy f1 "$V" 800 40 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 60 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_told "$V"
ft_finish
