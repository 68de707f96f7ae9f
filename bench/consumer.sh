#!/usr/bin/env bash
# bench/consumer.sh: drain rate of seckill-consumer, batched vs one order per
# transaction.
#
# Preloads M order messages over V vouchers into a fresh topic (bench/consumer/preload.c,
# compiled here), then:
#   1. batched: a fresh database, seckill-consumer with the default batching
#      (--batch-max 500) until every message has an outcome;
#   2. single:  another fresh database and group on the same topic, --batch-max 1,
#      stopped after BENCH_SINGLE_SECONDS (one order per transaction is slow, so its
#      rate is normalised over what it drained).
# Rates are orders / (last created_at - first created_at) of the outcome rows, so the
# group join and start-up are not counted. Prints both rates, the batched consumer's
# peak RSS, and ratio=<batched/single> as the LAST line. Drops its databases, topic
# keys and Redis keys at the end.
# Beside each rate, what the book of record did per order: the deltas of MariaDB's
# Handler_read_key, Handler_read_next and Innodb_rows_read (Rows_read on MariaDB 10.6 and
# later, which dropped Innodb_rows_read) (SHOW GLOBAL STATUS, from the
# consumer's start to the end of its drain) divided by the orders drained. They are counts,
# not times (valid at any load), but global: other jobs' queries on the same server count
# too, so on a shared server they are upper bounds. The drain is watched through the
# bucket rows (a few rows per poll), not COUNT(*) of the outcome table, so the watching
# adds next to nothing to them.
# A phase that produced no figure (no rate, fewer outcomes than M, a command failing
# under set -e) ends the script with one line "bench/consumer.sh: FAILED: ..." on stderr
# and a non-zero exit status.
# With --dup-pct P (or BENCH_DUP_PCT) the backlog is re-driven: P% of the messages get an
# identical copy (alternately in the same batch and of a message decided 5000 earlier),
# and the batched run prints the consumer's duplicates and batch fallbacks (from its
# /metrics): the batched rate must hold with duplicates (fallbacks stay 0).
# Usage: bench/consumer.sh [--dup-pct P] [M]
# Env: SK_BIN (default build/bin), BENCH_M (200000), BENCH_VOUCHERS (8), BENCH_DUP_PCT (0),
#      BENCH_PARTITIONS (6), BENCH_WORKERS (2), BENCH_SINGLE_SECONDS (15),
#      BENCH_BATCH_MAX (500), BENCH_BUCKETS (1: buckets per voucher, 1..16; the messages
#      spread over them, key "voucherId:bucket"), BENCH_CONSUMER_ARGS (extra flags for both runs, e.g.
#      "-X fetch.max.bytes=1048576"), SECKILL_KAFKA_BROKERS, BENCH_MYSQL_HOSTS (the database
#      server(s) as host:port[,host:port...], root without a password; default
#      127.0.0.1:3306; bench/galera.sh passes the local Galera cluster's three nodes),
#      BENCH_SKIP_SINGLE=1 (the batched run only).
set -eEuo pipefail
# Any command that ends the script under set -e says so (before, a failing curl of the
# metrics endpoint ended it silently, after the preload line only: see metric below).
# (-E: inside functions too; a subshell's failure is reported once, by the command of the
# script that ran it.)
trap 'rc=$?; [ "$BASH_SUBSHELL" -gt 0 ] || echo "bench/consumer.sh: FAILED: line $LINENO: $BASH_COMMAND (exit $rc)" >&2' ERR
die() { echo "bench/consumer.sh: FAILED: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
DUP_PCT=${BENCH_DUP_PCT:-0}
if [ "${1:-}" = "--dup-pct" ]; then DUP_PCT=${2:?--dup-pct needs a percentage}; shift 2; fi
case "$DUP_PCT" in ''|*[!0-9]*) echo "bench/consumer.sh: --dup-pct must be 0..100" >&2; exit 2;; esac
[ "$DUP_PCT" -le 100 ] || { echo "bench/consumer.sh: --dup-pct must be 0..100" >&2; exit 2; }
M=${1:-${BENCH_M:-200000}}
V=${BENCH_VOUCHERS:-8}
P=${BENCH_PARTITIONS:-6}
W=${BENCH_WORKERS:-2}
SINGLE_S=${BENCH_SINGLE_SECONDS:-15}
BATCH_MAX=${BENCH_BATCH_MAX:-500}
B=${BENCH_BUCKETS:-1}
brokers=${SECKILL_KAFKA_BROKERS:-127.0.0.1:9092}
. "$here/lib.sh"
bench_require bench/consumer.sh mysql redis-cli cc pkg-config python3 curl
[ -x "$SK_BIN/seckill-consumer" ] || { echo "bench/consumer.sh: no $SK_BIN/seckill-consumer" >&2; exit 2; }
[ -x "$SK_BIN/seckill-admin" ] || { echo "bench/consumer.sh: no $SK_BIN/seckill-admin" >&2; exit 2; }

run=bench_cons_$$_$RANDOM
topic="bench.consumer.$$.$RANDOM"
db1=${run}_b
db2=${run}_s
prefix=$run
tmp=$(mktemp -d /tmp/$run.XXXX)
hosts=${BENCH_MYSQL_HOSTS:-127.0.0.1:3306}
h1=${hosts%%,*}
my="mysql -uroot -h${h1%:*} -P${h1##*:} --protocol=TCP -N -B"
rc="redis-cli -h 127.0.0.1 -p 6379"
vbase=$(( (RANDOM + 1) * 1000000 ))
idbase=$(( (RANDOM + 1) * 100000000000 ))
cpid=

cleanup() {
  [ -n "$cpid" ] && kill -TERM "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null || true
  $my -e "DROP DATABASE IF EXISTS \`$db1\`; DROP DATABASE IF EXISTS \`$db2\`" 2>/dev/null || true
  $rc --scan --pattern "$prefix:*" | xargs -r -n 100 $rc del >/dev/null 2>&1 || true
  [ -n "${KEEP_LOGS:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

cc -O2 -o "$tmp/preload" "$here/consumer/preload.c" $(pkg-config --cflags --libs rdkafka)

# Databases with V vouchers of B buckets, each bucket's stock covering every message.
for db in $db1 $db2; do
  SECKILL_MYSQL_URL="mysql://root@$hosts/$db" "$SK_BIN/seckill-admin" db migrate >/dev/null
  values=""
  for i in $(seq 0 $((V - 1))); do
    values="$values${values:+,}($((vbase + i)), $(( (M + 10) * B )), $((B)), UTC_TIMESTAMP(3) - INTERVAL 1 HOUR, UTC_TIMESTAMP(3) + INTERVAL 1 DAY, 1)"
  done
  $my "$db" -e "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, buckets, begin_time, end_time, status) VALUES $values"
  for b in $(seq 0 $((B - 1))); do
    $my "$db" -e "INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock) SELECT voucher_id, $b, $((M + 10)), $((M + 10)) FROM tb_seckill_voucher"
  done
done

# The topic (created by the consumer's own start-up code would also do; the preload
# must not race it, so create it through a short consumer start: sk_kafka_ensure_topics).
export SECKILL_KAFKA_BROKERS=$brokers SECKILL_TOPIC=$topic SECKILL_TOPIC_PARTITIONS=$P \
       SECKILL_REDIS_PREFIX=$prefix SECKILL_METRICS_ADDR=off SECKILL_LOG_LEVEL=warn
SECKILL_MYSQL_URL="mysql://root@$hosts/$db1" SECKILL_GROUP_ID="$run-init" \
  timeout 20 "$SK_BIN/seckill-consumer" --workers 1 >/dev/null 2>&1 &
ipid=$!
sleep 3
kill -TERM $ipid 2>/dev/null || true
wait $ipid 2>/dev/null || true

echo "preloading M=$M messages over V=$V vouchers of B=$B buckets into $topic ($P partitions), duplicates ${DUP_PCT}%"
PRELOAD_BUCKETS=$B "$tmp/preload" "$brokers" "$topic" "$M" "$vbase" "$V" "$idbase" "$DUP_PCT"

count() { $my "$1" -e "SELECT COUNT(*) FROM tb_seckill_outcome"; }
# Units sold from the bucket rows: V x B rows per poll (COUNT(*) of the outcome table reads
# every row it counts, which would show in the Handler figures). Every message of the
# backlog sells one unit (the stock covers them all), so the drain is done at M.
sold() { $my "$1" -e "SELECT COALESCE(SUM(init_stock - stock), 0) FROM tb_seckill_stock"; }
# SHOW GLOBAL STATUS counters as "read_key read_next rows_read". MariaDB 10.6 and later
# have no Innodb_rows_read: there the server's own Rows_read stands in (rows_read_name).
hstat() {
  $my -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_read_key', 'Handler_read_next', 'Innodb_rows_read', 'Rows_read')" |
    awk '{ v[$1] = $2 } END { r = ("Innodb_rows_read" in v) ? v["Innodb_rows_read"] : v["Rows_read"]
                              print v["Handler_read_key"] + 0, v["Handler_read_next"] + 0, r + 0 }'
}
rows_read_name=$($my -e "SHOW GLOBAL STATUS LIKE 'Innodb_rows_read'" | awk 'NR == 1 { print "innodb_rows_read" }')
rows_read_name=${rows_read_name:-rows_read}
# handler_line PHASE ORDERS "BEFORE" "AFTER": the deltas per order.
handler_line() {
  python3 -c "
n = $2; a = [int(x) for x in '$3'.split()]; b = [int(x) for x in '$4'.split()]
d = [y - x for x, y in zip(a, b)]
print('$1_handler_per_order: read_key=%.2f read_next=%.2f $rows_read_name=%.2f (deltas %d %d %d over %d orders; global counters: upper bounds on a shared server)'
      % (d[0] / n, d[1] / n, d[2] / n, d[0], d[1], d[2], n))"
}
# positive NAME VALUE: VALUE is a number above 0, else the phase produced no figure.
positive() {
  python3 -c "import sys; sys.exit(0 if float('$2' or 0) > 0 else 1)" 2>/dev/null ||
    die "$1 produced no figure ($1='$2')"
}
span_rate() {   # orders/s over the outcome rows' created_at span
  $my "$1" -e "SELECT COUNT(*), TIMESTAMPDIFF(MICROSECOND, MIN(created_at), MAX(created_at)) FROM tb_seckill_outcome" |
    awk '{ if ($2 > 0) printf "%d %.0f %.3f\n", $1, $1 / ($2 / 1e6), $2 / 1e6; else print $1, 0, 0 }'
}

# CPU ticks of a shared service (MariaDB, Redis): other jobs' work on it counts too, so
# the figures per order derived from them are upper bounds.
# The server of the first host: its pid file when it is on this machine, else the first
# mariadbd found.
db_pid=$(cat "$($my -e 'SELECT @@pid_file' 2>/dev/null)" 2>/dev/null || pgrep -x mariadbd | head -1 || true)
rd_pid=$($rc info server | tr -d '\r' | sed -n 's/^process_id://p')
svc_ticks() { [ -n "$1" ] && [ -r "/proc/$1/stat" ] && awk '{print $14 + $15}' "/proc/$1/stat" || echo 0; }
# "tid ticks" of the server threads that serve the connections to database $1
# (information_schema.PROCESSLIST.TID): the run's own share of MariaDB's CPU, which other
# jobs on the server do not inflate (InnoDB's background threads are not in it).
conn_ticks() {
  [ -n "$db_pid" ] || return 0
  $my -e "SELECT TID FROM information_schema.PROCESSLIST WHERE DB = '$1'" 2>/dev/null |
    while read -r tid; do
      [ -r "/proc/$db_pid/task/$tid/stat" ] && awk -v t="$tid" '{ print t, $14 + $15 }' "/proc/$db_pid/task/$tid/stat"
    done || true
}
# conn_ticks_delta "BEFORE" "AFTER": the ticks those threads used in between (a thread
# not seen before counts whole).
conn_ticks_delta() {
  A=$1 B=$2 python3 -c "
import os
a = dict(l.split() for l in os.environ['A'].splitlines() if l.strip())
b = dict(l.split() for l in os.environ['B'].splitlines() if l.strip())
print(sum(int(v) - int(a.get(k, 0)) for k, v in b.items()))"
}
db_t0=$(svc_ticks "$db_pid"); rd_t0=$(svc_ticks "$rd_pid")
# 1. batched (its /metrics on a private port, read before it stops; a port another process
# holds leaves the consumer without /metrics, which only costs the three counts below)
mport=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
h0=$(hstat)
SECKILL_MYSQL_URL="mysql://root@$hosts/$db1" SECKILL_GROUP_ID="$run-batched" \
  "$SK_BIN/seckill-consumer" --workers "$W" --batch-max "$BATCH_MAX" --metrics-addr "127.0.0.1:$mport" \
  ${BENCH_CONSUMER_ARGS:-} 2>"$tmp/batched.log" &
cpid=$!
t0=$(date +%s)
# Its connections' server threads, once the workers and the closer have connected (a
# connection may reuse a cached thread: its earlier CPU is left out this way).
for _ in $(seq 1 100); do
  [ "$($my -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '$db1'")" -gt "$W" ] && break
  sleep 0.1
done
ct0=$(conn_ticks "$db1")
peak_kb=0
while :; do
  n=$(sold $db1)
  kb=$(awk '/VmHWM/ {print $2}' /proc/$cpid/status 2>/dev/null || echo 0)
  [ "${kb:-0}" -gt "$peak_kb" ] && peak_kb=$kb
  [ "$n" -ge "$M" ] && break
  if [ $(( $(date +%s) - t0 )) -gt $(( 120 + M / 500 )) ]; then
    echo "batched drain timed out at $n/$M" >&2; tail -20 "$tmp/batched.log" >&2; exit 1
  fi
  kill -0 $cpid 2>/dev/null || { echo "consumer died" >&2; tail -20 "$tmp/batched.log" >&2; exit 1; }
  sleep 0.5
done
ticks=$(getconf CLK_TCK)
cpu_s=$(awk -v t="$ticks" '{ printf "%.1f", ($14 + $15) / t }' /proc/$cpid/stat)
db_t1=$(svc_ticks "$db_pid"); rd_t1=$(svc_ticks "$rd_pid")
ct1=$(conn_ticks "$db1")
h1=$(hstat)
# A counter of the consumer's /metrics, or nothing when it cannot be read (the caller
# prints "?"); never a failing command: under set -e a failing curl here used to end the
# script silently after the preload line.
metric() { { curl -s --max-time 5 "http://127.0.0.1:$mport/metrics" || true; } | awk -v n="seckill_$1" '$1 == n { print $2 }'; }
sleep 1 # the last batch's duplicates settle after its outcomes
dups=$(metric consumer_duplicates_total); fallbacks=$(metric consumer_batch_fallbacks_total)
txns=$(metric consumer_batch_size_count)
kill -TERM $cpid; wait $cpid || true; cpid=
read -r bn brate bspan < <(span_rate $db1) || die "batched: no outcome figures from $db1"
orders=$($my $db1 -e "SELECT COUNT(*) FROM tb_voucher_order")
stock_sold=$($my $db1 -e "SELECT SUM(init_stock - stock) FROM tb_seckill_stock")
[ "$bn" -ge "$M" ] || die "batched: $bn outcomes for $M messages"
positive batched_rate "$brate"
if [ "$DUP_PCT" -gt 0 ] && [ -z "$dups" ]; then
  die "batched: no duplicates figure (the consumer's /metrics on 127.0.0.1:$mport did not answer)"
fi
echo "batched: orders=$orders outcomes=$bn sold=$stock_sold seconds=$bspan workers=$W batch_max=$BATCH_MAX"
echo "batched_rate=$brate orders/s duplicates_settled=${dups:-?} fallbacks=${fallbacks:-?} transactions=${txns:-?}"
handler_line batched "$M" "$h0" "$h1"
echo "consumer_rss_peak_mb=$((peak_kb / 1024)) consumer_cpu_seconds=$cpu_s load_avg=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
# CPU-us per order: the consumer's own (start-up and group join included), and the
# shared MariaDB's and Redis's over the drain (upper bounds: other jobs' work counts too);
# mariadb_conn: only the server threads of the consumer's connections (no background
# InnoDB work, no other job's)
python3 -c "
M, t = $M, $ticks
print('per_order_cpu_us: consumer=%.1f mariadb=%.1f redis=%.1f mariadb_conn=%.1f (mariadb, redis: shared services, upper bounds)'
      % ($cpu_s * 1e6 / M, ($db_t1 - $db_t0) * 1e6 / t / M, ($rd_t1 - $rd_t0) * 1e6 / t / M,
         $(conn_ticks_delta "$ct0" "$ct1") * 1e6 / t / M))"

[ "${BENCH_SKIP_SINGLE:-0}" = 1 ] && exit 0
# 2. one order per transaction, same messages, fresh database and group
h0=$(hstat)
SECKILL_MYSQL_URL="mysql://root@$hosts/$db2" SECKILL_GROUP_ID="$run-single" \
  "$SK_BIN/seckill-consumer" --workers "$W" --batch-max 1 ${BENCH_CONSUMER_ARGS:-} 2>"$tmp/single.log" &
cpid=$!
t0=$(date +%s)
while [ "$(count $db2)" -lt 1 ]; do
  [ $(( $(date +%s) - t0 )) -gt 60 ] && { echo "single mode did not start" >&2; tail -20 "$tmp/single.log" >&2; exit 1; }
  sleep 0.2
done
sleep "$SINGLE_S"
h1=$(hstat)
kill -TERM $cpid; wait $cpid || true; cpid=
read -r sn srate sspan < <(span_rate $db2) || die "single: no outcome figures from $db2"
positive single_rate "$srate"
echo "single: outcomes=$sn seconds=$sspan workers=$W batch_max=1"
echo "single_rate=$srate orders/s"
handler_line single "$sn" "$h0" "$h1"
python3 -c "print('ratio=%.1f' % (float('$brate') / float('$srate') if float('$srate') > 0 else 0))"
