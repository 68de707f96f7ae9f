#!/usr/bin/env bash
# bench/front.sh: throughput of seckill-front vs Redis's own limit for deduct.lua
# Starts its own seckill-front (own key prefix and topic), seeds two
# vouchers with large stock directly in Redis (one for the front, one for
# the raw-EVALSHA load), runs wrk (distinct user ids, bench/front.lua), then
# build/bench/evalsha_load (EVALSHA of the same script, random user and trace ids, so the
# admitting path) with enough calls in flight to saturate Redis (bench/lib.sh
# bench_deduct_evalsha: BENCH_EVALSHA_THREADS 2, BENCH_EVALSHA_PIPELINE 8), prints both
# rates, Redis's busy fraction during each (INFO used_cpu_sys + used_cpu_user over the
# run's wall time: redis_busy_front, redis_busy_raw, which should be >= 0.9, else a WARN
# line says the denominator is not Redis's limit), the front's p50/p99 and RSS, and
# ratio=<front/redis> as the LAST line. Cleans up its Redis keys.
# Env: SK_BIN (default build/bin), BENCH_SECONDS (10), BENCH_CONNS (64), BENCH_THREADS (2),
#      SECKILL_* as for the binaries, FRONT_ARGS: extra flags for seckill-front (e.g.
#      "-X linger.ms=5"), BENCH_PERF=FILE: also record a call-graph profile of the front
#      during the measured run (perf record -e cpu-clock -g, into FILE). Redis is reached at
#      127.0.0.1:6379 (redis-cli and redis-benchmark), the stack's default.
#      BENCH_FRONT_ONLY=1: stop after the front's run (no raw EVALSHA run, no ratio= line),
#      for comparing CPU per request between builds or settings.
# CPU per request (load-independent, unlike the rates): for the measured run it prints
# front_cpu_us_per_req=, wrk_cpu_us_per_req=, redis_cpu_us_per_req= and
# kafka_cpu_us_per_req= (utime + stime of each process from /proc/PID/stat, wrk's from
# `times`, divided by the run's requests). Redis and the broker are shared: their figures
# include whatever else the machine sends them meanwhile ("?" when the pid is not found).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
. "$here/lib.sh"
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
bench_require bench/front.sh wrk redis-benchmark redis-cli
[ -x "$SK_BIN/seckill-front" ] || { echo "bench/front.sh: no $SK_BIN/seckill-front" >&2; exit 2; }

run=bench_$$_$RANDOM
prefix=$run
topic="bench.front.$$.$RANDOM"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')   # the front's /readyz, /metrics (SECKILL_OPS_ADDR, DESIGN.md 15)
rc="redis-cli -h 127.0.0.1 -p 6379"
vf=$((RANDOM * 1000 + 11))       # front's voucher
vr=$((vf + 1))                   # the raw EVALSHA load's voucher
now_ms=$(( $(date +%s) * 1000 ))
extra=$(( (48 + 24) * 3600 * 1000 ))
seed() { bench_seed "$rc" "$prefix" "$1" 100000000 "$now_ms"; }  # seed ID: 10^8 units
# Its own database: the front leases its worker id in tb_worker_lease (DESIGN.md 2).
db="bench_front_$$_$RANDOM"
export SECKILL_MYSQL_URL="mysql://root@127.0.0.1:3306/$db"
cleanup() {
  [ -n "${fpid:-}" ] && kill -TERM "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null || true
  $rc --scan --pattern "$prefix:*" | xargs -r -n 100 $rc del >/dev/null || true
  mysql -uroot -h127.0.0.1 -P3306 -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/front.sh: db migrate failed" >&2; exit 1; }
seed $vf
seed $vr

# A shorter worker lease than the default 30 s (a fresh database's ids mint at once, but
# a restarted front may wait out up to 2/3 of its previous lease, DESIGN.md 2).
SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_REDIS_PREFIX=$prefix SECKILL_TOPIC=$topic \
  SECKILL_TOPIC_PARTITIONS=${SECKILL_TOPIC_PARTITIONS:-6} SECKILL_LOG_LEVEL=warn \
  SECKILL_WORKER_LEASE_MS=${SECKILL_WORKER_LEASE_MS:-6000} \
  SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 \
  "$SK_BIN/seckill-front" ${FRONT_ARGS:-} 2>/tmp/$run.front.log &
fpid=$!
bench_wait_ready "$oport" /tmp/$run.front.log

# The pids of the shared Redis and Kafka broker (by their listening port), for the CPU lines.
rpid=$(bench_pid_of_port 6379)
kpid=$(bench_pid_of_port 9092)

# Warm-up (connections, producer batches), then the measured run.
BENCH_VOUCHER=$vf BENCH_USER_BASE=1000000000 wrk -t"$threads" -c"$conns" -d2s \
  -s "$here/front.lua" "http://127.0.0.1:$port" >/dev/null
if [ -n "${BENCH_PERF:-}" ]; then
  perf record -e cpu-clock -g -o "$BENCH_PERF" -p "$fpid" -- sleep "$secs" >/dev/null 2>&1 &
  perfpid=$!
fi
fc0=$(bench_pid_cpu_ticks "$fpid"); rc0=$(bench_pid_cpu_ticks "$rpid"); kc0=$(bench_pid_cpu_ticks "$kpid")
rcpu0=$(bench_redis_cpu); rt0=$(bench_now_s)
# `times` in the same subshell: its second line is wrk's user and system CPU.
out=$(BENCH_VOUCHER=$vf BENCH_USER_BASE=5000000000 wrk -t"$threads" -c"$conns" -d"${secs}s" \
  -s "$here/front.lua" "http://127.0.0.1:$port"; times)
rt1=$(bench_now_s); rcpu1=$(bench_redis_cpu)
fc1=$(bench_pid_cpu_ticks "$fpid"); rc1=$(bench_pid_cpu_ticks "$rpid"); kc1=$(bench_pid_cpu_ticks "$kpid")
[ -n "${perfpid:-}" ] && { wait "$perfpid" || true; }
echo "$out" | grep -E '^(front_|  Latency|Requests/sec)' || true
nreq=$(echo "$out" | sed -n 's/^front_requests=\([0-9]*\).*/\1/p')
wrk_s=$(echo "$out" | tail -1 | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%.3f", n }')
echo "front_cpu_us_per_req=$(bench_us_per "$fc0" "$fc1" "$nreq" ticks) wrk_cpu_us_per_req=$(bench_us_per 0 "$wrk_s" "$nreq" s)" \
  "redis_cpu_us_per_req=$(bench_us_per "$rc0" "$rc1" "$nreq" ticks) kafka_cpu_us_per_req=$(bench_us_per "$kc0" "$kc1" "$nreq" ticks)" \
  "(CPU of each process during the measured run / its $nreq requests)"
echo "redis_busy_front=$(bench_busy "$rcpu0" "$rcpu1" "$rt0" "$rt1") (Redis CPU / wall time during the front's run)"
front_rate=$(echo "$out" | sed -n 's/^front_rate=//p')
rss_kb=$(awk '/VmHWM/ {print $2}' /proc/$fpid/status)
echo "front_rss_peak_mb=$((rss_kb / 1024))"
admitted=$(( 100000000 - $($rc get "$prefix:{v:$vf:0}:stock") ))
echo "front_admitted_total=$admitted"
kill -TERM $fpid; wait $fpid || true; fpid=
[ "${BENCH_FRONT_ONLY:-0}" = 1 ] && exit 0

rout=$(bench_deduct_evalsha "$prefix" "$vr" "$conns" "$secs" "$extra" 10000)
echo "redis_benchmark: $rout"
redis_rate=$(echo "$rout" | bench_rate_of)
busy=$(echo "$rout" | bench_busy_of)
radmitted=$(( 100000000 - $($rc get "$prefix:{v:$vr:0}:stock") ))
echo "redis_rate=${redis_rate%.*} redis_admitted_total=$radmitted redis_busy_raw=$busy"
python3 -c "import sys; sys.exit(0 if '$busy' != '?' and float('$busy') >= 0.9 else 1)" ||
  echo "WARN: the raw EVALSHA run kept Redis busy $busy of the time (< 0.9): ratio= is not against Redis's limit"
python3 -c "print('ratio=%.2f' % (float('$front_rate') / float('$redis_rate')))"
