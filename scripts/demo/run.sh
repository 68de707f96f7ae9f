#!/usr/bin/env bash
# scripts/demo/run.sh: the flash sale end to end (scripts/demo.sh runs this).
#
# Installs what is missing (Debian packages), builds, brings the stack up
# (scripts/stack.sh), migrates a database of its own (dropped and recreated each run),
# creates and preheats vouchers, starts seckill-consumer (2 workers) and seckill-front
# in the background, sends one warm-up purchase through the whole pipeline, drives the
# sale with wrk + scripts/demo/sale.lua, shows the drain,
# runs seckill-reconciler --repair once and seckill-admin verify per voucher, checks
# every logged 202 against the outcome table and writes the report
# (scripts/demo/report.py): out/report.json and out/latency.png.
# --kill-redis (outage.sh): the sale on a private redis-server, killed (-9) mid-sale and
# restarted empty; the report's outage section (outage.py) follows the DB-only path.
# --db galera [--kill-db] (dbkill.sh): the book of record on the local three-node Galera
# cluster; with --kill-db its writer node is SIGKILLed mid-sale and restarted, and the
# report's database section (dbkill.py) shows the switch-over. Options: options.sh.
#
# Isolation: database $DB (default seckill_demo) plus $DB_client for the client's
# record, Redis prefix, Kafka topic and group unique per run (skdemo_<stamp>), free
# ports for HTTP and metrics: it never collides with the tests or with another stack
# user. The previous run's Redis keys are deleted when the next run starts.
#
# What it deliberately does not do: tune the machine, or stop a service it did not
# start (the stack is stopped only if this run started it, and only those services).
#
# Exit status: 0 every invariant PASS; 1 an invariant FAILED; 3 setup failed
# (install, build, stack, services; or any step that failed: it is named); 2 bad usage.
# No step fails silently: die says what failed, and a command that fails anywhere else
# (set -e, in a function of a sourced file too: set -E) is named by the ERR trap below
# with its file, line and function before the run exits 3.
set -Eeuo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEMO_DIR=$REPO/scripts/demo
# shellcheck source=payments.sh
. "$DEMO_DIR/payments.sh"
# shellcheck source=outage.sh
. "$DEMO_DIR/outage.sh"
# shellcheck source=dbkill.sh
. "$DEMO_DIR/dbkill.sh"
# shellcheck source=auth.sh
. "$DEMO_DIR/auth.sh"
# shellcheck source=../lib/apt.sh
. "$REPO/scripts/lib/apt.sh"
# shellcheck source=install.sh
. "$DEMO_DIR/install.sh"
# shellcheck source=redis_topo.sh
. "$DEMO_DIR/redis_topo.sh"

# ------------------------------------------------------------------ options
HOT_STOCK=1000
HOT_BUCKETS=4
ORD_STOCK=200
ORD_COUNT=2
BUYERS=20000
CONCURRENCY=64
DURATION_S=120
DRAIN_TIMEOUT_S=120
HOT_PCT=70
KEEP=0
REDIS_TOPO=standalone
INSTALL=1
BUILD=1
BUILD_DIR=${SK_DEMO_BUILD_DIR:-$REPO/build}
OUT=${SK_DEMO_OUT:-$REPO/out}
DB=${SK_DEMO_DB:-seckill_demo}
GRACE_S=                # the reconciler grace: set below from the delivery timeout
DRIFT=0
UNPAID_PCT=20
PAY_TIMEOUT_S=5
KILL_REDIS=0
DB_TOPO=standalone
KILL_DB=0
AUTH=jwt
PACE_MS=

# shellcheck source=options.sh
. "$DEMO_DIR/options.sh"

T0=$(date +%s)
say() { printf '[demo %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
warn() { printf '[demo %4ss] warning: %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; }
die() { printf '[demo %4ss] error: %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; exit 3; }
# set -e stops at the first failing command: say which one, where (file, line, function),
# and exit 3 like die. Only the script's own shell reports: a command substitution's
# failure is reported by the command that used it.
on_err() {
        local rc=$1 cmd=$2 src=$3 line=$4 fn=$5
        (( BASH_SUBSHELL == 0 )) || return 0
        printf '[demo %4ss] error: this step failed (exit %s): %s  [%s:%s, in %s]\n' \
                "$(( $(date +%s) - T0 ))" "$rc" "$cmd" "${src#"$REPO"/}" "$line" "$fn" >&2
        exit 3
}
trap 'on_err "$?" "$BASH_COMMAND" "${BASH_SOURCE[0]:-run.sh}" "$LINENO" "${FUNCNAME[0]:-main}"' ERR

# ------------------------------------------------------------------ endpoints
# SECKILL_* from the environment win; else the stack's own (scripts/stack.sh env, which
# follows SECKILL_STACK_*_PORT); else DESIGN.md 2's defaults.
if [[ -x $REPO/scripts/stack.sh ]]; then
        while IFS= read -r line; do
                [[ $line =~ ^export\ (SECKILL_REDIS_URL|SECKILL_MYSQL_URL|SECKILL_KAFKA_BROKERS)=([^\ \'\"]+)$ ]] || continue
                [[ -n ${!BASH_REMATCH[1]:-} ]] || printf -v "${BASH_REMATCH[1]}" '%s' "${BASH_REMATCH[2]}"
        done < <("$REPO/scripts/stack.sh" env 2>/dev/null || true)
fi
REDIS_URL=${SECKILL_REDIS_URL:-redis://127.0.0.1:6379/0}
MYSQL_BASE_URL=${SECKILL_MYSQL_URL:-mysql://root@127.0.0.1:3306/seckill}
BROKERS=${SECKILL_KAFKA_BROKERS:-127.0.0.1:9092}
if [[ $REDIS_URL =~ ^redis://(:([^@]*)@)?([^:/]+)(:([0-9]+))?(/([0-9]+))?$ ]]; then
        REDIS_PASS=${BASH_REMATCH[2]}
        REDIS_HOST=${BASH_REMATCH[3]}
        REDIS_PORT=${BASH_REMATCH[5]:-6379}
        REDIS_DB=${BASH_REMATCH[7]:-0}
else
        echo "demo: cannot parse SECKILL_REDIS_URL" >&2; exit 2
fi
# --db galera: the local Galera cluster's three-node URL (DESIGN.md 16), known before it runs.
[[ $DB_TOPO == galera ]] && MYSQL_BASE_URL="mysql://root@127.0.0.1:3311,127.0.0.1:3312,127.0.0.1:3313/seckill"
# One host or several (mysql://user[:pass]@h1:p1,h2:p2/db): MYSQL_HOSTS keeps them all for
# the binaries; the demo's own calls go to the first that answers (sql below).
if [[ $MYSQL_BASE_URL =~ ^mysql://([^:@]+)(:([^@]*))?@([^/?]+)(/.*)?$ ]]; then
        MYSQL_USER=${BASH_REMATCH[1]}
        MYSQL_PASS=${BASH_REMATCH[3]}
        MYSQL_HOSTS=
        for hp in ${BASH_REMATCH[4]//,/ }; do
                [[ $hp == *:* ]] || hp=$hp:3306
                MYSQL_HOSTS=${MYSQL_HOSTS:+$MYSQL_HOSTS,}$hp
        done
        hp=${MYSQL_HOSTS%%,*}
        MYSQL_HOST=${hp%:*}
        MYSQL_PORT=${hp##*:}
else
        echo "demo: cannot parse SECKILL_MYSQL_URL" >&2; exit 2
fi
MYSQL_URL="mysql://${MYSQL_USER}${MYSQL_PASS:+:$MYSQL_PASS}@${MYSQL_HOSTS}/${DB}"
CLIENT_DB=${DB}_client
KAFKA_HOST=${BROKERS%%,*}
KAFKA_PORT=${KAFKA_HOST##*:}
KAFKA_HOST=${KAFKA_HOST%:*}

export DEMO_MYSQL_HOST=$MYSQL_HOST DEMO_MYSQL_PORT=$MYSQL_PORT DEMO_MYSQL_USER=$MYSQL_USER
export DEMO_MYSQL_HOSTS=$MYSQL_HOSTS
export DEMO_REDIS_HOST=$REDIS_HOST DEMO_REDIS_PORT=$REDIS_PORT DEMO_REDIS_DB=$REDIS_DB
[[ -n $MYSQL_PASS ]] && export MYSQL_PWD=$MYSQL_PASS
[[ -n $REDIS_PASS ]] && export REDISCLI_AUTH=$REDIS_PASS
# --redis cluster|sentinel (DESIGN.md 4b, 10): the binaries get the topology's URL; the
# demo's own redis-cli calls follow MOVED (-c) on a Cluster and go to the master the
# Sentinels name (resolved once the topology is up: topo_up below).
RCLI_OPTS=()
case $REDIS_TOPO in
cluster)
        REDIS_URL="redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"
        REDIS_HOST=127.0.0.1 REDIS_PORT=7000 REDIS_DB=0 RCLI_OPTS=(-c) ;;
sentinel)
        REDIS_URL="redis-sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/seckill"
        REDIS_DB=0 ;;
esac
export DEMO_REDIS_TOPO=$REDIS_TOPO
# MariaDB 11 (Debian 13) names the client "mariadb" and drops "mysql" to a compat package.
MYSQL_CLI=$(command -v mariadb || command -v mysql || echo mysql)
export DEMO_MYSQL_CLI=$MYSQL_CLI
# The demo's own SQL: on MYSQL_HOST:PORT; when that node does not answer and the URL names
# others (--db galera with --kill-db), on the first one that does.
sql_on() { "$MYSQL_CLI" -h "$1" -P "$2" -u "$MYSQL_USER" --protocol=TCP --connect-timeout=3 -N -B "${@:3}"; }
sql() {
        local hp
        [[ $MYSQL_HOSTS == *,* ]] || { sql_on "$MYSQL_HOST" "$MYSQL_PORT" "$@"; return; }
        for hp in ${MYSQL_HOSTS//,/ }; do
                mysqladmin --no-defaults -h "${hp%:*}" -P "${hp##*:}" -u "$MYSQL_USER" --protocol=TCP \
                        --connect-timeout=2 ping >/dev/null 2>&1 || continue
                sql_on "${hp%:*}" "${hp##*:}" "$@"
                return
        done
        echo "demo: no node of $MYSQL_HOSTS answers" >&2
        return 1
}
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ------------------------------------------------------------------ state + cleanup
mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%d%H%M%S)
RUN=$OUT/demo-$STAMP
mkdir -p "$RUN/sale"
ln -sfn "demo-$STAMP" "$OUT/last"
# What the previous run on this database left (its Redis prefix; with --keep, the pids of
# its services): per database, not per output dir, since each run drops the database.
STATE=${TMPDIR:-/tmp}/seckill-demo.$MYSQL_HOST.$MYSQL_PORT.$DB.state
PREFIX=skdemo_${STAMP}_$$
TOPIC=skdemo.${STAMP}.$$
GROUP=skdemo-${STAMP}-$$
STARTED_SERVICES=()
PIDS=()
FRONT_PID=
CONSUMER_PID=
WRK_PID=
PAYER_PID=

stop_pid() {   # stop_pid PID NAME: SIGTERM, wait up to 20 s, then SIGKILL
        local pid=$1 name=$2 i
        kill -0 "$pid" 2>/dev/null || return 0
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
                sleep 0.2
        done
        warn "$name (pid $pid) did not stop in 20 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
}

cleanup() {
        local rc=$?
        trap - EXIT INT TERM
        if [[ -n $WRK_PID ]]; then
                # Interrupted mid-sale. wrk's SIGINT handler may run on a worker thread
                # while its main thread sleeps out -d: escalate rather than orphan it.
                kill -INT "$WRK_PID" 2>/dev/null || true
                for _ in $(seq 1 30); do
                        kill -0 "$WRK_PID" 2>/dev/null || break
                        sleep 0.1
                done
                kill -KILL "$WRK_PID" 2>/dev/null || true
        fi
        [[ -n $PAYER_PID ]] && { kill "$PAYER_PID" 2>/dev/null || true; }
        if [[ -n ${STACK_BG:-} ]]; then
                kill "$STACK_BG" 2>/dev/null || true
                wait "$STACK_BG" 2>/dev/null || true
        fi
        if [[ $KEEP -eq 1 ]]; then
                [[ -n $OUTAGE_REDIS_PID ]] && PIDS+=("$OUTAGE_REDIS_PID")
                {
                        echo "prefix=$PREFIX"
                        echo "pids=${PIDS[*]}"
                } > "$STATE"
                if [[ ${#PIDS[@]} -gt 0 ]]; then
                        say "--keep: front on http://$HTTP_ADDR (pid $FRONT_PID), consumer pid $CONSUMER_PID, logs in $RUN"
                        say "--keep: stop them with: kill ${PIDS[*]}"
                        say "--keep: the run's settings for seckill-admin/seckill-reconciler: source $RUN/env.sh"
                fi
                [[ ${#STARTED_SERVICES[@]} -gt 0 ]] && say "--keep: stack services started by this run left up: ${STARTED_SERVICES[*]}"
                exit "$rc"
        fi
        [[ -n $FRONT_PID ]] && stop_pid "$FRONT_PID" seckill-front
        [[ -n $CONSUMER_PID ]] && stop_pid "$CONSUMER_PID" seckill-consumer
        outage_redis_stop
        echo "prefix=$PREFIX" > "$STATE"
        if [[ ${#STARTED_SERVICES[@]} -gt 0 ]]; then
                say "stopping what this run started: ${STARTED_SERVICES[*]}"
                "$REPO/scripts/stack.sh" down "${STARTED_SERVICES[@]}" 9>&- || warn "stack.sh down failed"
        fi
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One run at a time per database: a second demo (another checkout, another terminal)
# would drop the database under the first one. The lock is fd 9, closed for every
# long-lived child (services, stack daemons) so that only this script holds it.
LOCK_FILE=${TMPDIR:-/tmp}/seckill-demo.$MYSQL_HOST.$MYSQL_PORT.$DB.lock
exec 9> "$LOCK_FILE"
if ! flock -n 9; then
        say "another demo run is using database $DB on $MYSQL_HOST:$MYSQL_PORT; waiting up to 120 s (or pass --database NAME)"
        flock -w 120 9 || die "database $DB is still in use by another demo run ($LOCK_FILE); pass --database NAME to run side by side"
fi

[[ $INSTALL -eq 1 ]] && install_missing
for tool in wrk gnuplot python3 curl redis-cli jq setsid flock; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run without --no-install)"
done

# ------------------------------------------------------------------ 2. stack (background) + build
# On a fresh machine scripts/stack.sh up installs and starts Redis, MariaDB and Kafka
# (a minute or two): it runs while we build.
# --db galera: the three nodes first (scripts/stack.sh galera up, DESIGN.md 16), so that the
# check below finds node1 up and never starts a standalone server in its place.
if [[ $DB_TOPO == galera ]]; then db_galera_up; fi
declare -A SVC_UP=()
port_open "$REDIS_HOST" "$REDIS_PORT" && SVC_UP[redis]=1
port_open "$MYSQL_HOST" "$MYSQL_PORT" && SVC_UP[mariadb]=1
port_open "$KAFKA_HOST" "$KAFKA_PORT" && SVC_UP[kafka]=1
STACK_BG=
if [[ ${#SVC_UP[@]} -eq 3 ]]; then
        say "stack: redis $REDIS_HOST:$REDIS_PORT, mariadb $MYSQL_HOST:$MYSQL_PORT, kafka $BROKERS already up (not ours: left alone)"
else
        [[ -x $REPO/scripts/stack.sh ]] || die "the stack is not up and scripts/stack.sh is missing"
        for s in redis mariadb kafka; do
                [[ -n ${SVC_UP[$s]:-} ]] || STARTED_SERVICES+=("$s")
        done
        say "stack: starting ${STARTED_SERVICES[*]} with scripts/stack.sh up in the background (log: $RUN/stack.log)"
        "$REPO/scripts/stack.sh" up > "$RUN/stack.log" 2>&1 9>&- &
        STACK_BG=$!
fi

BIN=$BUILD_DIR/bin
if [[ $BUILD -eq 1 ]]; then
        say "building in $BUILD_DIR (log: $RUN/build.log)"
        build_binaries() {
                cmake -S "$REPO" -B "$BUILD_DIR" "$@" &&
                cmake --build "$BUILD_DIR" -j"$(nproc)" --target seckill-front seckill-consumer \
                        seckill-reconciler seckill-admin sk-mint-jwt
        }
        if ! build_binaries > "$RUN/build.log" 2>&1; then
                # A demo should not stop at a compiler warning (-Werror is for CI): retry
                # once without it, and say so.
                if grep -q 'warnings being treated as errors' "$RUN/build.log" &&
                   build_binaries -DSK_WERROR=OFF >> "$RUN/build.log" 2>&1; then
                        warn "the build has warnings (-Werror): built with -DSK_WERROR=OFF; see $RUN/build.log"
                else
                        tail -n 30 "$RUN/build.log" >&2
                        die "build failed (log: $RUN/build.log)"
                fi
        fi
fi
for b in seckill-front seckill-consumer seckill-reconciler seckill-admin; do
        [[ -x $BIN/$b ]] || die "$BIN/$b is missing (build failed or --no-build without a build)"
done

# ------------------------------------------------------------------ 3. stack ready
if [[ -n $STACK_BG ]]; then
        say "waiting for scripts/stack.sh up"
        stack_rc=0
        wait "$STACK_BG" || stack_rc=$?
        STACK_BG=
        sed 's/^/    /' "$RUN/stack.log" | tail -n 15
        [[ $stack_rc -eq 0 ]] || die "scripts/stack.sh up failed (exit $stack_rc; log: $RUN/stack.log)"
fi
topo_up
rcli ping >/dev/null || die "redis at $REDIS_HOST:$REDIS_PORT does not answer"
sql -e "SELECT 1" >/dev/null || die "mariadb at $MYSQL_HOST:$MYSQL_PORT does not answer"

# ------------------------------------------------------------------ 4. fresh names
# A previous --keep run may still serve from the database we are about to drop.
if [[ -f $STATE ]]; then
        old_prefix=$(sed -n 's/^prefix=//p' "$STATE")
        old_pids=$(sed -n 's/^pids=//p' "$STATE")
        for pid in $old_pids; do
                if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'seckill-\(front\|consumer\)\|^redis-server 127\.0\.0\.1:'; then
                        say "stopping pid $pid left by the previous --keep run"
                        kill -TERM "$pid" 2>/dev/null || true
                        for _ in $(seq 1 100); do
                                kill -0 "$pid" 2>/dev/null || break
                                sleep 0.2
                        done
                        kill -KILL "$pid" 2>/dev/null || true
                fi
        done
        if [[ $old_prefix =~ ^skdemo_[0-9]+_[0-9]+$ ]]; then
                n=0
                while read -r key; do
                        [[ -n $key ]] || continue
                        rcli unlink "$key" >/dev/null
                        n=$((n + 1))
                done < <(rcli_scan "$old_prefix:*")
                say "deleted $n Redis keys of the previous run ($old_prefix)"
        fi
fi

# --kill-redis: from here on the run's Redis is a private one (outage.sh)
if (( KILL_REDIS )); then
        outage_redis_start
        outage_env
fi
# The reconciler's grace covers the front's request deadline, 2 x delivery timeout + 1 s
# (measured from the traceId's time, the request's arrival; DESIGN.md 4 v5, 14): 11 s with
# the default 5 s timeout, 7 s with --kill-redis's 3 s.
GRACE_S=$(( (2 * ${SECKILL_KAFKA_DELIVERY_TIMEOUT_MS:-5000} + 1000 + 999) / 1000 ))
export SECKILL_REDIS_URL=$REDIS_URL
export SECKILL_MYSQL_URL=$MYSQL_URL
export SECKILL_KAFKA_BROKERS=$BROKERS
export SECKILL_TOPIC=$TOPIC
export SECKILL_GROUP_ID=$GROUP
export SECKILL_REDIS_PREFIX=$PREFIX
unset SECKILL_WORKER_ID SECKILL_FAILPOINTS
HTTP_PORT=$(free_port)
METRICS_PORT=$(free_port)
while [[ $METRICS_PORT == "$HTTP_PORT" ]]; do METRICS_PORT=$(free_port); done
OPS_PORT=$(free_port)
while [[ $OPS_PORT == "$HTTP_PORT" || $OPS_PORT == "$METRICS_PORT" ]]; do OPS_PORT=$(free_port); done
HTTP_ADDR=127.0.0.1:$HTTP_PORT
OPS_ADDR=127.0.0.1:$OPS_PORT    # the front's /healthz, /readyz, /metrics (DESIGN.md 15)
export SECKILL_HTTP_ADDR=$HTTP_ADDR
export SECKILL_OPS_ADDR=$OPS_ADDR
export SECKILL_METRICS_ADDR=127.0.0.1:$METRICS_PORT
{
        for var in SECKILL_REDIS_URL SECKILL_MYSQL_URL SECKILL_KAFKA_BROKERS SECKILL_TOPIC \
                   SECKILL_GROUP_ID SECKILL_REDIS_PREFIX SECKILL_HTTP_ADDR SECKILL_OPS_ADDR \
                   SECKILL_METRICS_ADDR; do
                printf 'export %s=%q\n' "$var" "${!var}"
        done
} > "$RUN/env.sh"
say "run $STAMP: database $DB, redis prefix $PREFIX, topic $TOPIC, group $GROUP, front $HTTP_ADDR"

sql -e "DROP DATABASE IF EXISTS \`$DB\`; DROP DATABASE IF EXISTS \`$CLIENT_DB\`" \
        || die "cannot drop $DB"
# Least privilege (DESIGN.md 15, 17): the binaries never run as the database's root. One
# user per binary from `seckill-admin db grants` (admin: migrations and the admin
# commands; front, consumer, reconciler: table and column grants), with fresh random
# passwords each run; the run-time grants name tables, so they follow the migration.
# The accounts' host is 127.0.0.1 when every server is on loopback, else '%' (said so).
# The demo's own checks keep the connection it was given.
DEMO_DBU=seckill_demo_
DEMO_DBHOST=127.0.0.1
for hp in ${MYSQL_HOSTS//,/ }; do [[ ${hp%:*} == 127.0.0.1 ]] || DEMO_DBHOST=%; done
declare -A DEMO_PW=() DEMO_URL=()
ADMIN_URL=$MYSQL_URL
users_sql=
for role in admin front consumer reconciler; do
        DEMO_PW[$role]=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
        DEMO_URL[$role]=$MYSQL_URL
        users_sql+="DROP USER IF EXISTS '$DEMO_DBU$role'@'$DEMO_DBHOST';
                    CREATE USER '$DEMO_DBU$role'@'$DEMO_DBHOST' IDENTIFIED BY '${DEMO_PW[$role]}';"
done
if sql -e "$users_sql" 2>"$RUN/users.log" &&
   SECKILL_MYSQL_URL=$MYSQL_URL "$BIN/seckill-admin" db grants --host "$DEMO_DBHOST" --users admin \
        --user-prefix "$DEMO_DBU" >"$RUN/grants-admin.sql" 2>>"$RUN/users.log" &&
   sql <"$RUN/grants-admin.sql" 2>>"$RUN/users.log"; then
        ADMIN_URL="mysql://${DEMO_DBU}admin:${DEMO_PW[admin]}@${MYSQL_HOSTS}/${DB}"
else
        warn "cannot create the least-privilege users as $MYSQL_USER ($(tr '\n' ' ' <"$RUN/users.log")): the binaries use $MYSQL_USER"
fi
SECKILL_MYSQL_URL=$ADMIN_URL "$BIN/seckill-admin" db migrate > "$RUN/migrate.log" 2>&1 ||
        { cat "$RUN/migrate.log" >&2; die "db migrate failed"; }
say "migrated: $(tail -n 1 "$RUN/migrate.log")"
if [[ $ADMIN_URL != "$MYSQL_URL" ]]; then
        if SECKILL_MYSQL_URL=$MYSQL_URL "$BIN/seckill-admin" db grants --host "$DEMO_DBHOST" \
                --users front,consumer,reconciler --user-prefix "$DEMO_DBU" \
                >"$RUN/grants-run.sql" 2>>"$RUN/users.log" &&
           sql <"$RUN/grants-run.sql" 2>>"$RUN/users.log"; then
                for role in front consumer reconciler; do
                        DEMO_URL[$role]="mysql://$DEMO_DBU$role:${DEMO_PW[$role]}@${MYSQL_HOSTS}/${DB}"
                done
                say "database users (seckill-admin db grants, host '$DEMO_DBHOST'): ${DEMO_DBU}admin migrated and runs seckill-admin; ${DEMO_DBU}front, ${DEMO_DBU}consumer and ${DEMO_DBU}reconciler run their binary"
        else
                warn "cannot grant the run-time users ($(tr '\n' ' ' <"$RUN/users.log")): the binaries use $MYSQL_USER"
        fi
fi
export SECKILL_MYSQL_URL=$ADMIN_URL
sed -i "s|^export SECKILL_MYSQL_URL=.*|export SECKILL_MYSQL_URL=$(printf '%q' "$ADMIN_URL")|" "$RUN/env.sh"
{
        printf '# each binary its own database user (seckill-admin uses SECKILL_MYSQL_URL above):\n'
        for role in front consumer reconciler; do
                printf 'export DEMO_MYSQL_URL_%s=%q\n' "${role^^}" "${DEMO_URL[$role]}"
        done
} >>"$RUN/env.sh"

# ------------------------------------------------------------------ 5. vouchers
NOW_S=$(date +%s)
BEGIN_S=$((NOW_S - 60))
END_S=$((NOW_S + 7200))
VOUCHERS=()
STOCKS=()
# Each seckill-admin run leases a snowflake worker id and may mint only 2/3 of a lease
# after acquiring it (DESIGN.md 2): with the default 30 s lease that is 20 s per
# voucher. A one-shot CLI needs no long lease; the services keep the default.
admin() { SECKILL_WORKER_LEASE_MS=1500 "$BIN/seckill-admin" "$@"; }
create_voucher() {   # create_voucher STOCK [BUCKETS] -> appends to VOUCHERS
        local stock=$1 nb=${2:-1} out id
        out=$(admin voucher create --stock "$stock" --buckets "$nb" --begin "$BEGIN_S" --end "$END_S" 2>>"$RUN/admin.log") \
                || die "voucher create --stock $stock --buckets $nb failed: $(tail -n 3 "$RUN/admin.log")"
        id=$(printf '%s\n' "$out" | jq -r '.voucherId // empty' 2>/dev/null | tail -n 1)
        [[ $id =~ ^[1-9][0-9]{0,18}$ ]] || die "voucher create printed no voucherId: $out"
        admin voucher preheat "$id" >>"$RUN/admin.log" 2>&1 \
                || die "voucher preheat $id failed: $(tail -n 3 "$RUN/admin.log")"
        VOUCHERS+=("$id")
        STOCKS+=("$stock")
}
create_voucher "$HOT_STOCK" "$HOT_BUCKETS"
for _ in $(seq 1 "$ORD_COUNT"); do create_voucher "$ORD_STOCK"; done
SALE_VLIST=$(IFS=,; echo "${VOUCHERS[*]}")
# A one-unit voucher for the warm-up purchase (step 7), checked like the others.
create_voucher 1
WARMUP=${VOUCHERS[-1]}
OUTAGE_HOT=${VOUCHERS[0]}
if (( DRIFT > 0 )); then
        sql -e "UPDATE \`$DB\`.tb_seckill_voucher SET init_stock = init_stock - $DRIFT
                WHERE voucher_id = ${VOUCHERS[0]};
                UPDATE \`$DB\`.tb_seckill_stock SET init_stock = init_stock - $DRIFT, stock = stock - $DRIFT
                WHERE voucher_id = ${VOUCHERS[0]} AND bucket = 0" || die "cannot apply --drift"
        STOCKS[0]=$((HOT_STOCK - DRIFT))
        say "--drift $DRIFT: the DB now holds $((HOT_STOCK - DRIFT)) units of the hot voucher, Redis $HOT_STOCK"
fi
if (( ORD_COUNT > 0 )); then
        say "vouchers (preheated): hot ${VOUCHERS[0]} stock ${STOCKS[0]} in $HOT_BUCKETS buckets; ordinary ${VOUCHERS[*]:1:ORD_COUNT} stock $ORD_STOCK each; warm-up $WARMUP stock 1"
else
        say "vouchers (preheated): ${VOUCHERS[0]} stock ${STOCKS[0]}; warm-up $WARMUP stock 1"
fi

# ------------------------------------------------------------------ 6. services
# setsid: a Ctrl-C in the terminal reaches this script only, which then stops the
# services with one SIGTERM each (a second signal would make them skip their drain).
# The demo's payment windows are seconds: no webhook grace after the deadline (production
# 120 s, DESIGN.md 13), so unpaid units come back within the run.
export SECKILL_PAY_GRACE_S=0
auth_setup       # --auth jwt: the front verifies every buyer's token (auth.sh)
# The demo's payment "provider" (payer.py) signs its callbacks with this secret (DESIGN.md 15).
PAY_KEYS=$RUN/payment.keys
(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PAY_KEYS" && echo >>"$PAY_KEYS")
SECKILL_PAY_TIMEOUT_S=$PAY_TIMEOUT_S SECKILL_CLOSE_INTERVAL_MS=500 SECKILL_MYSQL_URL=${DEMO_URL[consumer]} \
        setsid "$BIN/seckill-consumer" --workers 2 > "$RUN/consumer.log" 2>&1 9>&- &
CONSUMER_PID=$!
PIDS+=("$CONSUMER_PID")
# The front too: its DB-only path (DESIGN.md 12, --kill-redis) creates orders itself.
SECKILL_PAY_TIMEOUT_S=$PAY_TIMEOUT_S SECKILL_PAYMENT_KEYS_FILE=$PAY_KEYS SECKILL_MYSQL_URL=${DEMO_URL[front]} \
        setsid "$BIN/seckill-front" > "$RUN/front.log" 2>&1 9>&- &
FRONT_PID=$!
PIDS+=("$FRONT_PID")
say "started seckill-consumer --workers 2 (pid $CONSUMER_PID) and seckill-front (pid $FRONT_PID); logs in $RUN"
ready=0
for _ in $(seq 1 300); do
        kill -0 "$FRONT_PID" 2>/dev/null || { tail -n 20 "$RUN/front.log" >&2; die "seckill-front exited"; }
        kill -0 "$CONSUMER_PID" 2>/dev/null || { tail -n 20 "$RUN/consumer.log" >&2; die "seckill-consumer exited"; }
        if curl -fsS -m 2 "http://$OPS_ADDR/readyz" > "$RUN/readyz.json" 2>/dev/null; then
                ready=1
                break
        fi
        sleep 0.2
done
if [[ $ready -ne 1 ]]; then
        curl -sS -m 2 "http://$OPS_ADDR/readyz" >&2 || true
        tail -n 20 "$RUN/front.log" >&2
        die "seckill-front not ready within 60 s"
fi
say "front ready: $(tr -d '\n' < "$RUN/readyz.json" | cut -c1-200)"
phase() { echo "$1 $(( $(date +%s) - T0 ))" >> "$RUN/phases.txt"; }   # seconds since start
phase ready
redis_cmdstats "$RUN/cmdstats-before.txt"
payments_start   # scripts/demo/payments.sh (DESIGN.md 13)

# ------------------------------------------------------------------ 7. warm-up, then the sale
# One purchase through the whole pipeline before the sale: the consumer group's first
# assignment comes only after the broker's initial rebalance delay (3 s by default),
# and a sale that starts before it would measure the group join as accept-to-DB lag.
# The warm-up 202 is logged and checked like the sale's.
WARM_USER=1990653203999999999
warm_body=$(curl -sS -m 30 -X POST -H "$(auth_header "$WARM_USER")" -H 'Content-Length: 0' \
        -w '\n%{http_code}' "http://$HTTP_ADDR/api/v1/vouchers/$WARMUP/seckill") || die "warm-up purchase: no answer"
warm_status=${warm_body##*$'\n'}
warm_body=${warm_body%$'\n'*}
[[ $warm_status == 202 ]] || die "warm-up purchase answered $warm_status: $warm_body"
warm_order=$(jq -r '.orderId' <<< "$warm_body")
warm_trace=$(jq -r '.traceId' <<< "$warm_body")
printf '%s\t%s\t%s\t%s\t%s\t1\n' "$warm_order" "$warm_trace" "$WARMUP" "$WARM_USER" \
        "$(date +%s%3N)" > "$RUN/sale/accepted-warmup.tsv"
[[ $warm_trace =~ ^[1-9][0-9]{0,18}$ ]] || die "warm-up purchase: bad traceId in $warm_body"
warm_ok=0
for _ in $(seq 1 600); do
        n=$(sql -e "SELECT COUNT(*) FROM \`$DB\`.tb_seckill_outcome WHERE trace_id = $warm_trace") || n=0
        if [[ $n == 1 ]]; then warm_ok=1; break; fi
        sleep 0.1
done
[[ $warm_ok -eq 1 ]] || die "the warm-up purchase has no outcome after 60 s (consumer log: $RUN/consumer.log)"
say "warm-up purchase decided in the DB: the consumer group is assigned"
phase warm

VLIST=$SALE_VLIST
EFFECTIVE_HOT=$HOT_PCT
(( ORD_COUNT == 0 )) && EFFECTIVE_HOT=100
say "sale: $BUYERS buyers (~$EFFECTIVE_HOT% on the hot voucher, 10% ask twice, 5% retry after sold out), $CONCURRENCY connections, at most ${DURATION_S}s"
if (( KILL_DB )); then dbkill_arm; fi
SK_DEMO_OUT=$RUN/sale SK_DEMO_VOUCHERS=$VLIST SK_DEMO_BUYERS=$BUYERS SK_DEMO_THREADS=$CONCURRENCY \
SK_DEMO_HOT_PCT=$HOT_PCT SK_DEMO_PACE_MS=$PACE_MS \
        wrk -t"$CONCURRENCY" -c"$CONCURRENCY" -d"${DURATION_S}s" --timeout 30s --latency \
            -s "$DEMO_DIR/sale.lua" "http://$HTTP_ADDR/" > "$RUN/wrk.txt" 2>&1 &
WRK_PID=$!
SALE_T0=$(date +%s)
last_print=0
while kill -0 "$WRK_PID" 2>/dev/null; do
        ndone=$(find "$RUN/sale" -name 'done-*' | wc -l)
        if (( ndone >= CONCURRENCY )); then
                kill -INT "$WRK_PID" 2>/dev/null || true   # wrk would sleep out its -d
                break
        fi
        now=$(date +%s)
        if (( now - last_print >= 2 )); then
                # (wrk may not have created its files yet: the glob may match nothing)
                nacc=$( { cat "$RUN"/sale/accepted-*.tsv 2>/dev/null || true; } | wc -l)
                say "sale: $((now - SALE_T0))s, $nacc accepted so far, $ndone/$CONCURRENCY connections finished"
                last_print=$now
        fi
        outage_step      # --kill-redis: kill, watch, restart (outage.sh); else nothing
        dbkill_step      # --kill-db: kill node1, watch the writer, restart it (dbkill.sh)
        sleep 0.1
done
wrk_rc=0
wait "$WRK_PID" || wrk_rc=$?
WRK_PID=
SALE_END=$(date +%s)
[[ -s $RUN/sale/wrk.json ]] || { cat "$RUN/wrk.txt" >&2; die "wrk produced no summary (exit $wrk_rc)"; }
cat "$RUN"/sale/accepted-*.tsv > "$RUN/accepted.tsv" 2>/dev/null || : > "$RUN/accepted.tsv"
NACC=$(wc -l < "$RUN/accepted.tsv")
phase sale_end
say "sale over in $((SALE_END - SALE_T0))s: $(jq -r '.sale.answers' "$RUN/sale/wrk.json") answers, $(jq -r '.sale.status["202"] // 0' "$RUN/sale/wrk.json") accepted (202), $(jq -r '.sale.status["200"] // 0' "$RUN/sale/wrk.json") created on the DB-only path (200)"
outage_finish    # --kill-redis: until every voucher is back in state redis
dbkill_finish    # --kill-db: until node1 is Synced again
payments_resale  # late buyers take the units the closes release
cat "$RUN"/sale/accepted-*.tsv > "$RUN/accepted.tsv" 2>/dev/null || : > "$RUN/accepted.tsv"
NACC=$(wc -l < "$RUN/accepted.tsv")

# ------------------------------------------------------------------ 8. drain
# The client's record goes into its own database, next to the service's, for the joins.
python3 "$DEMO_DIR/report.py" load-sql "$RUN/accepted.tsv" "$CLIENT_DB" > "$RUN/accepted.sql"
sql < "$RUN/accepted.sql" || die "cannot load the 202 log into $CLIENT_DB"
# (lines that do not parse are not loaded; the report counts them against invariant 4)
NACC=$(sql -e "SELECT COUNT(*) FROM \`$CLIENT_DB\`.accepted")
DRAIN_T0=$(date +%s)
drained=0
last_line=
last_print=0
while :; do
        read -r decided created failed < <(sql -e "
                SELECT COUNT(o.trace_id), COALESCE(SUM(o.outcome = 1), 0), COALESCE(SUM(o.outcome = 2), 0)
                FROM \`$CLIENT_DB\`.accepted a JOIN \`$DB\`.tb_seckill_outcome o ON o.trace_id = a.trace_id") \
                || { decided=0; created=0; failed=0; }
        elapsed=$(( $(date +%s) - DRAIN_T0 ))
        line="$decided/$NACC accepted purchases decided (created $created, failed $failed)"
        # a line when the count moves, else one every 10 s
        if [[ $line != "$last_line" ]] || (( elapsed - last_print >= 10 )) || (( decided >= NACC )); then
                say "drain: $line, ${elapsed}s"
                last_line=$line
                last_print=$elapsed
        fi
        if (( decided >= NACC )); then drained=1; break; fi
        (( elapsed >= DRAIN_TIMEOUT_S )) && break
        kill -0 "$CONSUMER_PID" 2>/dev/null || { warn "seckill-consumer exited: $(tail -n 3 "$RUN/consumer.log")"; break; }
        sleep 1
done
phase drained
payments_stop
[[ $drained -eq 1 ]] || warn "not every 202 has an outcome after ${DRAIN_TIMEOUT_S}s (the report says which)"

# ------------------------------------------------------------------ 9. reconcile + verify
# The reconciler judges only traces older than its grace: let the last ones age.
wait_s=$(( SALE_END + GRACE_S + 1 - $(date +%s) ))
if (( wait_s > 0 )); then
        say "waiting ${wait_s}s so every trace is older than the reconciler's grace (${GRACE_S}s)"
        sleep "$wait_s"
fi
say "seckill-reconciler --repair (one pass)"
rec_rc=0
SECKILL_MYSQL_URL=${DEMO_URL[reconciler]} "$BIN/seckill-reconciler" --repair --json --grace-seconds "$GRACE_S" \
        > "$RUN/reconciler.json" 2> "$RUN/reconciler.log" || rec_rc=$?
echo "$rec_rc" > "$RUN/reconciler.rc"
phase reconciled
# The verdict, then vouchers and traces counted from its JSON (not a legend of exit codes).
say "$(python3 "$DEMO_DIR/figures.py" rec-summary "$RUN/reconciler.json" "$rec_rc")"
for v in "${VOUCHERS[@]}"; do
        vrc=0
        "$BIN/seckill-admin" verify "$v" --json --quiesced > "$RUN/verify-$v.json" 2> "$RUN/verify-$v.log" || vrc=$?
        echo "$vrc" > "$RUN/verify-$v.rc"
        # per bucket: the DB and Redis stock side by side (report: buckets.py)
        "$BIN/seckill-admin" voucher show "$v" --json > "$RUN/show-$v.json" 2> "$RUN/show-$v.log" ||
                warn "seckill-admin voucher show $v failed: $(tail -n 1 "$RUN/show-$v.log")"
        say "seckill-admin verify $v: exit $vrc"
done
curl -fsS -m 5 "http://$OPS_ADDR/metrics" > "$RUN/front-metrics.txt" 2>/dev/null || true
redis_cmdstats "$RUN/cmdstats-after.txt"
curl -fsS -m 5 "http://127.0.0.1:$METRICS_PORT/metrics" > "$RUN/consumer-metrics.txt" 2>/dev/null || true

# ------------------------------------------------------------------ 10. report
rep_rc=0
python3 "$DEMO_DIR/report.py" report \
        --run "$RUN" --out "$OUT" --db "$DB" --client-db "$CLIENT_DB" \
        --vouchers "$(IFS=,; echo "${VOUCHERS[*]}")" --stocks "$(IFS=,; echo "${STOCKS[*]}")" \
        --warmup-voucher "$WARMUP" \
        --buyers "$BUYERS" --hot-pct "$HOT_PCT" --concurrency "$CONCURRENCY" \
        --front "http://$HTTP_ADDR" --prefix "$PREFIX" --topic "$TOPIC" \
        --drained "$drained" --elapsed-s "$(( $(date +%s) - T0 ))" \
        --unpaid-pct "$UNPAID_PCT" --outage "$KILL_REDIS" --dbkill "$KILL_DB" --db-topo "$DB_TOPO" || rep_rc=$?
exit "$rep_rc"
