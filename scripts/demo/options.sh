# scripts/demo/options.sh: the demo's command line (usage, parsing, checks), sourced by
# run.sh after its defaults (HOT_STOCK, BUYERS, ..., KILL_REDIS, DB_TOPO, KILL_DB, PACE_MS)
# and before anything runs, with run.sh's own arguments (a sourced file sees and shifts
# them): it sets those variables or exits 2 with one clear line.

usage() {
        cat <<EOF
usage: scripts/demo.sh [options]

  --stock N            stock of the hot voucher (default $HOT_STOCK)
  --buckets N          stock buckets of the hot voucher, 1..16 (default $HOT_BUCKETS; DESIGN.md
                       14); the report shows each bucket and its invariants
  --ordinary-stock N   stock of each ordinary voucher (default $ORD_STOCK)
  --ordinary N         number of ordinary vouchers (default $ORD_COUNT)
  --buyers N           distinct simulated buyers (default $BUYERS)
  --hot-pct P          percent of buyers on the hot voucher (default $HOT_PCT)
  --concurrency N      concurrent connections = wrk threads (default $CONCURRENCY)
  --duration S         upper bound of the sale in seconds (default $DURATION_S); the sale
                       ends earlier when every buyer has had an answer
  --drain-timeout S    how long to wait for the consumers (default $DRAIN_TIMEOUT_S)
  --drift N            after preheating, take N units off the hot voucher's bucket 0 in the DB only
                       (init_stock and stock): Redis admits N purchases the DB cannot
                       sell, which must end FAILED (sold_out) with their stock clamped
                       and their buyers released (DESIGN.md 8) — a failure path on show
  --unpaid-pct P       percent of the winners who never pay (default $UNPAID_PCT): their
                       orders close at the deadline, the units go back and are sold again
  --pay-timeout S      payment window of an order (default $PAY_TIMEOUT_S s; SECKILL_PAY_TIMEOUT_S)
  --redis TOPO         standalone (default), cluster (the local Redis Cluster,
                       127.0.0.1:7000-7008) or sentinel (master 6390 behind Sentinels
                       26390-26392); the topology is started with scripts/stack.sh up
                       TOPO and the report shows the EVALSHA calls per master
  --kill-redis         a Redis outage mid-sale (DESIGN.md 12): the run uses a private
                       redis-server on a spare port (the shared one is left alone),
                       kills it (-9) once a fifth of the hot stock is taken, restarts it
                       empty once the hot voucher has sold --redis-down seconds on the
                       DB-only path; the report's outage section shows the timeline and
                       the DB-only purchases (standalone Redis only)
  --redis-down S       seconds of DB-only sales before Redis comes back (default $OUTAGE_DOWN_S)
  --db TOPO            standalone (default: SECKILL_MYSQL_URL or the local MariaDB) or
                       galera (the local three-node Galera cluster, 127.0.0.1:3311-3313,
                       started with scripts/stack.sh galera up; every binary gets the
                       three-node URL, DESIGN.md 16). Any other value is taken as
                       --database NAME (the option's meaning before v5)
  --kill-db            with --db galera: SIGKILL the writer node (node1) once a fifth of
                       the hot stock is taken and restart it --db-down seconds later; the
                       report's database section shows the switch-over, and every
                       invariant must still hold
  --db-down S          seconds node1 stays down (default $DBKILL_DOWN_S)
  --pace MS            pause of each connection between two asks (default 0; 50 with
                       --kill-redis, so that the sale outlasts the outage)
  --auth MODE          jwt (default: the front runs with SECKILL_AUTH=jwt and a key set of
                       the demo's own; every buyer sends a signed token, DESIGN.md 15) or
                       trusted-header (X-User-Id from loopback)
  --keep               leave the front, the consumers and the stack running
  --no-install         do not check/install Debian packages
  --no-build           use the binaries already in the build dir
  --build-dir DIR      build directory (default build; env SK_DEMO_BUILD_DIR)
  --out DIR            output directory (default out; env SK_DEMO_OUT)
  --database NAME      database, dropped and recreated (default seckill_demo)
  -h, --help           this text

Writes OUT/report.json, OUT/latency.png and, per run, OUT/demo-<stamp>/ (logs, wrk
output, the 202 log, reconciler and verify output). Exit 0 iff every invariant holds.
EOF
}

need_arg() { [[ $# -ge 2 && -n $2 ]] || { echo "demo: $1 needs a value" >&2; exit 2; }; }
need_int() { [[ $2 =~ ^[0-9]+$ ]] || { echo "demo: $1 wants a non-negative integer, got '$2'" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
        case $1 in
        --stock) need_arg "$@"; need_int "$1" "$2"; HOT_STOCK=$2; shift 2 ;;
        --buckets) need_arg "$@"; need_int "$1" "$2"; HOT_BUCKETS=$2; shift 2 ;;
        --ordinary-stock) need_arg "$@"; need_int "$1" "$2"; ORD_STOCK=$2; shift 2 ;;
        --ordinary) need_arg "$@"; need_int "$1" "$2"; ORD_COUNT=$2; shift 2 ;;
        --buyers) need_arg "$@"; need_int "$1" "$2"; BUYERS=$2; shift 2 ;;
        --hot-pct) need_arg "$@"; need_int "$1" "$2"; HOT_PCT=$2; shift 2 ;;
        --concurrency) need_arg "$@"; need_int "$1" "$2"; CONCURRENCY=$2; shift 2 ;;
        --duration) need_arg "$@"; need_int "$1" "$2"; DURATION_S=$2; shift 2 ;;
        --drain-timeout) need_arg "$@"; need_int "$1" "$2"; DRAIN_TIMEOUT_S=$2; shift 2 ;;
        --drift) need_arg "$@"; need_int "$1" "$2"; DRIFT=$2; shift 2 ;;
        --unpaid-pct) need_arg "$@"; need_int "$1" "$2"; UNPAID_PCT=$2; shift 2 ;;
        --pay-timeout) need_arg "$@"; need_int "$1" "$2"; PAY_TIMEOUT_S=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --kill-redis) KILL_REDIS=1; shift ;;
        --redis-down) need_arg "$@"; need_int "$1" "$2"; OUTAGE_DOWN_S=$2; shift 2 ;;
        --pace) need_arg "$@"; need_int "$1" "$2"; PACE_MS=$2; shift 2 ;;
        --redis) need_arg "$@"
                case $2 in standalone|cluster|sentinel) REDIS_TOPO=$2 ;;
                *) echo "demo: --redis standalone|cluster|sentinel, not '$2'" >&2; exit 2 ;;
                esac
                shift 2 ;;
        --no-install) INSTALL=0; shift ;;
        --no-build) BUILD=0; shift ;;
        --build-dir) need_arg "$@"; BUILD_DIR=$2; shift 2 ;;
        --out) need_arg "$@"; OUT=$2; shift 2 ;;
        --db) need_arg "$@"
                case $2 in standalone|galera) DB_TOPO=$2 ;; *) DB=$2 ;; esac
                shift 2 ;;
        --database) need_arg "$@"; DB=$2; shift 2 ;;
        --kill-db) KILL_DB=1; shift ;;
        --auth) need_arg "$@"
                case $2 in jwt|trusted-header) AUTH=$2 ;;
                *) echo "demo: --auth jwt|trusted-header, not '$2'" >&2; exit 2 ;;
                esac
                shift 2 ;;
        --db-down) need_arg "$@"; need_int "$1" "$2"; DBKILL_DOWN_S=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
done
[[ $DB =~ ^[A-Za-z0-9_]{1,48}$ ]] || { echo "demo: --database must match [A-Za-z0-9_]{1,48}" >&2; exit 2; }
(( ! KILL_DB )) || [[ $DB_TOPO == galera ]] || { echo "demo: --kill-db needs --db galera" >&2; exit 2; }
(( ! KILL_DB || ! KILL_REDIS )) || { echo "demo: --kill-db and --kill-redis: one outage at a time" >&2; exit 2; }
(( CONCURRENCY >= 1 && CONCURRENCY <= 1000 )) || { echo "demo: --concurrency must be 1..1000" >&2; exit 2; }
(( BUYERS >= 1 && BUYERS <= 999999999 )) || { echo "demo: --buyers must be 1..999999999" >&2; exit 2; }
(( HOT_STOCK >= 1 )) || { echo "demo: --stock must be >= 1" >&2; exit 2; }
(( ORD_COUNT == 0 || ORD_STOCK >= 1 )) || { echo "demo: --ordinary-stock must be >= 1" >&2; exit 2; }
(( HOT_BUCKETS >= 1 && HOT_BUCKETS <= 16 )) || { echo "demo: --buckets must be 1..16" >&2; exit 2; }
(( HOT_STOCK >= HOT_BUCKETS )) || { echo "demo: --stock must be at least --buckets" >&2; exit 2; }
# --drift takes its units from bucket 0, which holds at least stock / buckets of them
(( DRIFT < HOT_STOCK / HOT_BUCKETS )) || { echo "demo: --drift must be below --stock / --buckets" >&2; exit 2; }
(( HOT_PCT <= 100 )) || { echo "demo: --hot-pct must be 0..100" >&2; exit 2; }
(( DURATION_S >= 1 )) || { echo "demo: --duration must be >= 1" >&2; exit 2; }
if (( KILL_REDIS )); then
        [[ $REDIS_TOPO == standalone ]] || { echo "demo: --kill-redis works on a standalone Redis only" >&2; exit 2; }
        PACE_MS=${PACE_MS:-50}
fi
PACE_MS=${PACE_MS:-0}
[[ $BUILD_DIR = /* ]] || BUILD_DIR=$PWD/$BUILD_DIR
[[ $OUT = /* ]] || OUT=$PWD/$OUT
