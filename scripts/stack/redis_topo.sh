# scripts/stack/redis_topo.sh: the replicated Redis topologies of DESIGN.md 4b and 10,
# sourced by scripts/stack.sh (uses its HOST, STACK_DIR, RUN_DIR, LOG_DIR, say, warn,
# die, port_open, live_pid, stop_pid, ensure_pkgs). Debian's redis-server only.
#
#   cluster   6 nodes 127.0.0.1:7000-7005 (3 masters + 3 replicas), created with
#             `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`
#   sentinel  master 127.0.0.1:6390, replica 6391, Sentinels 26390-26392 watching the
#             master named "seckill" (quorum 2); `redis-server CONF --sentinel`
#
# Every data node: no persistence, maxmemory-policy noeviction, repl-diskless-sync-delay 0
# (a replica reconfigured by a failover syncs at once, not 5 s later), min-replicas-to-write 1,
# min-replicas-max-lag 10 (a replica promoted later keeps the rule). Every process we
# start has a pid file under $RUN_DIR; `down` stops only those. A topology whose nodes
# already answer but were not started by us is used as it is, never reconfigured.
#
# Environment: SECKILL_STACK_CLUSTER_PORT (7000, the first of six ports),
# SECKILL_STACK_SENTINEL_REDIS_PORT (6390, master; +1 replica),
# SECKILL_STACK_SENTINEL_PORT (26390, first of three Sentinels),
# SECKILL_STACK_SENTINEL_MASTER (seckill).

CLUSTER_PORT0=${SECKILL_STACK_CLUSTER_PORT:-7000}
SENT_DATA_PORT=${SECKILL_STACK_SENTINEL_REDIS_PORT:-6390}
SENT_PORT0=${SECKILL_STACK_SENTINEL_PORT:-26390}
SENT_MASTER=${SECKILL_STACK_SENTINEL_MASTER:-seckill}
CLUSTER_DIR=$STACK_DIR/redis-cluster
SENT_DIR=$STACK_DIR/redis-sentinel

topo_ports_cluster() { local i; for ((i = 0; i < 6; i++)); do echo $((CLUSTER_PORT0 + i)); done; }
topo_ports_sentinel_data() { echo "$SENT_DATA_PORT"; echo $((SENT_DATA_PORT + 1)); }
topo_ports_sentinels() { local i; for ((i = 0; i < 3; i++)); do echo $((SENT_PORT0 + i)); done; }

topo_cli() { local port=$1; shift; redis-cli -h "$HOST" -p "$port" "$@"; }
topo_ping() { [[ $(topo_cli "$1" ping 2>/dev/null) == PONG ]]; }
topo_pidfile() { echo "$RUN_DIR/redis-$1.pid"; }
topo_our_pid() { live_pid "$(topo_pidfile "$1")" redis-server; }

# Start one redis-server (data node) on port $1 in dir $2 with extra args "${@:3}".
topo_start_node() {
        local port=$1 dir=$2 i
        shift 2
        mkdir -p "$dir"
        port_open "$HOST" "$port" && die "redis $port: port taken by something we did not start"
        redis-server --daemonize yes --bind "$HOST" --port "$port" --save "" --appendonly no \
                --maxmemory-policy noeviction --min-replicas-to-write 1 --min-replicas-max-lag 10 \
                --repl-diskless-sync-delay 0 \
                --dir "$dir" --pidfile "$(topo_pidfile "$port")" --logfile "$LOG_DIR/redis-$port.log" \
                --loglevel warning "$@" 9>&-
        for ((i = 0; i < 50; i++)); do
                topo_ping "$port" && return 0
                sleep 0.2
        done
        tail -n 20 "$LOG_DIR/redis-$port.log" >&2 || true
        die "redis $port: not answering PING after 10 s"
}

# True when the master on port $1 has a "good" replica (acked within min-replicas-max-lag):
# until then min-replicas-to-write 1 answers NOREPLICAS.
topo_good_replica() {
        [[ $(topo_cli "$1" info replication 2>/dev/null | tr -d '\r' |
                sed -n 's/^min_slaves_good_slaves://p') -ge 1 ]]
}

# Wait up to $1 s for the cluster to be ok from every node with a connected replica
# behind every master (min-replicas-to-write 1 refuses writes before that).
cluster_wait_ok() {
        local wait_s=$1 i port ok
        for ((i = 0; i < wait_s * 5; i++)); do
                ok=1
                for port in $(topo_ports_cluster); do
                        topo_cli "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || { ok=0; break; }
                        if topo_cli "$port" role 2>/dev/null | head -n1 | grep -qx master; then
                                topo_good_replica "$port" || { ok=0; break; }
                        fi
                done
                [[ $ok -eq 1 ]] && return 0
                sleep 0.2
        done
        return 1
}

# "UP OURS": how many of the ports "$@" answer PING, and how many we started.
topo_count() {
        local port up=0 ours=0
        for port in "$@"; do
                topo_ping "$port" && up=$((up + 1))
                [[ -n $(topo_our_pid "$port") ]] && ours=$((ours + 1))
        done
        echo "$up $ours"
}

topo_ensure_pkgs() {
        command -v redis-server >/dev/null 2>&1 || ensure_pkgs redis-server
        command -v redis-cli >/dev/null 2>&1 || ensure_pkgs redis-tools
}

cluster_up() {
        local port up ours nodes=()
        topo_ensure_pkgs
        read -r up ours < <(topo_count $(topo_ports_cluster))
        if [[ $up -eq 6 ]]; then
                cluster_wait_ok 30 || die "cluster: 6 nodes answer on $HOST:$CLUSTER_PORT0.. but the cluster is not ok"
                say "cluster: running on $HOST:$CLUSTER_PORT0-$((CLUSTER_PORT0 + 5)) ($ours of 6 nodes started by us)"
                cluster_print_url
                return 0
        fi
        [[ $up -eq 0 ]] || die "cluster: only $up of 6 nodes answer on $HOST:$CLUSTER_PORT0..; 'scripts/stack.sh down cluster' first"
        prepare_dirs
        rm -rf "$CLUSTER_DIR"
        say "cluster: starting 6 nodes on $HOST:$CLUSTER_PORT0-$((CLUSTER_PORT0 + 5))"
        for port in $(topo_ports_cluster); do
                topo_start_node "$port" "$CLUSTER_DIR/$port" --cluster-enabled yes \
                        --cluster-config-file "nodes-$port.conf" --cluster-node-timeout 3000
                nodes+=("$HOST:$port")
        done
        redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes \
                >"$LOG_DIR/redis-cluster-create.log" 2>&1 ||
                { tail -n 20 "$LOG_DIR/redis-cluster-create.log" >&2; die "cluster: redis-cli --cluster create failed"; }
        cluster_wait_ok 60 || die "cluster: not ok 60 s after create; logs: $LOG_DIR/redis-$CLUSTER_PORT0.log"
        say "cluster: ready (3 masters + 3 replicas)"
        cluster_print_url
}

cluster_url() {
        local port seeds=
        for port in $(topo_ports_cluster); do seeds+=${seeds:+,}$HOST:$port; done
        echo "redis-cluster://$seeds"
}
cluster_print_url() { say "cluster: SECKILL_REDIS_URL=$(cluster_url)"; }

sentinel_url() {
        local port seeds=
        for port in $(topo_ports_sentinels); do seeds+=${seeds:+,}$HOST:$port; done
        echo "redis-sentinel://$seeds/$SENT_MASTER"
}
sentinel_print_url() { say "sentinel: SECKILL_REDIS_URL=$(sentinel_url)"; }

# Wait up to $1 s until every Sentinel knows the master, one replica and two others.
sentinel_wait_ok() {
        local wait_s=$1 i port ok line
        for ((i = 0; i < wait_s * 5; i++)); do
                ok=1
                for port in $(topo_ports_sentinels); do
                        line=$(topo_cli "$port" info sentinel 2>/dev/null | tr -d '\r' | grep "^master0:" || true)
                        [[ $line == *"name=$SENT_MASTER,status=ok"*"slaves=1,sentinels=3"* ]] || { ok=0; break; }
                done
                if [[ $ok -eq 1 ]]; then        # the current master accepts writes
                        line=$(topo_cli "$SENT_PORT0" sentinel get-master-addr-by-name "$SENT_MASTER" 2>/dev/null | sed -n 2p)
                        [[ -n $line ]] && topo_good_replica "$line" || ok=0
                fi
                [[ $ok -eq 1 ]] && return 0
                sleep 0.2
        done
        return 1
}

sentinel_up() {
        local port up ours total=5 conf i=0
        topo_ensure_pkgs
        read -r up ours < <(topo_count $(topo_ports_sentinel_data) $(topo_ports_sentinels))
        if [[ $up -eq $total ]]; then
                sentinel_wait_ok 30 || die "sentinel: every node answers but the Sentinels do not agree on '$SENT_MASTER'"
                say "sentinel: running (master $SENT_MASTER, $ours of $total processes started by us)"
                sentinel_print_url
                return 0
        fi
        [[ $up -eq 0 ]] || die "sentinel: only $up of $total processes answer; 'scripts/stack.sh down sentinel' first"
        prepare_dirs
        rm -rf "$SENT_DIR"
        say "sentinel: starting master $HOST:$SENT_DATA_PORT, replica $((SENT_DATA_PORT + 1)), Sentinels $SENT_PORT0-$((SENT_PORT0 + 2))"
        topo_start_node "$SENT_DATA_PORT" "$SENT_DIR/$SENT_DATA_PORT"
        topo_start_node $((SENT_DATA_PORT + 1)) "$SENT_DIR/$((SENT_DATA_PORT + 1))" \
                --replicaof "$HOST" "$SENT_DATA_PORT"
        for port in $(topo_ports_sentinels); do
                mkdir -p "$SENT_DIR/$port"
                conf=$SENT_DIR/$port/sentinel.conf
                # Sentinels rewrite their own config file (it must be writable).
                cat >"$conf" <<EOF
bind $HOST
port $port
daemonize yes
pidfile $(topo_pidfile "$port")
logfile $LOG_DIR/redis-$port.log
dir $SENT_DIR/$port
sentinel monitor $SENT_MASTER $HOST $SENT_DATA_PORT 2
sentinel down-after-milliseconds $SENT_MASTER 2000
sentinel failover-timeout $SENT_MASTER 10000
sentinel parallel-syncs $SENT_MASTER 1
EOF
                redis-server "$conf" --sentinel 9>&-
                i=0
                until topo_ping "$port"; do
                        ((++i < 50)) || die "sentinel $port: not answering PING after 10 s"
                        sleep 0.2
                done
        done
        sentinel_wait_ok 60 || die "sentinel: the Sentinels did not agree on '$SENT_MASTER' within 60 s"
        say "sentinel: ready"
        sentinel_print_url
}

# Stop what we started of topology $1 (cluster | sentinel).
topo_down() {
        local port pid ports
        if [[ $1 == cluster ]]; then
                ports=$(topo_ports_cluster)
        else
                ports="$(topo_ports_sentinels) $(topo_ports_sentinel_data)"
        fi
        for port in $ports; do
                pid=$(topo_our_pid "$port")
                if [[ -n $pid ]]; then
                        stop_pid "redis $port" "$pid" 30
                        rm -f "$(topo_pidfile "$port")"
                elif port_open "$HOST" "$port"; then
                        say "$1: $HOST:$port is running but not started by us; left alone"
                fi
        done
}

# One status line per node of topology $1: NAME ADDR STATE pid started_by_us ROLE
topo_status() {
        local kind=$1 port pid ours state role
        local ports
        if [[ $kind == cluster ]]; then ports=$(topo_ports_cluster); else ports="$(topo_ports_sentinel_data) $(topo_ports_sentinels)"; fi
        for port in $ports; do
                pid=$(topo_our_pid "$port"); ours=no; [[ -n $pid ]] && ours=yes
                if topo_ping "$port"; then
                        state=up
                        role=$(topo_cli "$port" role 2>/dev/null | head -n1)
                else
                        state=down; role=
                fi
                [[ $state == down && $ours == no ]] && continue
                printf '%-8s %-16s %-6s pid=%-8s started_by_us=%-3s role=%s\n' "$kind" "$HOST:$port" "$state" \
                        "${pid:--}" "$ours" "${role:--}"
        done
}
