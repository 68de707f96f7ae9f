#!/usr/bin/env bash
# bench/paths.sh: the cost of one purchase on each path of seckill-front, measured (not
# asserted): front CPU-µs per request (utime+stime of the process from /proc), Redis
# CPU-µs per request (INFO cpu) and Redis commands per request (INFO commandstats, the
# commands run inside deduct.lua included), on a PRIVATE redis-server so that only this
# front's work is counted (Kafka and its broker are the shared ones; the front publishes
# to a topic of its own that nobody consumes).
# Paths, each with wrk for BENCH_SECONDS at BENCH_CONNS connections:
#   admit      every purchase admitted (distinct buyers, large stock): deduct.lua OK,
#              produce, delivery report, 202
#   reject     sold-out voucher, SECKILL_SOLDOUT_CACHE_MS=0: deduct.lua answers 10005
#   cached     sold-out voucher, the local sold-out cache on (1000 ms): 10005 without Redis
# Env: SK_BIN (build/bin), BENCH_SECONDS (8), BENCH_CONNS (64), BENCH_THREADS (2),
#      PERF=1: also `perf record` the front during each path and print its top symbols
#      (PERF_CALLERS=SYMBOL: print SYMBOL's callers instead, from DWARF call graphs);
#      PATHS: which paths to run (default "admit reject cached").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
secs=${BENCH_SECONDS:-8}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
for t in wrk redis-server redis-cli curl python3; do
  command -v $t >/dev/null || { echo "bench/paths.sh: $t not found" >&2; exit 2; }
done
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(freeport)
run=bpaths_$$_$RANDOM
tmp=$(mktemp -d)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
  --maxmemory-policy noeviction >"$tmp/redis.log" 2>&1 &
rpid=$!
fpid=
cleanup() {
  [ -n "$fpid" ] && kill -TERM "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null || true
  kill -TERM "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
  [ -n "${PATHS_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
rc="redis-cli -p $rport"
for _ in $(seq 1 50); do $rc ping >/dev/null 2>&1 && break; sleep 0.1; done
now_ms=$(( $(date +%s) * 1000 ))
seed() {  # seed ID STOCK
  $rc hset "$run:{v:$1:0}:meta" begin_ms $((now_ms - 60000)) end_ms $((now_ms + 3600000)) status 1 >/dev/null
  $rc set "$run:{v:$1:0}:stock" "$2" >/dev/null
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
redis_cpu_us() { $rc info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%d", s * 1e6}'; }
redis_cmds() { $rc info commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([a-z|_-]*\):calls=\([0-9]*\).*/\1 \2/p' |
               grep -v -E '^(info|ping|config|script|client|hello|command)[| ]' | awk '{s += $2} END {print s + 0}'; }
metric() { curl -sf "http://127.0.0.1:$port/metrics" | sed -n "s/^$1 //p"; }
hz=$(getconf CLK_TCK)
cg=fp; [ -n "${PERF_CALLERS:-}" ] && cg=dwarf
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); wrk -t$threads -c$conns -d${secs}s"

path() {  # path NAME CACHE_MS VOUCHER STOCK
  local name=$1 cache=$2 v=$3 port0
  seed "$v" "$4"
  port=$(freeport)
  SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_REDIS_URL=redis://127.0.0.1:$rport/0 \
    SECKILL_REDIS_PREFIX=$run SECKILL_TOPIC=bench.paths.$run SECKILL_TOPIC_PARTITIONS=2 \
    SECKILL_LOG_LEVEL=warn SECKILL_SOLDOUT_CACHE_MS=$cache SECKILL_WORKER_LEASE_MS=6000 \
    "$SK_BIN/seckill-front" 2>"$tmp/front.$name.log" &
  fpid=$!
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
  # one purchase first: the sold-out paths get their first 10005 (and the cache its mark)
  curl -s -o /dev/null -X POST -H 'X-User-Id: 7' "http://127.0.0.1:$port/api/v1/vouchers/$v/seckill"
  local c0 r0 n0 a0 c1 r1 n1 a1 perfpid=
  c0=$(cpu_ticks $fpid); r0=$(redis_cpu_us); n0=$(redis_cmds)
  a0=$(curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^seckill_front_requests_total{code="\(202\|409\)"} //p' | awk '{s+=$1} END {print s}')
  if [ "${PERF:-0}" = 1 ]; then
    perf record -F 499 --call-graph "$cg" -p $fpid -o "$tmp/perf.$name" -- sleep "$secs" >/dev/null 2>&1 &
    perfpid=$!
  fi
  BENCH_VOUCHER=$v BENCH_USER_BASE=1000000000 wrk -t"$threads" -c"$conns" -d"${secs}s" \
    -s "$here/front.lua" "http://127.0.0.1:$port" >"$tmp/wrk.$name" 2>&1 || true
  if [ -n "$perfpid" ]; then wait "$perfpid" || true; fi
  c1=$(cpu_ticks $fpid); r1=$(redis_cpu_us); n1=$(redis_cmds)
  a1=$(curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^seckill_front_requests_total{code="\(202\|409\)"} //p' | awk '{s+=$1} END {print s}')
  local hits; hits=$(metric seckill_front_soldout_cache_hits_total)
  kill -TERM $fpid; wait $fpid || true; fpid=
  python3 - "$name" "$c0" "$c1" "$hz" "$r0" "$r1" "$n0" "$n1" "$a0" "$a1" "$hits" "$secs" <<'EOF'
import sys
name, c0, c1, hz, r0, r1, n0, n1, a0, a1, hits, secs = sys.argv[1:]
n = int(a1) - int(a0)
if n <= 0:
    print("%s: no answers" % name); sys.exit(0)
front_us = (int(c1) - int(c0)) * 1e6 / int(hz) / n
redis_us = (int(r1) - int(r0)) / n
cmds = (int(n1) - int(n0)) / n
print("%-7s requests=%d rate=%.0f/s front_cpu_us=%.1f redis_cpu_us=%.1f redis_cmds=%.2f cache_hits=%s"
      % (name, n, n / float(secs), front_us, redis_us, cmds, hits))
EOF
  if [ "${PERF:-0}" = 1 ] && [ -n "${PERF_CALLERS:-}" ]; then
    perf report -i "$tmp/perf.$name" --no-children -S "$PERF_CALLERS" -G --stdio 2>/dev/null |
      grep -v '^#' | grep -v '^$' | head -40 | sed "s/^/  $name callers: /" || true
  elif [ "${PERF:-0}" = 1 ]; then
    perf report -i "$tmp/perf.$name" --no-children --sort symbol --stdio 2>/dev/null |
      grep -E '^ +[0-9.]+%' | head -12 | sed -e "s/^/  $name perf: /" -e 's/ *- *- *$//' || true
    perf report -i "$tmp/perf.$name" --no-children --sort dso --stdio 2>/dev/null |
      grep -E '^ +[0-9.]+%' | head -6 | sed -e "s/^/  $name perf by object: /" || true
  fi
}
v=$((RANDOM * 1000 + 31))
for p in ${PATHS:-admit reject cached}; do
  case $p in
  admit) path admit 1000 "$v" 100000000 ;;
  reject) path reject 0 $((v + 1)) 0 ;;
  cached) path cached 1000 $((v + 2)) 0 ;;
  *) echo "bench/paths.sh: unknown path $p" >&2; exit 2 ;;
  esac
done
