#!/usr/bin/env bash
# bench/sale.sh: a realistic flash sale against seckill-front, and the two ceilings it is
# measured against, all at the same concurrency in one run:
#   1. the sale: one voucher with stock BENCH_STOCK (1,000), BENCH_BUYERS (100,000)
#      distinct buyers over BENCH_CONNS (256) connections for BENCH_SECONDS (10) with
#      wrk (bench/sale.lua); almost every request comes after the sell-out, as in a
#      real sale. Prints front req/s and p50/p99.
#   2. raw Redis: EVALSHA of deduct.lua (as embedded; build/bench/evalsha_load) on a SOLD-OUT
#      voucher, random users: what each post-sell-out purchase costs Redis today.
#      ratio_redis = front / raw EVALSHA.
#   3. the HTTP layer: bench/const409 (build/bench/const409, libmicrohttpd set up like the
#      front, same HTTP threads) answering every request with the front's fixed 409;
#      same wrk script. Last line: ratio = front / constant.
# At the end: zero oversell and zero undersell, from the front's own counters and Redis:
# 202 answers (seckill_front_requests_total{code="202"}) = stock, Redis stock = 0 and
# the users hash holds exactly stock buyers; otherwise it says FAIL and exits 1.
#
# Scope: the voucher has BENCH_BUCKETS (4) buckets (DESIGN.md 14), seeded directly in
# Redis as preheat lays them out ({v:ID:b}:meta/stock/users/trace, users and trace with
# the placeholder _, meta written last with buckets=N; no DB rows, no consumer), so home
# buckets empty at different times and the front probes the others before 10005. The
# front publishes its 1,000 admissions to a topic of its own, which nobody consumes. The
# front runs with its local
# sold-out cache (DESIGN.md 4; SECKILL_SOLDOUT_CACHE_MS, default 1000, 0 = off): after the
# sell-out most requests are answered 10005 without Redis; the run prints the cache's
# hits. SECKILL_SOLDOUT_CACHE_MS=0 measures the front with every request on deduct.lua.
#
# Env: SK_BIN (build/bin), SK_BENCH_BIN (build/bench), BENCH_SECONDS (10), BENCH_CONNS
#      (256), BENCH_THREADS (2), BENCH_STOCK (1000), BENCH_BUYERS (100000), BENCH_BUCKETS (4),
#      SECKILL_HTTP_THREADS (2, also the constant server's), SECKILL_* as for the front.
#      BENCH_METRICS_OUT (a file: the front's /metrics after the sale, e.g. its
#      seckill_front_purchase_seconds histogram of the requests that reached Redis).
#      Redis at 127.0.0.1:6379 (redis-cli, redis-benchmark). Figures only, never asserted
#      (DESIGN.md: speed is not a test); record runs in bench/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
. "$here/lib.sh"
SK_BENCH_BIN=${SK_BENCH_BIN:-$here/../build/bench}
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNS:-256}
threads=${BENCH_THREADS:-2}
stock=${BENCH_STOCK:-1000}
buyers=${BENCH_BUYERS:-100000}
buckets=${BENCH_BUCKETS:-4}
http_threads=${SECKILL_HTTP_THREADS:-2}
bench_require bench/sale.sh wrk redis-benchmark redis-cli curl python3
[ -x "$SK_BIN/seckill-front" ] || { echo "bench/sale.sh: no $SK_BIN/seckill-front" >&2; exit 2; }
[ -x "$SK_BENCH_BIN/const409" ] || { echo "bench/sale.sh: no $SK_BENCH_BIN/const409 (cmake --build build)" >&2; exit 2; }

run=bsale_$$_$RANDOM
prefix=$run
topic="bench.sale.$$.$RANDOM"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(freeport)
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')   # the front's /readyz, /metrics (SECKILL_OPS_ADDR, DESIGN.md 15)
cport=$(freeport)
rc="redis-cli -h 127.0.0.1 -p 6379"
vf=$((RANDOM * 1000 + 21))       # the sale's voucher
vr=$((vf + 1))                   # the raw EVALSHA load's sold-out voucher
now_ms=$(( $(date +%s) * 1000 ))
extra=$(( (48 + 24) * 3600 * 1000 ))
seed() { bench_seed "$rc" "$prefix" "$1" "$2" "$now_ms" "$3"; }  # seed ID STOCK N
sum_buckets() {  # sum_buckets ID: total Redis stock and buyers (users minus _) over buckets
  local b st=0 us=0
  for ((b = 0; b < buckets; b++)); do
    st=$((st + $($rc get "$prefix:{v:$1:$b}:stock")))
    us=$((us + $($rc hlen "$prefix:{v:$1:$b}:users") - 1))
  done
  echo "$st $us"
}
# Its own database: the front leases its worker id in tb_worker_lease (DESIGN.md 2).
db="bench_sale_$$_$RANDOM"
export SECKILL_MYSQL_URL="mysql://root@127.0.0.1:3306/$db"
cleanup() {
  [ -n "${fpid:-}" ] && kill -TERM "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null || true
  [ -n "${cpid:-}" ] && kill -TERM "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null || true
  $rc --scan --pattern "$prefix:*" | xargs -r -n 100 $rc del >/dev/null || true
  mysql -uroot -h127.0.0.1 -P3306 -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
  rm -f "/tmp/$run.front.log"
}
trap cleanup EXIT
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/sale.sh: db migrate failed" >&2; exit 1; }
seed $vf "$stock" "$buckets"
seed $vr 0 1
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc)"
echo "sale: stock=$stock buyers=$buyers conns=$conns wrk_threads=$threads seconds=$secs http_threads=$http_threads buckets=$buckets"

# ---- 1. the sale
SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_REDIS_PREFIX=$prefix SECKILL_TOPIC=$topic \
  SECKILL_TOPIC_PARTITIONS=${SECKILL_TOPIC_PARTITIONS:-6} SECKILL_LOG_LEVEL=warn \
  SECKILL_HTTP_THREADS=$http_threads SECKILL_WORKER_LEASE_MS=${SECKILL_WORKER_LEASE_MS:-6000} \
  "$SK_BIN/seckill-front" 2>"/tmp/$run.front.log" &
fpid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null || { echo "front not ready" >&2; cat "/tmp/$run.front.log" >&2; exit 1; }
wrk_run() {  # wrk_run URL USER_BASE: prints sale.lua's lines
  BENCH_VOUCHER=$vf BENCH_USER_BASE=$2 BENCH_BUYERS=$buyers BENCH_THREADS=$threads \
    wrk -t"$threads" -c"$conns" -d"${secs}s" -s "$here/sale.lua" "$1" | grep -E '^(requests|rate|p50_ms)='
}
fout=$(wrk_run "http://127.0.0.1:$port" 1000000000)
echo "$fout" | sed 's/^/front_/'
front_rate=$(echo "$fout" | sed -n 's/^rate=//p')
metrics=$(curl -sf "http://127.0.0.1:$oport/metrics")
[ -n "${BENCH_METRICS_OUT:-}" ] && echo "$metrics" >"$BENCH_METRICS_OUT"
code() { echo "$metrics" | sed -n "s/^seckill_front_requests_total{code=\"$1\"} //p"; }
# (the 503s include the /readyz polls made while the front was starting)
echo "front_answers: 202=$(code 202) 409=$(code 409) 503=$(code 503) other=$(code other)"
causes=$(echo "$metrics" | sed -n 's/^seckill_front_unavailable_total{cause="\([a-z_]*\)"} \([1-9][0-9]*\)$/\1=\2/p' | tr '\n' ' ')
echo "front_503_causes: ${causes:-none}"
echo "front_soldout_cache: ms=${SECKILL_SOLDOUT_CACHE_MS:-1000} hits=$(echo "$metrics" | sed -n 's/^seckill_front_soldout_cache_hits_total //p')"
admitted=$(code 202)
read -r left holders < <(sum_buckets $vf)
echo "buckets_after: $(for ((b = 0; b < buckets; b++)); do printf 'b%d=%s ' $b "$($rc get "$prefix:{v:$vf:$b}:stock")"; done)"
rss_kb=$(awk '/VmHWM/ {print $2}' /proc/$fpid/status)
echo "front_rss_peak_mb=$((rss_kb / 1024))"
kill -TERM $fpid; wait $fpid || true; fpid=

# ---- 2. raw Redis: deduct.lua on a sold-out voucher
rout=$(bench_deduct_evalsha "$prefix" "$vr" "$conns" "$secs" "$extra" 20000)
echo "redis_benchmark: $rout"
redis_rate=$(echo "$rout" | bench_rate_of)
[ "$($rc get "$prefix:{v:$vr:0}:stock")" = 0 ] || echo "WARN: the sold-out voucher's stock moved"

# ---- 3. the HTTP layer: a constant 409
"$SK_BENCH_BIN/const409" "127.0.0.1:$cport" "$http_threads" &
cpid=$!
for _ in $(seq 1 50); do
  curl -s -o /dev/null "http://127.0.0.1:$cport/" 2>/dev/null && break
  sleep 0.1
done
cout=$(wrk_run "http://127.0.0.1:$cport" 1000000000)
echo "$cout" | sed 's/^/const_/'
const_rate=$(echo "$cout" | sed -n 's/^rate=//p')
kill -TERM $cpid; wait $cpid || true; cpid=

# ---- verdict
oversell=$(( admitted > stock ? admitted - stock : 0 ))
undersell=$(( admitted < stock ? stock - admitted : 0 ))
echo "sale_check: admitted_202=$admitted stock=$stock redis_stock_left=$left users_in_hash=$holders oversell=$oversell undersell=$undersell"
ok=1
[ "$admitted" = "$stock" ] && [ "$left" = 0 ] && [ "$holders" = "$stock" ] || ok=0
echo "front_rate=$front_rate redis_rate=${redis_rate%.*} const_rate=$const_rate"
python3 -c "print('ratio_redis=%.2f' % (float('$front_rate') / float('$redis_rate')))"
python3 -c "print('ratio=%.2f' % (float('$front_rate') / float('$const_rate')))"
[ $ok = 1 ] || { echo "FAIL: oversell or undersell (see sale_check)" >&2; exit 1; }
