# scripts/demo/outage.sh: the Redis outage of `scripts/demo.sh --kill-redis` (DESIGN.md
# 12), sourced by run.sh (which defines say, warn, die, sql, free_port, phase, RUN, DB,
# REDIS_*, HOT_STOCK). The shared Redis serves other users and is never touched: the
# outage is staged on a redis-server of the demo's own, on a spare port, without
# persistence, so that a restart brings it back empty (as tests/faults/0300 does).
#
#   outage_redis_start  start the private Redis; REDIS_* and DEMO_REDIS_* point at it
#   outage_env          the breaker and delivery timeout shortened so that the outage
#                       (breaker -> draining -> db -> Redis back -> rebuilding -> redis)
#                       fits in the sale (exported for every binary started afterwards)
#   outage_step         one step, called by the sale loop about ten times a second:
#                       armed: kill -9 the Redis once OUTAGE_KILL_AT purchases are logged;
#                       down: watch the switch rows, restart Redis (empty) once the hot
#                       voucher has been in state db for OUTAGE_DOWN_S seconds;
#                       back: watch until every voucher is in state redis again
#   outage_finish       after the sale: step until the outage is over (or 120 s)
#   outage_redis_stop   stop the private Redis (cleanup)
#
# Written for report.py (outage.py): $RUN/outage.txt ("name value" lines: redis_port,
# kill_at, kill_ms, accepted_at_kill, back_ms, over_ms, wall ms) and
# $RUN/outage-states.tsv (a line per state change of a voucher's switch row:
# seen_ms scope state epoch since_ms).

OUTAGE_PHASE=off          # off | armed | down | back | over
OUTAGE_REDIS_PID=
OUTAGE_REDIS_PORT=
OUTAGE_DOWN_S=${OUTAGE_DOWN_S:-5}
OUTAGE_MAX_DOWN_S=60      # Redis comes back after this long even if no voucher reached db
OUTAGE_KILL_AT=1
OUTAGE_KILL_MS=0
OUTAGE_DB_MS=0            # when the hot voucher was first seen in state db (wall ms)
OUTAGE_NEXT_POLL=0
OUTAGE_HOT=               # the hot voucher's id (run.sh sets it once created)
OUTAGE_HOT_STATE=
OUTAGE_ALL_REDIS=0
declare -A OUTAGE_SEEN=()

outage_now() { date +%s%3N; }
outage_mark() { echo "$1 $2" >> "$RUN/outage.txt"; }

# redis-server on OUTAGE_REDIS_PORT, in its own session (a Ctrl-C reaches run.sh only),
# no persistence; 0 once it answers PING.
outage_redis_run() {
        setsid redis-server --port "$OUTAGE_REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
                --maxmemory-policy noeviction --dir "$RUN/redis" --daemonize no \
                --logfile "$RUN/redis.log" > /dev/null 2>&1 9>&- &
        OUTAGE_REDIS_PID=$!
        for _ in $(seq 1 100); do
                [[ $(redis-cli -h 127.0.0.1 -p "$OUTAGE_REDIS_PORT" ping 2>/dev/null) == PONG ]] && return 0
                sleep 0.1
        done
        return 1
}

outage_redis_start() {
        command -v redis-server >/dev/null 2>&1 || die "--kill-redis needs redis-server (Debian: redis-server)"
        mkdir -p "$RUN/redis"
        : > "$RUN/outage.txt"
        : > "$RUN/outage-states.tsv"
        OUTAGE_REDIS_PORT=$(free_port)
        outage_redis_run || die "the private redis-server on port $OUTAGE_REDIS_PORT did not start (log: $RUN/redis.log)"
        REDIS_HOST=127.0.0.1 REDIS_PORT=$OUTAGE_REDIS_PORT REDIS_DB=0
        REDIS_URL=redis://127.0.0.1:$OUTAGE_REDIS_PORT/0
        unset REDISCLI_AUTH
        export DEMO_REDIS_HOST=$REDIS_HOST DEMO_REDIS_PORT=$REDIS_PORT DEMO_REDIS_DB=$REDIS_DB
        # the kill comes once a fifth of the hot voucher's units are taken: stock is left
        # for the DB-only path to sell
        OUTAGE_KILL_AT=$(( HOT_STOCK / 5 > 0 ? HOT_STOCK / 5 : 1 ))
        outage_mark redis_port "$OUTAGE_REDIS_PORT"
        outage_mark kill_at "$OUTAGE_KILL_AT"
        outage_mark down_s "$OUTAGE_DOWN_S"
        OUTAGE_PHASE=armed
        say "--kill-redis: a private redis-server (pid $OUTAGE_REDIS_PID, 127.0.0.1:$OUTAGE_REDIS_PORT, no persistence) for this run; the shared Redis is left alone"
}

# The front's breaker (DESIGN.md 2, 12) opens after 3 failures, stays open 1 s and trusts
# Redis again after 1.5 s healthy; a 3 s delivery timeout makes draining -> db possible
# 2 x 3 + 1 + 1 = 8 s after the breaker opened (the production 5 s would make it 12 s).
outage_env() {
        export SECKILL_BREAKER_FAILURES=3 SECKILL_BREAKER_OPEN_MS=1000 SECKILL_BREAKER_HEALTHY_MS=1500
        export SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=3000
}

# The switch rows (DESIGN.md 12): log every change; OUTAGE_HOT_STATE = the hot voucher's
# state, OUTAGE_ALL_REDIS = 1 iff every voucher's row is in state redis.
outage_poll() {
        local now=$1 scope state epoch since
        OUTAGE_ALL_REDIS=1
        while read -r scope state epoch since; do
                [[ -n $scope ]] || continue
                # (if, not &&: under set -e a false test ending a block ends run.sh)
                if [[ $state != redis ]]; then OUTAGE_ALL_REDIS=0; fi
                if [[ $scope == "$OUTAGE_HOT" ]]; then OUTAGE_HOT_STATE=$state; fi
                if [[ ${OUTAGE_SEEN[$scope]:-} != "$state $epoch" ]]; then
                        OUTAGE_SEEN[$scope]="$state $epoch"
                        printf '%s %s %s %s %s\n' "$now" "$scope" "$state" "$epoch" "$since" >> "$RUN/outage-states.tsv"
                        if [[ $scope == "$OUTAGE_HOT" ]]; then
                                say "outage: hot voucher now in state $state (epoch $epoch)"
                        fi
                fi
        done < <(sql -e "SET time_zone = '+00:00';
                SELECT scope, state, epoch, CAST(ROUND(UNIX_TIMESTAMP(since) * 1000) AS SIGNED)
                FROM \`$DB\`.tb_seckill_switch WHERE scope <> 0 ORDER BY scope" 2>/dev/null || true)
        return 0
}

outage_step() {
        local now n
        case $OUTAGE_PHASE in off|over) return 0 ;; esac
        now=$(outage_now)
        if [[ $OUTAGE_PHASE == armed ]]; then
                n=$( { cat "$RUN"/sale/accepted-*.tsv 2>/dev/null || true; } | wc -l)
                (( n >= OUTAGE_KILL_AT )) || return 0
                kill -KILL "$OUTAGE_REDIS_PID" 2>/dev/null || true
                wait "$OUTAGE_REDIS_PID" 2>/dev/null || true
                OUTAGE_REDIS_PID=
                OUTAGE_KILL_MS=$now
                outage_mark kill_ms "$now"
                outage_mark accepted_at_kill "$n"
                phase redis_killed
                say "outage: kill -9 of the demo's Redis after $n accepted purchases; it stays down until the hot voucher has sold ${OUTAGE_DOWN_S}s on the DB-only path"
                OUTAGE_PHASE=down
                return 0
        fi
        (( now >= OUTAGE_NEXT_POLL )) || return 0
        OUTAGE_NEXT_POLL=$((now + 200))
        outage_poll "$now"
        if [[ $OUTAGE_PHASE == down ]]; then
                if [[ $OUTAGE_HOT_STATE == db ]] && (( OUTAGE_DB_MS == 0 )); then OUTAGE_DB_MS=$now; fi
                if (( (OUTAGE_DB_MS > 0 && now - OUTAGE_DB_MS >= OUTAGE_DOWN_S * 1000) ||
                      now - OUTAGE_KILL_MS >= OUTAGE_MAX_DOWN_S * 1000 )); then
                        outage_redis_run || warn "the private redis-server did not come back (log: $RUN/redis.log)"
                        outage_mark back_ms "$(outage_now)"
                        phase redis_back
                        say "outage: Redis restarted empty (pid $OUTAGE_REDIS_PID, $(redis-cli -p "$OUTAGE_REDIS_PORT" dbsize) keys); the fronts rebuild it from the DB"
                        OUTAGE_PHASE=back
                fi
        elif (( OUTAGE_ALL_REDIS == 1 )); then
                outage_mark over_ms "$now"
                phase outage_over
                say "outage: over, every voucher back in state redis"
                OUTAGE_PHASE=over
        fi
}

outage_finish() {
        local t0=$SECONDS
        if [[ $OUTAGE_PHASE == off ]]; then return 0; fi
        # the sale ended before enough purchases for the kill: kill now, without a sale
        OUTAGE_KILL_AT=0
        while [[ $OUTAGE_PHASE != over ]]; do
                outage_step
                if (( SECONDS - t0 >= 120 )); then
                        warn "outage: still in phase $OUTAGE_PHASE after 120 s (hot voucher: ${OUTAGE_HOT_STATE:-?})"
                        break
                fi
                sleep 0.1
        done
}

outage_redis_stop() {
        if [[ -z $OUTAGE_REDIS_PID ]]; then return 0; fi
        kill -TERM "$OUTAGE_REDIS_PID" 2>/dev/null || true
        wait "$OUTAGE_REDIS_PID" 2>/dev/null || true
        OUTAGE_REDIS_PID=
}
