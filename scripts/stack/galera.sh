# scripts/stack/galera.sh: the three-node MariaDB Galera cluster of DESIGN.md 10 and 16,
# sourced by scripts/stack.sh (uses its HOST, STACK_DIR, RUN_DIR, LOG_DIR, SUDO, say, warn,
# die, port_open, live_pid, stop_pid, prepare_dirs). Debian's mariadb-server (10.11) and
# galera-4 only; never touches the system MariaDB on 3306, Redis or Kafka.
#
#   node1 127.0.0.1:3311  group 4567  IST 4568  SST (rsync) 4444
#   node2 127.0.0.1:3312  group 4577  IST 4578  SST (rsync) 4454
#   node3 127.0.0.1:3313  group 4587  IST 4588  SST (rsync) 4464
#
# Each node: its own datadir, socket, pid and error log under $GALERA_DIR/nodeN (owned by
# the mysql user: mariadbd runs as mysql, since the rsync SST fails under root), a
# my.cnf passed with --defaults-file (the SST scripts read it too), binlog_format=ROW,
# innodb_autoinc_lock_mode=2, innodb_flush_log_at_trx_commit=1, wsrep_sst_method=rsync,
# wsrep_sst_donor = node3 (the last node, never the writer; node3's own is node2),
# evs.suspect_timeout = PT4S (Galera's default is 5 s): a node silent that long is evicted
# by the others, and until then no COMMIT completes anywhere. Measured from a writer's
# SIGKILL or SIGSTOP to the survivors' first commit: 4.3-5.2 s (6.2-6.8 s with the
# default); the worker lease's confirmed window (20 s with the default 30 s lease) is
# chosen to outlast 3 times that (docs/SCALING.md, sk/lease_plan.h).
# root logs in over TCP from 127.0.0.1 without a password (root@127.0.0.1, loopback only;
# skip-name-resolve), like the standalone stack.
#
# up:   nothing running → `mariadbd --wsrep-recover` on every node with data, bootstrap
#       the one with the highest seqno (safe_to_bootstrap: 1 set only there,
#       --wsrep-new-cluster), then the others (a fresh stack: node1, after
#       mariadb-install-db). Some running → start only the missing ones (they rejoin by
#       IST, or SST from the donor). Waits until wsrep_cluster_size = 3.
# down: stops the nodes we started (pid files), node3 first, node1 last.
#
# Environment: SECKILL_STACK_GALERA_DIR ($STACK_DIR/galera; the mysql user must be able
# to reach it), SECKILL_STACK_GALERA_PORT (3311, the first of three),
# SECKILL_STACK_GALERA_TIMEOUT_S (180, the wait for a node and for the cluster size).

GALERA_DIR=${SECKILL_STACK_GALERA_DIR:-$STACK_DIR/galera}
GALERA_PORT0=${SECKILL_STACK_GALERA_PORT:-3311}
GALERA_TIMEOUT_S=${SECKILL_STACK_GALERA_TIMEOUT_S:-180}
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so

galera_port() { echo $((GALERA_PORT0 + $1 - 1)); }
galera_gport() { echo $((4567 + 10 * ($1 - 1))); }
galera_dir() { echo "$GALERA_DIR/node$1"; }
galera_cnf() { echo "$GALERA_DIR/node$1/my.cnf"; }
galera_sock() { echo "$GALERA_DIR/node$1/mariadbd.sock"; }
galera_pidfile() { echo "$RUN_DIR/galera-node$1.pid"; }
galera_our_pid() { live_pid "$(galera_pidfile "$1")" "$(galera_cnf "$1")"; }

galera_url() {
        echo "mysql://root@$HOST:$(galera_port 1),$HOST:$(galera_port 2),$HOST:$(galera_port 3)/seckill"
}

# SQL on node $1 through its socket as the OS root (unix_socket login); -N -B output.
galera_sql() {
        local n=$1
        shift
        mysql --no-defaults --connect-timeout=3 --protocol=SOCKET -S "$(galera_sock "$n")" -uroot -N -B "$@"
}
# "name value" of one wsrep status variable $2 on node $1 (empty when it does not answer).
galera_status_var() {
        { galera_sql "$1" -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null || true; } | awk '{print $2}'
}
galera_alive() {
        mysqladmin --no-defaults --connect-timeout=2 --protocol=TCP -h "$HOST" -P "$(galera_port "$1")" -uroot ping >/dev/null 2>&1
}

galera_write_cnf() {
        local n=$1 d donor=node3 members
        d=$(galera_dir "$n")
        [[ $n -eq 3 ]] && donor=node2
        members="$HOST:$(galera_gport 1),$HOST:$(galera_gport 2),$HOST:$(galera_gport 3)"
        mkdir -p "$d/data"
        cat >"$d/my.cnf" <<EOF
# written by scripts/stack.sh (scripts/stack/galera.sh); rewritten by every 'up'
[mysqld]
user=mysql
datadir=$d/data
socket=$d/mariadbd.sock
pid-file=$d/mariadbd.pid
log-error=$d/mariadbd.err
port=$(galera_port "$n")
bind-address=$HOST
skip-name-resolve
innodb_buffer_pool_size=64M
default_storage_engine=InnoDB
binlog_format=ROW
innodb_autoinc_lock_mode=2
innodb_flush_log_at_trx_commit=1
wsrep_on=ON
wsrep_provider=$GALERA_PROVIDER
wsrep_cluster_name=seckill_galera
wsrep_cluster_address=gcomm://$members
wsrep_node_name=node$n
wsrep_node_address=$HOST
wsrep_provider_options="gmcast.listen_addr=tcp://$HOST:$(galera_gport "$n");ist.recv_addr=$HOST:$(($(galera_gport "$n") + 1));gcache.size=128M;evs.suspect_timeout=PT4S"
wsrep_sst_method=rsync
wsrep_sst_receive_address=$HOST:$((4444 + 10 * (n - 1)))
wsrep_sst_donor=$donor,
EOF
        $SUDO chown -R mysql:mysql "$d"
}

# The seqno node $1 would start from: grastate.dat's after a clean stop, otherwise
# `mariadbd --wsrep-recover` (the InnoDB position). -1 when unknown (no data).
galera_seqno() {
        local n=$1 d seq log
        d=$(galera_dir "$n")
        [[ -d $d/data/mysql ]] || { echo -1; return 0; }
        seq=$(sed -n 's/^seqno:[[:space:]]*//p' "$d/data/grastate.dat" 2>/dev/null || true)
        if [[ -n $seq && $seq != -1 ]]; then
                echo "$seq"
                return 0
        fi
        log=$d/recover.err
        $SUDO rm -f "$log"
        $SUDO /usr/sbin/mariadbd --defaults-file="$(galera_cnf "$n")" --wsrep-recover \
                --log-error="$log" >/dev/null 2>&1 9>&- || true
        seq=$(sed -n 's/.*WSREP: Recovered position: [0-9a-f-]*:\(-\{0,1\}[0-9]*\).*/\1/p' "$log" 2>/dev/null | tail -n1)
        echo "${seq:--1}"
}

# Start node $1 (extra mariadbd args "${@:2}") and wait until it is Synced or answers as a
# joiner that completed its state transfer.
galera_start_node() {
        local n=$1 i st
        shift
        say "galera: starting node$n on $HOST:$(galera_port "$n")${*:+ ($*)}"
        $SUDO start-stop-daemon --start --oknodo --background --make-pidfile \
                --pidfile "$(galera_pidfile "$n")" --output "$LOG_DIR/galera-node$n.out" \
                --exec /usr/sbin/mariadbd -- --defaults-file="$(galera_cnf "$n")" "$@" 9>&-
        for ((i = 0; i < GALERA_TIMEOUT_S * 5; i++)); do
                st=$(galera_status_var "$n" wsrep_local_state)
                if [[ $st == 4 ]]; then
                        say "galera: node$n synced (pid $(galera_our_pid "$n"))"
                        return 0
                fi
                if [[ -z $(galera_our_pid "$n") ]]; then
                        tail -n 30 "$(galera_dir "$n")/mariadbd.err" >&2 || true
                        die "galera: node$n exited during startup; log: $(galera_dir "$n")/mariadbd.err"
                fi
                ((i % 50 == 49)) && say "galera: waiting for node$n ($((i / 5 + 1)) s, wsrep_local_state=${st:-none})"
                sleep 0.2
        done
        tail -n 30 "$(galera_dir "$n")/mariadbd.err" >&2 || true
        die "galera: node$n not synced after $GALERA_TIMEOUT_S s; log: $(galera_dir "$n")/mariadbd.err"
}

# root@127.0.0.1 without a password (TCP, loopback); replicated to every node.
galera_ensure_root_tcp() {
        local n=$1
        mysql --no-defaults --connect-timeout=3 --protocol=TCP -h "$HOST" -P "$(galera_port "$n")" -uroot \
                -N -e 'SELECT 1' >/dev/null 2>&1 && return 0
        galera_sql "$n" -e "
                CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
                GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" ||
                die "galera: could not create root@127.0.0.1 on node$n"
        say "galera: root@127.0.0.1 logs in over TCP without a password"
}

galera_up() {
        local n best=0 best_seq=-2 seq running=0 i size fresh=1
        # Debian's packages, installed when missing (mariadb-server ships mariadbd and
        # mariadb-install-db; rsync is the state transfer method).
        ensure_pkgs mariadb-server galera-4 rsync
        [[ -x /usr/sbin/mariadbd && -f $GALERA_PROVIDER ]] ||
                die "galera: needs Debian's mariadb-server and galera-4 (apt-get install mariadb-server galera-4)"
        command -v rsync >/dev/null 2>&1 || die "galera: needs rsync (the state transfer method)"
        prepare_dirs
        mkdir -p "$GALERA_DIR"
        $SUDO chown mysql:mysql "$GALERA_DIR"
        for n in 1 2 3; do
                if [[ -n $(galera_our_pid "$n") ]]; then
                        running=$((running + 1))
                elif port_open "$HOST" "$(galera_port "$n")"; then
                        die "galera: port $(galera_port "$n") is taken by a process we did not start"
                else
                        galera_write_cnf "$n"
                fi
                [[ -d $(galera_dir "$n")/data/mysql ]] && fresh=0
        done
        if [[ $running -eq 0 ]]; then
                if [[ $fresh -eq 1 ]]; then
                        say "galera: new cluster; initialising node1 (mariadb-install-db)"
                        $SUDO mariadb-install-db --defaults-file="$(galera_cnf 1)" --user=mysql \
                                --skip-test-db >"$LOG_DIR/galera-install-db.log" 2>&1 ||
                                { tail -n 30 "$LOG_DIR/galera-install-db.log" >&2; die "galera: mariadb-install-db failed"; }
                        best=1
                else
                        for n in 1 2 3; do
                                seq=$(galera_seqno "$n")
                                say "galera: node$n recovered seqno $seq"
                                if [[ $seq =~ ^-?[0-9]+$ ]] && ((seq > best_seq)); then
                                        best=$n
                                        best_seq=$seq
                                fi
                        done
                        ((best_seq >= 0)) || die "galera: no node has a recoverable position; see $GALERA_DIR/node*/recover.err"
                        say "galera: bootstrapping node$best (highest seqno $best_seq)"
                        $SUDO sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$(galera_dir "$best")/data/grastate.dat"
                fi
                galera_start_node "$best" --wsrep-new-cluster
                galera_ensure_root_tcp "$best"
        fi
        for n in 1 2 3; do
                [[ -n $(galera_our_pid "$n") ]] && continue
                galera_start_node "$n"
        done
        for ((i = 0; i < GALERA_TIMEOUT_S * 5; i++)); do
                size=$(galera_status_var 1 wsrep_cluster_size)
                [[ $size == 3 ]] && break
                sleep 0.2
        done
        [[ $size == 3 ]] || die "galera: wsrep_cluster_size is ${size:-unknown}, not 3, after $GALERA_TIMEOUT_S s"
        for n in 1 2 3; do galera_ensure_root_tcp "$n"; done
        say "galera: up, wsrep_cluster_size=3"
        echo "export SECKILL_MYSQL_URL=$(galera_url)"
}

galera_down() {
        local n pid
        for n in 3 2 1; do
                pid=$(galera_our_pid "$n")
                if [[ -n $pid ]]; then
                        stop_pid "galera-node$n" "$pid" 120
                        rm -f "$(galera_pidfile "$n")"
                elif port_open "$HOST" "$(galera_port "$n")"; then
                        say "galera-node$n: running on $HOST:$(galera_port "$n") but not started by us; left alone"
                else
                        say "galera-node$n: not running"
                fi
        done
}

# One line per node: NAME ADDR STATE pid=PID started_by_us=yes|no wsrep details.
# @returns 0 iff the three nodes are Synced in a cluster of 3.
galera_status() {
        local n pid ours state detail ok=0 st size ready
        for n in 1 2 3; do
                pid=$(galera_our_pid "$n"); ours=no; [[ -n $pid ]] && ours=yes
                if galera_alive "$n"; then
                        state=up
                        st=$(galera_status_var "$n" wsrep_local_state_comment)
                        size=$(galera_status_var "$n" wsrep_cluster_size)
                        ready=$(galera_status_var "$n" wsrep_ready)
                        detail="wsrep_local_state=${st:-?} wsrep_ready=${ready:-?} wsrep_cluster_size=${size:-?}"
                        [[ $st == Synced && $size == 3 ]] || ok=1
                else
                        state=down; detail=; ok=1
                fi
                printf '%-12s %-16s %-6s pid=%-8s started_by_us=%-3s %s\n' "galera-node$n" \
                        "$HOST:$(galera_port "$n")" "$state" "${pid:--}" "$ours" "$detail"
        done
        return $ok
}

# Fault helpers (tests/faults): only ever act on a node we started.
galera_kill_node() {
        local n=$1 pid
        pid=$(galera_our_pid "$n")
        [[ -n $pid ]] || die "galera: node$n was not started by us (scripts/stack.sh galera up)"
        $SUDO kill -KILL "$pid"
        say "galera: SIGKILL sent to node$n (pid $pid); 'scripts/stack.sh galera up' restarts it"
}

cmd_galera() {
        local sub=${1:-}
        case $sub in
        up) with_lock; galera_up ;;
        down) with_lock; galera_down ;;
        status) galera_status ;;
        env) echo "export SECKILL_MYSQL_URL=$(galera_url)" ;;
        kill)
                [[ ${2:-} =~ ^[123]$ ]] || die "galera kill: which node (1, 2 or 3)?"
                galera_kill_node "$2"
                ;;
        *) die "galera: unknown command '$sub' (up, down, status, env, kill N)" ;;
        esac
}
