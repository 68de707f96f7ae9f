#!/usr/bin/env bash
# bench/sale.sh: a realistic flash sale against seckill-front, and the two ceilings it is
# measured against, all at the same concurrency in one run:
#   1. the sale: one voucher with stock BENCH_STOCK (1,000), BENCH_BUYERS (100,000)
#      distinct buyers over BENCH_CONNS (256) connections for BENCH_SECONDS (10) with
#      wrk (bench/sale.lua); almost every request comes after the sell-out, as in a
#      real sale. Prints front req/s and p50/p99. BENCH_AUTH (both) runs it twice, on
#      two vouchers: `header` (SECKILL_AUTH=trusted-header, X-User-Id from loopback) and
#      `jwt` (SECKILL_AUTH=jwt: one RS256 token per buyer, minted before the clock starts
#      with build/tests/sk-mint-jwt, sent as `Authorization: Bearer`; DESIGN.md 15);
#      `header` or `jwt` runs one. Each run's lines and ratios carry its name.
#   2. the HTTP layer, right after each sale run: bench/const409 (build/bench/const409,
#      libmicrohttpd set up like the front, same HTTP threads) answering every request
#      with the front's fixed 409, driven by THAT run's wrk script (the header run's
#      X-User-Id requests, the JWT run's Bearer tokens: the load generator does the same
#      work per request as in the run it is the baseline of). <run>_ratio = front /
#      its own constant baseline (the last lines).
#   3. raw Redis: EVALSHA of deduct.lua (as embedded; build/bench/evalsha_load, enough
#      calls in flight to saturate Redis: bench/lib.sh bench_deduct_evalsha) on a
#      SOLD-OUT voucher, random users: Redis's own limit for a post-sell-out purchase.
#      ratio_redis = front / raw EVALSHA. Redis's busy fraction (INFO used_cpu_sys +
#      used_cpu_user over the wall time) is printed for each sale run and for the raw
#      run (redis_busy_raw, which should be >= 0.9, else a WARN line says so).
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
#      BENCH_AUTH (both | header | jwt), SK_MINT (build/tests/sk-mint-jwt),
#      BENCH_METRICS_OUT (a file prefix: FILE.<run> gets the front's /metrics after the sale, e.g. its
#      seckill_front_purchase_seconds histogram of the requests that reached Redis).
#      BENCH_PERF (a file prefix: FILE.<run> and FILE.const_<run> get a perf profile of the
#      front and of its constant server while wrk runs; BENCH_PERF_ARGS, default
#      "-e cpu-clock -g", e.g. "--call-graph dwarf" for the front's own callers). A profiled
#      run is slower: its rates are not figures.
#      Each run also prints <run>_front_cpu_us_per_req and const_<run>_cpu_us_per_req: the
#      process's CPU (utime + stime, /proc/PID/stat) over wrk's requests, which moves less
#      with the machine's load than the rates do.
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
auth=${BENCH_AUTH:-both}
SK_MINT=${SK_MINT:-$here/../build/tests/sk-mint-jwt}
bench_require bench/sale.sh wrk redis-benchmark redis-cli curl python3
[ -x "$SK_BIN/seckill-front" ] || { echo "bench/sale.sh: no $SK_BIN/seckill-front" >&2; exit 2; }
[ "$auth" = header ] || [ -x "$SK_MINT" ] || { echo "bench/sale.sh: no $SK_MINT (cmake --build build)" >&2; exit 2; }
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
vj=$((vf + 2))                   # the JWT sale's voucher
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
  rm -rf /tmp/$run.keys.*
}
trap cleanup EXIT
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/sale.sh: db migrate failed" >&2; exit 1; }
seed $vf "$stock" "$buckets"
seed $vr 0 1
seed $vj "$stock" "$buckets"
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc)"
echo "sale: stock=$stock buyers=$buyers conns=$conns wrk_threads=$threads seconds=$secs http_threads=$http_threads buckets=$buckets"

# ---- 1. the sale: sale_run LABEL VOUCHER [VAR=VALUE...] (the front's extra environment)
# sets <LABEL>_rate, <LABEL>_admitted, <LABEL>_left, <LABEL>_holders.
sale_run() {
  local label=$1 v=$2 fout metrics admitted left holders causes rss_kb fcpu0 fcpu1
  shift 2
  env "$@" SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_REDIS_PREFIX=$prefix \
    SECKILL_TOPIC=$topic SECKILL_TOPIC_PARTITIONS=${SECKILL_TOPIC_PARTITIONS:-6} SECKILL_LOG_LEVEL=warn \
    SECKILL_HTTP_THREADS=$http_threads SECKILL_WORKER_LEASE_MS=${SECKILL_WORKER_LEASE_MS:-6000} \
    "$SK_BIN/seckill-front" 2>"/tmp/$run.front.log" &
  fpid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null || { echo "front not ready" >&2; cat "/tmp/$run.front.log" >&2; exit 1; }
  rcpu0=$(bench_redis_cpu); rt0=$(bench_now_s); fcpu0=$(bench_pid_cpu_ticks "$fpid")
  if [ -n "${BENCH_PERF:-}" ]; then
    perf record ${BENCH_PERF_ARGS:--e cpu-clock -g} -o "$BENCH_PERF.$label" -p "$fpid" -- sleep "$secs" >/dev/null 2>&1 &
  fi
  fout=$(wrk_label "$label" "http://127.0.0.1:$port" "$v")
  fcpu1=$(bench_pid_cpu_ticks "$fpid")
  rt1=$(bench_now_s); rcpu1=$(bench_redis_cpu)
  echo "$fout" | sed "s/^/${label}_front_/"
  echo "${label}_front_cpu_us_per_req=$(bench_us_per "$fcpu0" "$fcpu1" "$(echo "$fout" | sed -n 's/^requests=\([0-9]*\).*/\1/p')" ticks)"
  echo "${label}_redis_busy=$(bench_busy "$rcpu0" "$rcpu1" "$rt0" "$rt1") (Redis CPU / wall time during the sale)"
  printf -v "${label}_rate" '%s' "$(echo "$fout" | sed -n 's/^rate=//p')"
  metrics=$(curl -sf "http://127.0.0.1:$oport/metrics")
  [ -n "${BENCH_METRICS_OUT:-}" ] && echo "$metrics" >"$BENCH_METRICS_OUT.$label"
  code() { echo "$metrics" | sed -n "s/^seckill_front_requests_total{code=\"$1\"} //p"; }
  # (the 503s include the /readyz polls made while the front was starting)
  echo "${label}_front_answers: 202=$(code 202) 401=$(code 401) 409=$(code 409) 503=$(code 503) other=$(code other)"
  causes=$(echo "$metrics" | sed -n 's/^seckill_front_unavailable_total{cause="\([a-z_]*\)"} \([1-9][0-9]*\)$/\1=\2/p' | tr '\n' ' ')
  echo "${label}_front_503_causes: ${causes:-none}"
  echo "${label}_front_soldout_cache: ms=${SECKILL_SOLDOUT_CACHE_MS:-1000} hits=$(echo "$metrics" | sed -n 's/^seckill_front_soldout_cache_hits_total //p')"
  admitted=$(code 202)
  read -r left holders < <(sum_buckets "$v")
  echo "${label}_buckets_after: $(for ((b = 0; b < buckets; b++)); do printf 'b%d=%s ' $b "$($rc get "$prefix:{v:$v:$b}:stock")"; done)"
  rss_kb=$(awk '/VmHWM/ {print $2}' /proc/$fpid/status)
  echo "${label}_front_rss_peak_mb=$((rss_kb / 1024))"
  kill -TERM $fpid; wait $fpid || true; fpid=
  printf -v "${label}_admitted" '%s' "${admitted:-0}"
  printf -v "${label}_left" '%s' "$left"
  printf -v "${label}_holders" '%s' "$holders"
}
wrk_run() {  # wrk_run URL VOUCHER USER_BASE: prints sale.lua's lines
  BENCH_VOUCHER=$2 BENCH_USER_BASE=$3 BENCH_BUYERS=$buyers BENCH_THREADS=$threads \
    wrk -t"$threads" -c"$conns" -d"${secs}s" -s "$here/sale.lua" "$1" | grep -E '^(requests|rate|p50_ms)='
}
wrk_label() {  # wrk_label LABEL URL VOUCHER: the wrk script of run LABEL (jwt: the tokens)
  if [ "$1" = jwt ]; then
    BENCH_TOKENS=$tokens wrk_run "$2" "$3" 1000000000
  else
    wrk_run "$2" "$3" 1000000000
  fi
}
# const_run LABEL: the constant 409 server driven by run LABEL's wrk script; sets
# const_<LABEL>_rate.
const_run() {
  local label=$1 cout ccpu0 ccpu1
  "$SK_BENCH_BIN/const409" "127.0.0.1:$cport" "$http_threads" &
  cpid=$!
  for _ in $(seq 1 50); do
    curl -s -o /dev/null "http://127.0.0.1:$cport/" 2>/dev/null && break
    sleep 0.1
  done
  ccpu0=$(bench_pid_cpu_ticks "$cpid")
  if [ -n "${BENCH_PERF:-}" ]; then
    perf record ${BENCH_PERF_ARGS:--e cpu-clock -g} -o "$BENCH_PERF.const_$label" -p "$cpid" -- sleep "$secs" >/dev/null 2>&1 &
  fi
  cout=$(wrk_label "$label" "http://127.0.0.1:$cport" "$vf")
  ccpu1=$(bench_pid_cpu_ticks "$cpid")
  echo "$cout" | sed "s/^/const_${label}_/"
  echo "const_${label}_cpu_us_per_req=$(bench_us_per "$ccpu0" "$ccpu1" "$(echo "$cout" | sed -n 's/^requests=\([0-9]*\).*/\1/p')" ticks)"
  printf -v "const_${label}_rate" '%s' "$(echo "$cout" | sed -n 's/^rate=//p')"
  kill -TERM $cpid; wait $cpid || true; cpid=
}
runs=()
case $auth in
  header) runs=(header) ;;
  jwt) runs=(jwt) ;;
  both) runs=(header jwt) ;;
  *) echo "bench/sale.sh: BENCH_AUTH must be header, jwt or both" >&2; exit 2 ;;
esac
for r in "${runs[@]}"; do
  if [ "$r" = jwt ]; then
    # One RS256 token per buyer (sub = user id), minted before the clock starts; the front
    # verifies each first-seen token and caches it (DESIGN.md 15).
    keys=$(mktemp -d /tmp/$run.keys.XXXXXX)
    tokens=$keys/tokens.txt
    "$SK_MINT" gen "$keys" >/dev/null
    t0=$(date +%s%N)
    "$SK_MINT" sign --key "$keys/rs1.pem" --kid rs1 --sub 1000000000 --count "$buyers" --exp-in 3600 \
      --iss https://idp.bench --aud seckill >"$tokens"
    echo "jwt_tokens: $(wc -l <"$tokens") RS256 minted in $(( ($(date +%s%N) - t0) / 1000000 )) ms (not timed in the sale)"
    # wrk plays the gateway: loopback is a trusted proxy, so the per-client verification
    # limit (DESIGN.md 15) does not key every buyer on 127.0.0.1.
    sale_run jwt $vj SECKILL_AUTH=jwt SECKILL_JWT_KEYS_FILE="$keys/jwks.json" \
      SECKILL_JWT_ISSUER=https://idp.bench SECKILL_JWT_AUDIENCE=seckill SECKILL_TRUSTED_PROXIES=127.0.0.1/32
  else
    sale_run header $vf SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32
  fi
  # ---- 2. its own HTTP-layer baseline, same wrk script
  const_run "$r"
done

# ---- 3. raw Redis: deduct.lua on a sold-out voucher, Redis saturated
rout=$(bench_deduct_evalsha "$prefix" "$vr" "$conns" "$secs" "$extra" 20000)
echo "redis_benchmark: $rout"
redis_rate=$(echo "$rout" | bench_rate_of)
busy=$(echo "$rout" | bench_busy_of)
echo "redis_busy_raw=$busy"
python3 -c "import sys; sys.exit(0 if '$busy' != '?' and float('$busy') >= 0.9 else 1)" ||
  echo "WARN: the raw EVALSHA run kept Redis busy $busy of the time (< 0.9): ratio_redis is not against Redis's limit"
[ "$($rc get "$prefix:{v:$vr:0}:stock")" = 0 ] || echo "WARN: the sold-out voucher's stock moved"

# ---- verdict (per sale run: zero oversell and zero undersell)
ok=1
for r in "${runs[@]}"; do
  a=${r}_admitted l=${r}_left h=${r}_holders
  oversell=$(( ${!a} > stock ? ${!a} - stock : 0 ))
  undersell=$(( ${!a} < stock ? stock - ${!a} : 0 ))
  echo "${r}_sale_check: admitted_202=${!a} stock=$stock redis_stock_left=${!l} users_in_hash=${!h} oversell=$oversell undersell=$undersell"
  [ "${!a}" = "$stock" ] && [ "${!l}" = 0 ] && [ "${!h}" = "$stock" ] || ok=0
done
echo "redis_rate=${redis_rate%.*} $(for r in "${runs[@]}"; do c=const_${r}_rate; printf 'const_%s_rate=%s ' "$r" "${!c}"; done)"
for r in "${runs[@]}"; do
  fr=${r}_rate
  echo "${r}_front_rate=${!fr}"
  python3 -c "print('${r}_ratio_redis=%.2f' % (float('${!fr}') / float('$redis_rate')))"
done
# The last lines: <run>_ratio (front / its own constant baseline), one per run.
for r in "${runs[@]}"; do
  fr=${r}_rate cr=const_${r}_rate
  python3 -c "print('${r}_ratio=%.2f' % (float('${!fr}') / float('${!cr}')))"
done
[ $ok = 1 ] || { echo "FAIL: oversell or undersell (see sale_check)" >&2; exit 1; }
