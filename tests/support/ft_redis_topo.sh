#!/usr/bin/env bash
# tests/support/ft_redis_topo.sh: private replicated Redis topologies for the fault suite
# (DESIGN.md 4b, 8 "failover to a lagging replica", "Cluster MOVED/ASK...", 10: a fault
# case never disturbs the shared Cluster on 7000-7008 nor the shared Sentinel group on
# 6390-6392/26390-26392). Sourced after ft.sh and ft_init:
#   ft_sentinel_start              a master, one replica (FT_TOPO_REPLICAS: more) and three
#                                  Sentinels (quorum 2)
#                                  watching master "fts"; SECKILL_REDIS_URL is the
#                                  redis-sentinel:// URL of the three Sentinels
#   ft_sentinel_master             "HOST PORT" of the master the Sentinels name now
#   ft_sentinel_wait_master PORT S wait up to S s until the Sentinels name PORT master
#   ft_sentinel_failover S         SENTINEL FAILOVER, retried while NOGOODSLAVE (S s)
#   ft_cluster_start               a Cluster of 3 masters + 3 replicas; SECKILL_REDIS_URL
#                                  is the redis-cluster:// URL of its six nodes
#   ft_cluster_master_of KEY       the port of the master serving KEY's slot now
#   ft_cluster_replica_of PORT     the port of a replica of master PORT
#   ft_cluster_wait_ok S           wait until every live node says cluster_state:ok and
#                                  every master has a good replica (min-replicas-to-write)
#   ft_topo_kill PORT / ft_topo_stop PORT / ft_topo_cont PORT / ft_topo_restart PORT
#                                  SIGKILL / SIGSTOP / SIGCONT / start again (same port,
#                                  same dir: a Cluster node keeps its nodes.conf, no data)
#   ft_rcli                        (redefined) redis-cli against the topology: `-c` on
#                                  the Cluster, the Sentinels' current master otherwise
#
# Nodes: Debian's redis-server, `--daemonize no` children of the case's shell, no
# persistence, noeviction, min-replicas-to-write 1 and min-replicas-max-lag 10 like the
# shared stack (scripts/stack/redis_topo.sh), so /readyz and NOREPLICAS behave as there.
# Replication authenticates as ACL user "repl" (masteruser/masterauth on every data
# node), so a case can cut a replica off its master (ft_topo_cut_replication) while both
# keep running: the replica then lags, and a failover to it loses what the master
# acknowledged since. Ports: distinct free loopback ports below the kernel's ephemeral
# range (Cluster bus ports chosen the same way, `cluster-port`), never the shared
# topologies' nor the shared servers'; a boot whose node does not answer starts again on
# new ports, at most three times. Every process is SIGKILLed by ft_cleanup (a
# FT_CLEANUP_HOOKS entry) and by a watchdog if the case's shell dies without its EXIT
# trap. Every wait is bounded.
#
# What it deliberately does not do: touch the shared Redis, Cluster or Sentinel group, or
# judge speed.

FT_TOPO=                   # sentinel | cluster while a private topology is up
FT_TOPO_DIR=
FT_TOPO_WATCHDOG=
FT_TOPO_MASTER=fts         # the Sentinels' master name
FT_TOPO_REPL_PASS=ftrepl
# Sentinel down-after-milliseconds: a replica whose master link has been down longer than
# ten times this is never promoted (NOGOODSLAVE); 5 s leaves a busy case 50 s from the cut
# of ft_topo_cut_replication to its failover.
FT_TOPO_DOWN_AFTER_MS=${FT_TOPO_DOWN_AFTER_MS:-5000}
FT_TOPO_PORTS=()           # data node ports (sentinel: master, replica; cluster: 6 nodes)
FT_TOPO_SENTINELS=()       # Sentinel ports
declare -A FT_TOPO_PID=()  # port -> pid
declare -A FT_TOPO_ARGS=() # port -> extra redis-server arguments (for a restart)

# Redefined: the topology's node for the case's keys (ft.sh's ft_check, ft_cleanup).
ft_rcli() {
        local hp
        case $FT_TOPO in
        cluster) redis-cli -c -h 127.0.0.1 -p "${FT_TOPO_PORTS[0]}" "$@" ;;
        sentinel)
                hp=$(ft_sentinel_master)
                redis-cli -h "${hp% *}" -p "${hp#* }" "$@"
                ;;
        *) redis-cli -h "$FT_REDIS_HOST" -p "$FT_REDIS_PORT" "$@" ;;
        esac
}
ft_topo_cli() { local p=$1; shift; timeout 10 redis-cli -h 127.0.0.1 -p "$p" "$@"; }
ft_topo_ping() { [[ $(ft_topo_cli "$1" ping 2>/dev/null) == PONG ]]; }

# ft_topo_ports N: N free ports below the ephemeral range, none of the shared ones (ft.sh).
ft_topo_ports() { ft_low_ports "$1"; }

# ft_topo_node PORT ARGS...: start one data node (remembering ARGS for a restart).
ft_topo_node() {
        local port=$1
        shift
        FT_TOPO_ARGS[$port]="$*"
        mkdir -p "$FT_TOPO_DIR/$port"
        # shellcheck disable=SC2068
        (cd "$FT_TOPO_DIR/$port" && exec redis-server --daemonize no --bind 127.0.0.1 --port "$port" \
                --save "" --appendonly no --maxmemory-policy noeviction \
                --min-replicas-to-write 1 --min-replicas-max-lag 10 --repl-diskless-sync-delay 0 \
                --masteruser repl --masterauth "$FT_TOPO_REPL_PASS" \
                --dir "$FT_TOPO_DIR/$port" --logfile "$FT_TOPO_DIR/redis-$port.log" $@) \
                >/dev/null 2>&1 &
        FT_TOPO_PID[$port]=$!
        echo "${FT_TOPO_PID[$port]}" >"$FT_TOPO_DIR/$port/pid"
}
# ft_topo_wait_ping PORT...: 0 iff every port answers PING within 10 s.
ft_topo_wait_ping() {
        local port i
        for port in "$@"; do
                for ((i = 0; i < 50; i++)); do
                        ft_topo_ping "$port" && break
                        sleep 0.2
                done
                ft_topo_ping "$port" || { ft_log "redis node $port not answering"; return 1; }
        done
}
# Every data node: the ACL user replication logs in with.
ft_topo_acl() {
        local port
        for port in "$@"; do
                ft_topo_cli "$port" acl setuser repl on ">$FT_TOPO_REPL_PASS" '+@all' '~*' '&*' >/dev/null || return 1
        done
}

ft_topo_kill_all() {
        local port
        for port in "${!FT_TOPO_PID[@]}"; do
                kill -CONT "${FT_TOPO_PID[$port]}" 2>/dev/null
                kill -KILL "${FT_TOPO_PID[$port]}" 2>/dev/null
                wait "${FT_TOPO_PID[$port]}" 2>/dev/null
        done
        FT_TOPO_PID=()
}
ft_topo_cleanup() {
        [[ -n $FT_TOPO_WATCHDOG ]] && kill -KILL "$FT_TOPO_WATCHDOG" 2>/dev/null
        ft_topo_kill_all
        FT_TOPO=
        # Keep the nodes' logs with the case's (kept on failure).
        [[ -n $FT_TOPO_DIR ]] && cp "$FT_TOPO_DIR"/redis-*.log "$FT_WORK"/ 2>/dev/null
}
ft_topo_init() {
        FT_TOPO_DIR=$FT_WORK/topo
        mkdir -p "$FT_TOPO_DIR"
        FT_CLEANUP_HOOKS+=(ft_topo_cleanup)
        (
                trap '' TERM INT
                while kill -0 $$ 2>/dev/null; do sleep 2; done
                for f in "$FT_TOPO_DIR"/*/pid; do kill -KILL "$(cat "$f")" 2>/dev/null; done
        ) >/dev/null 2>&1 &
        FT_TOPO_WATCHDOG=$!
        disown "$FT_TOPO_WATCHDOG"
}

ft_topo_kill() {
        kill -KILL "${FT_TOPO_PID[$1]}" 2>/dev/null
        wait "${FT_TOPO_PID[$1]}" 2>/dev/null
        ft_log "redis node $1 (pid ${FT_TOPO_PID[$1]}) SIGKILLed"
        unset "FT_TOPO_PID[$1]"
}
ft_topo_stop() { kill -STOP "${FT_TOPO_PID[$1]}"; ft_log "redis node $1 frozen (SIGSTOP)"; }
ft_topo_cont() { kill -CONT "${FT_TOPO_PID[$1]}"; ft_log "redis node $1 resumed (SIGCONT)"; }
ft_topo_restart() {
        local port=$1
        # shellcheck disable=SC2086
        ft_topo_node "$port" ${FT_TOPO_ARGS[$port]}
        ft_topo_wait_ping "$port" || ft_die "redis node $port did not come back"
        ft_topo_acl "$port" || ft_die "redis node $port: acl setuser repl failed"
        ft_log "redis node $port restarted empty (pid ${FT_TOPO_PID[$port]})"
}
# ft_topo_cut_replication MASTER: the master refuses its replicas from now on (ACL user
# repl off, replica connections killed); both keep running, the replicas lag.
ft_topo_cut_replication() {
        ft_topo_cli "$1" acl setuser repl off >/dev/null &&
                ft_topo_cli "$1" client kill type replica >/dev/null
}

# --- Sentinel ---------------------------------------------------------------------------
ft_sentinel_boot() {
        local ports m r port conf i nrep=${FT_TOPO_REPLICAS:-1}
        read -r -a ports < <(ft_topo_ports $((4 + nrep)))
        m=${ports[0]} r=${ports[1]}
        FT_TOPO_PORTS=("$m" "$r" "${ports[@]:5}")
        FT_TOPO_SENTINELS=("${ports[@]:2:3}")
        ft_topo_node "$m"
        for port in "${FT_TOPO_PORTS[@]:1}"; do
                ft_topo_node "$port" --replicaof 127.0.0.1 "$m"
        done
        ft_topo_wait_ping "${FT_TOPO_PORTS[@]}" && ft_topo_acl "${FT_TOPO_PORTS[@]}" || return 1
        for port in "${FT_TOPO_SENTINELS[@]}"; do
                mkdir -p "$FT_TOPO_DIR/$port"
                conf=$FT_TOPO_DIR/$port/sentinel.conf
                cat >"$conf" <<EOF
bind 127.0.0.1
port $port
daemonize no
logfile $FT_TOPO_DIR/redis-$port.log
dir $FT_TOPO_DIR/$port
sentinel monitor $FT_TOPO_MASTER 127.0.0.1 $m 2
sentinel down-after-milliseconds $FT_TOPO_MASTER $FT_TOPO_DOWN_AFTER_MS
sentinel failover-timeout $FT_TOPO_MASTER 10000
sentinel parallel-syncs $FT_TOPO_MASTER 1
EOF
                redis-server "$conf" --sentinel >/dev/null 2>&1 &
                FT_TOPO_PID[$port]=$!
                echo "$!" >"$FT_TOPO_DIR/$port/pid"
        done
        ft_topo_wait_ping "${FT_TOPO_SENTINELS[@]}" || return 1
        # Every Sentinel knows the master, its replica and the two others; the master
        # accepts writes (a good replica).
        for ((i = 0; i < 150; i++)); do
                local ok=1
                for port in "${FT_TOPO_SENTINELS[@]}"; do
                        ft_topo_cli "$port" info sentinel 2>/dev/null | tr -d '\r' |
                                grep -q "^master0:name=$FT_TOPO_MASTER,status=ok.*slaves=$nrep,sentinels=3" || { ok=0; break; }
                done
                ((ok)) && ft_topo_good_replica "$m" && return 0
                sleep 0.2
        done
        ft_log "sentinel: the Sentinels did not agree within 30 s"
        return 1
}
ft_topo_good_replica() {
        [[ $(ft_topo_cli "$1" info replication 2>/dev/null | tr -d '\r' |
                sed -n 's/^min_slaves_good_slaves://p') -ge 1 ]]
}
ft_sentinel_start() {
        local seeds= p
        ft_topo_boot sentinel
        for p in "${FT_TOPO_SENTINELS[@]}"; do seeds+=${seeds:+,}127.0.0.1:$p; done
        export SECKILL_REDIS_URL="redis-sentinel://$seeds/$FT_TOPO_MASTER"
        ft_log "private Sentinel group: master ${FT_TOPO_PORTS[0]}, replica ${FT_TOPO_PORTS[1]}, Sentinels ${FT_TOPO_SENTINELS[*]}; $SECKILL_REDIS_URL"
}
# ft_topo_boot sentinel|cluster: ft_KIND_boot, at most three attempts on new ports.
ft_topo_boot() {
        local attempt
        ft_topo_init
        for attempt in 1 2 3; do
                "ft_${1}_boot" && break
                ft_topo_kill_all
                rm -rf "${FT_TOPO_DIR:?}"/[0-9]*
                ((attempt < 3)) || ft_die "$1: did not start in 3 attempts (logs in $FT_TOPO_DIR)"
        done
        FT_TOPO=$1
}
# ft_sentinel_failover S: SENTINEL FAILOVER, repeated (1 s apart, up to S s) while the
# Sentinels answer NOGOODSLAVE (a replica's INFO older than 5 s counts as not good; they
# refresh it every 10 s). 0 iff one was accepted.
ft_sentinel_failover() {
        local t0=$SECONDS out
        while ((SECONDS - t0 < $1)); do
                out=$(ft_topo_cli "${FT_TOPO_SENTINELS[0]}" sentinel failover "$FT_TOPO_MASTER" 2>&1)
                [[ $out == OK ]] && { ft_log "SENTINEL FAILOVER: OK ($((SECONDS - t0))s)"; return 0; }
                ft_log "SENTINEL FAILOVER: $out"
                sleep 1
        done
        return 1
}
# "HOST PORT" of the master, asked of the first Sentinel that answers.
ft_sentinel_master() {
        local p out
        for p in "${FT_TOPO_SENTINELS[@]}"; do
                out=$(timeout 5 redis-cli -h 127.0.0.1 -p "$p" sentinel get-master-addr-by-name "$FT_TOPO_MASTER" 2>/dev/null | paste -sd' ')
                [[ $out =~ ^[0-9.]+\ [0-9]+$ ]] && { echo "$out"; return 0; }
        done
        echo "127.0.0.1 0"
        return 1
}
# ft_sentinel_wait_master PORT S: every Sentinel names PORT the master, and PORT says
# ROLE master, within S s.
ft_sentinel_wait_master() {
        local want=$1 wait_s=$2 t0=$SECONDS p ok
        while ((SECONDS - t0 < wait_s)); do
                ok=1
                for p in "${FT_TOPO_SENTINELS[@]}"; do
                        [[ $(ft_topo_cli "$p" sentinel get-master-addr-by-name "$FT_TOPO_MASTER" 2>/dev/null | sed -n 2p) == "$want" ]] ||
                                { ok=0; break; }
                done
                ((ok)) && [[ $(ft_topo_cli "$want" role 2>/dev/null | head -n 1) == master ]] && return 0
                sleep 0.2
        done
        return 1
}

# --- Cluster ----------------------------------------------------------------------------
ft_cluster_boot() {
        local ports port i nodes=()
        read -r -a ports < <(ft_topo_ports 12)
        FT_TOPO_PORTS=("${ports[@]:0:6}")
        for i in 0 1 2 3 4 5; do
                port=${ports[$i]}
                ft_topo_node "$port" --cluster-enabled yes --cluster-config-file "nodes-$port.conf" \
                        --cluster-node-timeout 3000 --cluster-port "${ports[$((i + 6))]}"
                nodes+=("127.0.0.1:$port")
        done
        ft_topo_wait_ping "${FT_TOPO_PORTS[@]}" && ft_topo_acl "${FT_TOPO_PORTS[@]}" || return 1
        timeout 60 redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes \
                >"$FT_TOPO_DIR/create.log" 2>&1 || { ft_log "cluster create: $(tail -n 3 "$FT_TOPO_DIR/create.log")"; return 1; }
        ft_cluster_wait_ok 60 || { ft_log "cluster: not ok 60 s after create"; return 1; }
}
ft_cluster_start() {
        local seeds= p
        ft_topo_boot cluster
        for p in "${FT_TOPO_PORTS[@]}"; do seeds+=${seeds:+,}127.0.0.1:$p; done
        export SECKILL_REDIS_URL="redis-cluster://$seeds"
        ft_log "private Cluster (3 masters + 3 replicas) on ${FT_TOPO_PORTS[*]}; $SECKILL_REDIS_URL"
}
# ft_cluster_wait_ok S: every live node says cluster_state:ok, every master has a good
# replica, every slot is served, within S s.
ft_cluster_wait_ok() {
        local wait_s=$1 t0=$SECONDS port ok
        while ((SECONDS - t0 < wait_s)); do
                ok=1
                for port in "${!FT_TOPO_PID[@]}"; do
                        [[ " ${FT_TOPO_PORTS[*]} " == *" $port "* ]] || continue
                        ft_topo_cli "$port" cluster info 2>/dev/null | tr -d '\r' | grep -q '^cluster_state:ok' || { ok=0; break; }
                        if [[ $(ft_topo_cli "$port" role 2>/dev/null | head -n 1) == master ]]; then
                                ft_topo_good_replica "$port" || { ok=0; break; }
                        fi
                done
                ((ok)) && return 0
                sleep 0.3
        done
        return 1
}
# ft_cluster_master_of KEY: port of the master serving KEY's slot (asked of a live node).
ft_cluster_master_of() {
        local port slot
        for port in "${!FT_TOPO_PID[@]}"; do
                [[ " ${FT_TOPO_PORTS[*]} " == *" $port "* ]] || continue
                slot=$(ft_topo_cli "$port" cluster keyslot "$1" 2>/dev/null) || continue
                # CLUSTER NODES: "id ip:port@bus flags master ... slot ranges"; a failed
                # master keeps no slots once its replica took them over.
                ft_topo_cli "$port" cluster nodes 2>/dev/null | tr -d '\r' | awk -v s="$slot" '
                        $3 ~ /master/ && $3 !~ /fail/ {
                                for (i = 9; i <= NF; i++) {
                                        n = split($i, r, "-"); lo = r[1] + 0; hi = (n == 2 ? r[2] : r[1]) + 0
                                        if ($i !~ /^\[/ && lo <= s && s <= hi) { split($2, a, "[:@]"); print a[2]; f = 1; exit }
                                }
                        }
                        END { exit !f }' && return 0
        done
        return 1
}
# ft_cluster_replica_of PORT: a replica of master PORT.
ft_cluster_replica_of() {
        ft_topo_cli "$1" role 2>/dev/null | sed -n '3,$p' | awk 'NR % 3 == 2' | head -n 1
}
