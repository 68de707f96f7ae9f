# scripts/stack/redis_topo.sh: the replicated Redis topologies of DESIGN.md 4b and 10,
# sourced by scripts/stack.sh (uses its HOST, STACK_DIR, RUN_DIR, LOG_DIR, say, warn,
# die, port_open, live_pid, stop_pid, ensure_pkgs, detached). Debian's redis-server only.
#
#   cluster   9 nodes 127.0.0.1:7000-7008 (bus ports 17000-17008): 3 masters with 2
#             replicas each, created with `redis-cli --cluster create ...
#             --cluster-replicas 2 --cluster-yes`, cluster-node-timeout 3000,
#             cluster-require-full-coverage no (a dead master stops only its own slots:
#             with the default "yes" every node answers CLUSTERDOWN for every key from
#             the moment the dead master is marked failed until its replica is promoted,
#             so the buckets of the healthy masters would stop too; DESIGN.md 4b budget)
#   sentinel  master 127.0.0.1:6390, replicas 6391 and 6392, Sentinels 26390-26392
#             watching the master named "seckill" (quorum 2, down-after-milliseconds
#             1000, failover-timeout 10000); `redis-server CONF --sentinel`
#
# Two replicas per master: after a failover the promoted replica still has one replica
# to write to, so min-replicas-to-write 1 does not refuse writes (NOREPLICAS) until the
# old master comes back. Every data node: no persistence, maxmemory-policy noeviction,
# repl-diskless-sync-delay 0 (a replica reconfigured by a failover syncs at once, not 5 s
# later), min-replicas-to-write 1, min-replicas-max-lag 10 (a replica promoted later
# keeps the rule). Every process we start has a pid file under $RUN_DIR; `down` stops
# only those. A topology whose nodes already answer but were not started by us is used as
# it is, never reconfigured. `up` with some nodes down restarts the missing ones we
# created (same port, same dir: a Cluster node keeps its nodes.conf and rejoins as a
# replica; a Sentinel data node comes back as a replica of the current master). Both
# print the topology they found or started (topo_print).
#
# Environment: SECKILL_STACK_CLUSTER_PORT (7000, the first of nine ports),
# SECKILL_STACK_SENTINEL_REDIS_PORT (6390, master; +1, +2 replicas),
# SECKILL_STACK_SENTINEL_PORT (26390, first of three Sentinels),
# SECKILL_STACK_SENTINEL_MASTER (seckill).

CLUSTER_PORT0=${SECKILL_STACK_CLUSTER_PORT:-7000}
SENT_DATA_PORT=${SECKILL_STACK_SENTINEL_REDIS_PORT:-6390}
SENT_PORT0=${SECKILL_STACK_SENTINEL_PORT:-26390}
SENT_MASTER=${SECKILL_STACK_SENTINEL_MASTER:-seckill}
CLUSTER_DIR=$STACK_DIR/redis-cluster
SENT_DIR=$STACK_DIR/redis-sentinel
CLUSTER_NODES=9          # 3 masters x (1 + TOPO_REPLICAS)
TOPO_REPLICAS=2          # replicas per master, both topologies
CLUSTER_NODE_TIMEOUT_MS=3000
CLUSTER_FULL_COVERAGE=no
SENT_DOWN_AFTER_MS=1000
SENT_FAILOVER_TIMEOUT_MS=10000

topo_ports_cluster() { local i; for ((i = 0; i < CLUSTER_NODES; i++)); do echo $((CLUSTER_PORT0 + i)); done; }
topo_ports_sentinel_data() { local i; for ((i = 0; i <= TOPO_REPLICAS; i++)); do echo $((SENT_DATA_PORT + i)); done; }
topo_ports_sentinels() { local i; for ((i = 0; i < 3; i++)); do echo $((SENT_PORT0 + i)); done; }

topo_cli() { local port=$1; shift; timeout 10 redis-cli -h "$HOST" -p "$port" "$@"; }
topo_ping() { [[ $(topo_cli "$1" ping 2>/dev/null) == PONG ]]; }
topo_pidfile() { echo "$RUN_DIR/redis-$1.pid"; }
topo_our_pid() { live_pid "$(topo_pidfile "$1")" redis-server; }
# One field of INFO replication of the node on port $1 (empty when it does not answer).
topo_repl() {
        { topo_cli "$1" info replication 2>/dev/null || true; } | tr -d '\r' | sed -n "s/^$2://p"
}

# Start one redis-server (data node) on port $1 in dir $2 with extra args "${@:3}".
topo_start_node() {
        local port=$1 dir=$2 i
        shift 2
        mkdir -p "$dir"
        port_open "$HOST" "$port" && die "redis $port: port taken by something we did not start"
        detached redis-server --daemonize yes --bind "$HOST" --port "$port" --save "" --appendonly no \
                --maxmemory-policy noeviction --min-replicas-to-write 1 --min-replicas-max-lag 10 \
                --repl-diskless-sync-delay 0 \
                --dir "$dir" --pidfile "$(topo_pidfile "$port")" --logfile "$LOG_DIR/redis-$port.log" \
                --loglevel warning "$@"
        for ((i = 0; i < 50; i++)); do
                topo_ping "$port" && return 0
                sleep 0.2
        done
        tail -n 20 "$LOG_DIR/redis-$port.log" >&2 || true
        die "redis $port: not answering PING after 10 s"
}
# A Cluster node of ours, on port $1 (its nodes.conf in its dir: a restart rejoins).
cluster_start_node() {
        topo_start_node "$1" "$CLUSTER_DIR/$1" --cluster-enabled yes \
                --cluster-config-file "nodes-$1.conf" --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT_MS" \
                --cluster-require-full-coverage "$CLUSTER_FULL_COVERAGE"
}
# The settings of cluster_start_node on the running nodes we started (a Cluster started
# by an older stack.sh gets them without a restart); nodes not ours are left alone.
cluster_conform() {
        local port
        for port in $(topo_ports_cluster); do
                [[ -n $(topo_our_pid "$port") ]] || continue
                topo_cli "$port" config set cluster-require-full-coverage "$CLUSTER_FULL_COVERAGE" >/dev/null 2>&1 ||
                        warn "cluster: CONFIG SET cluster-require-full-coverage on $HOST:$port failed"
        done
}

# How many replicas of the master on port $1 are "good" (acked within
# min-replicas-max-lag): below min-replicas-to-write (1) the master answers NOREPLICAS.
topo_good_replicas() {
        local n
        n=$(topo_repl "$1" min_slaves_good_slaves)
        echo "${n:-0}"
}

# True when the node on port $1 sees 3 masters serving slots, each with at least $2
# replicas, and no node failed or in handshake (the gossip has converged there).
cluster_view_ok() {
        { topo_cli "$1" cluster nodes 2>/dev/null || true; } | awk -v want="$2" '
        $3 ~ /fail|handshake|noaddr/ { bad = 1 }
        $3 ~ /master/ && NF >= 9 { masters[$1] = 1 }
        $3 ~ /slave/ { reps[$4]++ }
        END {
                n = 0
                for (m in masters) { n++; if (reps[m] < want) bad = 1 }
                exit !(n == 3 && !bad)
        }'
}

# Wait up to $1 s until every node says cluster_state:ok, sees every master with at least
# $2 replicas, and every master has at least $2 good replicas (1: writes are accepted,
# min-replicas-to-write 1; 2: the whole topology is in place).
cluster_wait_ok() {
        local wait_s=$1 want=$2 i port ok
        for ((i = 0; i < wait_s * 5; i++)); do
                ok=1
                for port in $(topo_ports_cluster); do
                        topo_cli "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || { ok=0; break; }
                        cluster_view_ok "$port" "$want" || { ok=0; break; }
                        if [[ $(topo_repl "$port" role) == master ]]; then
                                (($(topo_good_replicas "$port") >= want)) || { ok=0; break; }
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

# Restart the Cluster nodes that do not answer, when each has the dir and nodes.conf we
# created; dies naming the first one that has not.
cluster_heal() {
        local port missing=()
        for port in $(topo_ports_cluster); do
                topo_ping "$port" && continue
                [[ -f $CLUSTER_DIR/$port/nodes-$port.conf ]] ||
                        die "cluster: $HOST:$port does not answer and was not created by this stack ($CLUSTER_DIR/$port); 'scripts/stack.sh down cluster' first"
                missing+=("$port")
        done
        say "cluster: restarting ${missing[*]} (they rejoin with their nodes.conf)"
        for port in "${missing[@]}"; do cluster_start_node "$port"; done
}

cluster_up() {
        local port up ours nodes=() last=$((CLUSTER_PORT0 + CLUSTER_NODES - 1))
        topo_ensure_pkgs
        read -r up ours < <(topo_count $(topo_ports_cluster))
        if [[ $up -gt 0 && $up -lt $CLUSTER_NODES ]]; then
                cluster_heal
                cluster_wait_ok 60 1 || die "cluster: not ok 60 s after restarting its missing nodes; logs: $LOG_DIR/redis-PORT.log"
                read -r up ours < <(topo_count $(topo_ports_cluster))
        fi
        if [[ $up -eq $CLUSTER_NODES ]]; then
                cluster_wait_ok 30 1 || die "cluster: $CLUSTER_NODES nodes answer on $HOST:$CLUSTER_PORT0-$last but the cluster is not ok"
                cluster_conform
                say "cluster: running on $HOST:$CLUSTER_PORT0-$last ($ours of $CLUSTER_NODES nodes started by us)"
                cluster_print_topo
                cluster_print_url
                return 0
        fi
        prepare_dirs
        rm -rf "$CLUSTER_DIR"
        say "cluster: starting $CLUSTER_NODES nodes on $HOST:$CLUSTER_PORT0-$last"
        for port in $(topo_ports_cluster); do
                cluster_start_node "$port"
                nodes+=("$HOST:$port")
        done
        redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$TOPO_REPLICAS" --cluster-yes \
                >"$LOG_DIR/redis-cluster-create.log" 2>&1 ||
                { tail -n 20 "$LOG_DIR/redis-cluster-create.log" >&2; die "cluster: redis-cli --cluster create failed"; }
        cluster_wait_ok 90 "$TOPO_REPLICAS" ||
                die "cluster: not ok with $TOPO_REPLICAS replicas per master 90 s after create; logs: $LOG_DIR/redis-$CLUSTER_PORT0.log"
        say "cluster: ready (3 masters with $TOPO_REPLICAS replicas each)"
        cluster_print_topo
        cluster_print_url
}

# One line per master as CLUSTER NODES shows it: its slots and its replicas (a failed
# node is shown with its flag).
cluster_print_topo() {
        local port nodes=
        for port in $(topo_ports_cluster); do
                nodes=$(topo_cli "$port" cluster nodes 2>/dev/null) && [[ -n $nodes ]] && break
        done
        [[ -n $nodes ]] || { warn "cluster: no node answers CLUSTER NODES"; return 0; }
        awk '
        { split($2, a, "@"); addr[$1] = a[1]; fl[$1] = $3; master[$1] = $4
          s = ""; for (i = 9; i <= NF; i++) s = s (s == "" ? "" : ",") $i; slots[$1] = s }
        END {
                for (id in addr) if (fl[id] ~ /master/ && slots[id] != "") {
                        r = ""; n = 0
                        for (x in addr) if (master[x] == id) {
                                f = fl[x]; gsub(/myself,?|slave,?|,$/, "", f)
                                r = r (r == "" ? "" : ", ") addr[x] (f == "" ? "" : " (" f ")"); n++
                        }
                        f = fl[id]; gsub(/myself,?|master,?|,$/, "", f)
                        printf "stack: cluster: master %s%s slots %s, %d replica(s): %s\n", addr[id],
                                (f == "" ? "" : " (" f ")"), slots[id], n, (r == "" ? "none" : r)
                }
        }' <<<"$nodes" | sort
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

# The port of the master the first Sentinel that answers names (empty if none does).
sentinel_master_port() {
        local port addr
        for port in $(topo_ports_sentinels); do
                addr=$(topo_cli "$port" sentinel get-master-addr-by-name "$SENT_MASTER" 2>/dev/null | sed -n 2p)
                [[ $addr =~ ^[0-9]+$ ]] && { echo "$addr"; return 0; }
        done
}

# Wait up to $1 s until every Sentinel knows the master, its TOPO_REPLICAS replicas and
# the two other Sentinels, and the current master has at least $2 good replicas.
sentinel_wait_ok() {
        local wait_s=$1 want=$2 i port ok line
        for ((i = 0; i < wait_s * 5; i++)); do
                ok=1
                for port in $(topo_ports_sentinels); do
                        line=$(topo_cli "$port" info sentinel 2>/dev/null | tr -d '\r' | grep "^master0:" || true)
                        [[ $line == *"name=$SENT_MASTER,status=ok"*"slaves=$TOPO_REPLICAS,sentinels=3"* ]] || { ok=0; break; }
                done
                if [[ $ok -eq 1 ]]; then        # the current master accepts writes
                        line=$(sentinel_master_port)
                        [[ -n $line ]] && (($(topo_good_replicas "$line") >= want)) || ok=0
                fi
                [[ $ok -eq 1 ]] && return 0
                sleep 0.2
        done
        return 1
}

# Start the Sentinel on port $1 from its config file (written at creation; the Sentinel
# rewrites it with what it learnt).
sentinel_start_one() {
        local port=$1 i=0
        detached redis-server "$SENT_DIR/$port/sentinel.conf" --sentinel
        until topo_ping "$port"; do
                ((++i < 50)) || die "sentinel $port: not answering PING after 10 s"
                sleep 0.2
        done
}

# Restart the Sentinel group's processes that do not answer, when we created them: a
# data node as a replica of the master the Sentinels name now, a Sentinel from its file.
sentinel_heal() {
        local port master
        for port in $(topo_ports_sentinel_data) $(topo_ports_sentinels); do
                topo_ping "$port" && continue
                [[ -d $SENT_DIR/$port ]] ||
                        die "sentinel: $HOST:$port does not answer and was not created by this stack ($SENT_DIR/$port); 'scripts/stack.sh down sentinel' first"
        done
        for port in $(topo_ports_sentinels); do
                topo_ping "$port" && continue
                say "sentinel: restarting Sentinel $port"
                sentinel_start_one "$port"
        done
        master=$(sentinel_master_port)
        [[ -n $master ]] || die "sentinel: no Sentinel names a master for '$SENT_MASTER'; 'scripts/stack.sh down sentinel' first"
        topo_ping "$master" || die "sentinel: the master the Sentinels name ($HOST:$master) does not answer yet; wait for their failover and run 'up' again"
        for port in $(topo_ports_sentinel_data); do
                topo_ping "$port" && continue
                say "sentinel: restarting $HOST:$port as a replica of the master $HOST:$master"
                topo_start_node "$port" "$SENT_DIR/$port" --replicaof "$HOST" "$master"
        done
}

# One line: the master the Sentinels name, each replica with its link state, the Sentinels.
sentinel_print_topo() {
        local master port reps= st
        master=$(sentinel_master_port)
        [[ -n $master ]] || { warn "sentinel: no Sentinel names a master for '$SENT_MASTER'"; return 0; }
        for port in $(topo_ports_sentinel_data); do
                [[ $port == "$master" ]] && continue
                st=$(topo_repl "$port" role)
                case $st in
                slave) st="link $(topo_repl "$port" master_link_status)" ;;
                "") st="not answering" ;;
                *) st="role $st, not yet reconfigured" ;;
                esac
                reps+=${reps:+, }"$HOST:$port ($st)"
        done
        say "sentinel: master '$SENT_MASTER' $HOST:$master ($(topo_good_replicas "$master") good replica(s)), replicas $reps; Sentinels $HOST:$SENT_PORT0-$((SENT_PORT0 + 2)) (quorum 2)"
}

sentinel_up() {
        local port up ours total conf replica
        total=$((TOPO_REPLICAS + 1 + 3))
        topo_ensure_pkgs
        read -r up ours < <(topo_count $(topo_ports_sentinel_data) $(topo_ports_sentinels))
        if [[ $up -gt 0 && $up -lt $total ]]; then
                sentinel_heal
                read -r up ours < <(topo_count $(topo_ports_sentinel_data) $(topo_ports_sentinels))
        fi
        if [[ $up -eq $total ]]; then
                sentinel_wait_ok 30 1 || die "sentinel: every node answers but the Sentinels do not agree on '$SENT_MASTER' with $TOPO_REPLICAS replicas"
                say "sentinel: running (master $SENT_MASTER, $ours of $total processes started by us)"
                sentinel_print_topo
                sentinel_print_url
                return 0
        fi
        prepare_dirs
        rm -rf "$SENT_DIR"
        say "sentinel: starting master $HOST:$SENT_DATA_PORT, replicas $((SENT_DATA_PORT + 1))-$((SENT_DATA_PORT + TOPO_REPLICAS)), Sentinels $SENT_PORT0-$((SENT_PORT0 + 2))"
        topo_start_node "$SENT_DATA_PORT" "$SENT_DIR/$SENT_DATA_PORT"
        for port in $(topo_ports_sentinel_data); do
                [[ $port == "$SENT_DATA_PORT" ]] && continue
                topo_start_node "$port" "$SENT_DIR/$port" --replicaof "$HOST" "$SENT_DATA_PORT"
        done
        # Both replicas linked before the Sentinels look: they learn every replica from
        # the master's INFO at once.
        for ((replica = 0; replica < 150; replica++)); do
                (($(topo_good_replicas "$SENT_DATA_PORT") >= TOPO_REPLICAS)) && break
                sleep 0.2
        done
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
sentinel down-after-milliseconds $SENT_MASTER $SENT_DOWN_AFTER_MS
sentinel failover-timeout $SENT_MASTER $SENT_FAILOVER_TIMEOUT_MS
sentinel parallel-syncs $SENT_MASTER 1
EOF
                sentinel_start_one "$port"
        done
        sentinel_wait_ok 60 "$TOPO_REPLICAS" ||
                die "sentinel: the Sentinels did not agree on '$SENT_MASTER' with $TOPO_REPLICAS good replicas within 60 s"
        say "sentinel: ready (a master, $TOPO_REPLICAS replicas, 3 Sentinels)"
        sentinel_print_topo
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

# One status line per node of topology $1: NAME ADDR STATE pid started_by_us ROLE (a node
# that does not answer is listed when this stack created it: 'up' restarts it).
topo_status() {
        local kind=$1 port pid ours state role dir=$SENT_DIR
        local ports
        if [[ $kind == cluster ]]; then ports=$(topo_ports_cluster); dir=$CLUSTER_DIR; else ports="$(topo_ports_sentinel_data) $(topo_ports_sentinels)"; fi
        for port in $ports; do
                pid=$(topo_our_pid "$port"); ours=no; [[ -n $pid ]] && ours=yes
                if topo_ping "$port"; then
                        state=up
                        role=$(topo_cli "$port" role 2>/dev/null | head -n1)
                else
                        state=down; role=
                fi
                [[ $state == down && $ours == no && ! -d $dir/$port ]] && continue
                printf '%-8s %-16s %-6s pid=%-8s started_by_us=%-3s role=%s\n' "$kind" "$HOST:$port" "$state" \
                        "${pid:--}" "$ours" "${role:--}"
        done
}
