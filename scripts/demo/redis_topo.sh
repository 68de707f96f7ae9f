# scripts/demo/redis_topo.sh: the demo's own Redis calls on any topology (DESIGN.md 4b,
# 10), sourced by run.sh (which defines say, die, REPO, RUN, REDIS_*, RCLI_OPTS and
# STARTED_SERVICES before calling them):
#   rcli ARGS...         redis-cli on the run's Redis (following MOVED on a Cluster)
#   redis_masters        every master as host:port
#   rcli_scan PATTERN    the keys matching PATTERN on every master
#   redis_cmdstats FILE  EVALSHA calls per master
#   topo_up              start (or reuse) the Cluster / Sentinel topology

rcli() { redis-cli "${RCLI_OPTS[@]}" -h "$REDIS_HOST" -p "$REDIS_PORT" -n "$REDIS_DB" "$@"; }
# Every master as host:port (one line each): a Cluster's from CLUSTER NODES.
redis_masters() {
        if [[ $REDIS_TOPO == cluster ]]; then
                redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" cluster nodes |
                        awk '$3 ~ /master/ && $3 !~ /fail/ && $8 == "connected" {sub(/@.*/, "", $2); print $2}' | sort
        else
                echo "$REDIS_HOST:$REDIS_PORT"
        fi
}
# rcli_scan PATTERN: the keys matching PATTERN on every master.
rcli_scan() {
        local m
        for m in $(redis_masters); do
                redis-cli -h "${m%:*}" -p "${m##*:}" -n "$REDIS_DB" --scan --pattern "$1"
        done
}
# cmdstat_evalsha calls of every master, "host:port calls" a line, into $1.
redis_cmdstats() {
        local m
        for m in $(redis_masters); do
                echo "$m $(redis-cli -h "${m%:*}" -p "${m##*:}" info commandstats | tr -d '\r' |
                        sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2/p' | head -n 1)"
        done > "$1"
}
# topo_up: start (or reuse) the Cluster / Sentinel topology; a Sentinel master's address.
topo_up() {
        local addr
        [[ $REDIS_TOPO == standalone ]] && return 0
        # (status exits 1 when any service is down: only the topology's lines matter here)
        if ! { "$REPO/scripts/stack.sh" status 2>/dev/null || true; } |
                awk -v s="$REDIS_TOPO" '$1 ~ "^"s && $3 == "up" {f = 1} END {exit !f}'; then
                STARTED_SERVICES+=("$REDIS_TOPO")
        fi
        say "stack: scripts/stack.sh up $REDIS_TOPO"
        "$REPO/scripts/stack.sh" up "$REDIS_TOPO" >> "$RUN/stack.log" 2>&1 9>&- ||
                die "scripts/stack.sh up $REDIS_TOPO failed (log: $RUN/stack.log)"
        if [[ $REDIS_TOPO == sentinel ]]; then
                addr=$(redis-cli -p 26390 sentinel get-master-addr-by-name seckill | paste -sd:)
                [[ $addr =~ ^[^:]+:[0-9]+$ ]] || die "the Sentinels name no master for 'seckill'"
                REDIS_HOST=${addr%:*} REDIS_PORT=${addr##*:}
        fi
        export DEMO_REDIS_HOST=$REDIS_HOST DEMO_REDIS_PORT=$REDIS_PORT DEMO_REDIS_DB=$REDIS_DB
        say "redis: $REDIS_TOPO ($REDIS_URL), masters $(redis_masters | paste -sd' ')"
}
