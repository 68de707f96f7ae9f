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
#      PATHS: which paths to run (default "admit reject cached"); FRONT_ARGS: extra flags
#      for seckill-front (e.g. "-X linger.ms=5"); PATHS_CALLGRIND=1: the front under
#      valgrind --tool=callgrind, instructions per request (load-independent; use a small
#      BENCH_CONNS, e.g. 4: callgrind runs the front ~50x slower).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
SK_BIN=${SK_BIN:-$here/../build/bin}
secs=${BENCH_SECONDS:-8}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
bench_require bench/paths.sh wrk redis-server redis-cli curl python3
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(freeport)
run=bpaths_$$_$RANDOM
tmp=$(mktemp -d)
# Its own database: the front leases its worker id in tb_worker_lease (DESIGN.md 2).
db="bench_paths_$$_$RANDOM"
export SECKILL_MYSQL_URL="mysql://root@127.0.0.1:3306/$db"
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
  --maxmemory-policy noeviction >"$tmp/redis.log" 2>&1 &
rpid=$!
fpid=
cleanup() {
  [ -n "$fpid" ] && kill -TERM "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null || true
  kill -TERM "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
  mysql -uroot -h127.0.0.1 -P3306 -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
  [ -n "${PATHS_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
rc="redis-cli -p $rport"
for _ in $(seq 1 50); do $rc ping >/dev/null 2>&1 && break; sleep 0.1; done
$rc config set slowlog-log-slower-than 100 >/dev/null   # SLOWLOG: calls over 100 µs
$rc config set slowlog-max-len 100000 >/dev/null
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/paths.sh: db migrate failed" >&2; exit 1; }
now_ms=$(( $(date +%s) * 1000 ))
seed() { bench_seed "$rc" "$run" "$1" "$2" "$now_ms"; }  # seed ID STOCK
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
redis_cpu_us() { $rc info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%d", s * 1e6}'; }
# "name calls usec" per command, the bench's own commands (INFO, SLOWLOG, ...) left out
redis_stats() { $rc info commandstats | tr -d '\r' |
                sed -n 's/^cmdstat_\([a-z|_-]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p' |
                grep -v -E '^(info|ping|config|script|client|hello|command|slowlog)[| ]' || true; }
metric() { curl -sf "http://127.0.0.1:$oport/metrics" | sed -n "s/^$1 //p"; }
hz=$(getconf CLK_TCK)
fcg=${PATHS_CALLGRIND:-0}
vg=()  # PATHS_CALLGRIND=1: the front runs under callgrind (its dumps: $tmp/cg.front.PATH.*)
# the shared Kafka broker's CPU (other jobs' traffic counts too: an upper bound per request)
kpid=$(pgrep -f 'kafka\.Kafka .*server\.properties' | head -1 || true)
kafka_ticks() { [ -n "$kpid" ] && [ -r "/proc/$kpid/stat" ] && cpu_ticks "$kpid" || echo 0; }
cg=fp; [ -n "${PERF_CALLERS:-}" ] && cg=dwarf
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); wrk -t$threads -c$conns -d${secs}s"

path() {  # path NAME CACHE_MS VOUCHER STOCK
  local name=$1 cache=$2 v=$3 port0
  seed "$v" "$4"
  port=$(freeport)
  oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')   # the front's /readyz, /metrics (SECKILL_OPS_ADDR, DESIGN.md 15)
  [ "$fcg" = 1 ] && vg=(valgrind --tool=callgrind --separate-threads=no --callgrind-out-file="$tmp/cg.front.$name.%p")
  SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_REDIS_URL=redis://127.0.0.1:$rport/0 \
    SECKILL_REDIS_PREFIX=$run SECKILL_TOPIC=bench.paths.$run SECKILL_TOPIC_PARTITIONS=2 \
    SECKILL_LOG_LEVEL=warn SECKILL_SOLDOUT_CACHE_MS=$cache SECKILL_WORKER_LEASE_MS=6000 \
    SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 \
    "${vg[@]}" "$SK_BIN/seckill-front" ${FRONT_ARGS:-} 2>"$tmp/front.$name.log" &
  fpid=$!
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null ||
    { echo "bench/paths.sh: front not ready ($name)" >&2; tail -5 "$tmp/front.$name.log" >&2; exit 1; }
  # one purchase first: the sold-out paths get their first 10005 (and the cache its mark)
  curl -s -o /dev/null -X POST -H 'X-User-Id: 7' "http://127.0.0.1:$port/api/v1/vouchers/$v/seckill"
  local c0 r0 n0 a0 c1 r1 n1 a1 perfpid=
  $rc slowlog reset >/dev/null
  c0=$(cpu_ticks $fpid); r0=$(redis_cpu_us); k0=$(kafka_ticks); redis_stats >"$tmp/cmd0.$name"
  [ "$fcg" = 1 ] && callgrind_control -z "$fpid" >/dev/null 2>&1
  a0=$(curl -sf "http://127.0.0.1:$oport/metrics" | sed -n 's/^seckill_front_requests_total{code="\(202\|409\)"} //p' | awk '{s+=$1} END {print s}')
  if [ "${PERF:-0}" = 1 ]; then
    perf record -F 499 --call-graph "$cg" -p $fpid -o "$tmp/perf.$name" -- sleep "$secs" >/dev/null 2>&1 &
    perfpid=$!
  fi
  BENCH_VOUCHER=$v BENCH_USER_BASE=1000000000 wrk -t"$threads" -c"$conns" -d"${secs}s" \
    -s "$here/front.lua" "http://127.0.0.1:$port" >"$tmp/wrk.$name" 2>&1 || true
  if [ -n "$perfpid" ]; then wait "$perfpid" || true; fi
  c1=$(cpu_ticks $fpid); r1=$(redis_cpu_us); k1=$(kafka_ticks); redis_stats >"$tmp/cmd1.$name"
  local instr=0
  if [ "$fcg" = 1 ]; then
    callgrind_control -d "$fpid" >/dev/null 2>&1
    instr=$(cat "$tmp"/cg.front.$name.* 2>/dev/null | sed -n 's/^summary: *//p' | awk '{s += $1} END {print s + 0}')
  fi
  a1=$(curl -sf "http://127.0.0.1:$oport/metrics" | sed -n 's/^seckill_front_requests_total{code="\(202\|409\)"} //p' | awk '{s+=$1} END {print s}')
  local hits; hits=$(metric seckill_front_soldout_cache_hits_total)
  sed -n "s/^\(front_p50_ms=.*\)/$name   \1/p" "$tmp/wrk.$name"
  kill -TERM $fpid; wait $fpid || true; fpid=
  python3 - "$name" "$c0" "$c1" "$hz" "$r0" "$r1" "$tmp/cmd0.$name" "$tmp/cmd1.$name" "$a0" "$a1" "$hits" "$secs" \
    "$($rc slowlog len)" "$k0" "$k1" "$instr" <<'EOF'
import sys
name, c0, c1, hz, r0, r1, f0, f1, a0, a1, hits, secs, slowlen, k0, k1, instr = sys.argv[1:]
def stats(f):
    d = {}
    for line in open(f):
        k, calls, usec = line.split()
        d[k] = (int(calls), int(usec))
    return d
s0, s1 = stats(f0), stats(f1)
delta = {k: (v[0] - s0.get(k, (0, 0))[0], v[1] - s0.get(k, (0, 0))[1]) for k, v in s1.items()}
delta = {k: v for k, v in delta.items() if v[0] > 0}
n = int(a1) - int(a0)
if n <= 0:
    print("%s: no answers" % name); sys.exit(0)
front_us = (int(c1) - int(c0)) * 1e6 / int(hz) / n
redis_us = (int(r1) - int(r0)) / n
cmds = sum(v[0] for v in delta.values()) / n
ev = delta.get("evalsha", (0, 0))
print("%-7s requests=%d rate=%.0f/s front_cpu_us=%.1f redis_cpu_us=%.1f redis_cmds=%.2f cache_hits=%s "
      "broker_cpu_us=%.1f (shared broker: upper bound)"
      % (name, n, n / float(secs), front_us, redis_us, cmds, hits,
         (int(k1) - int(k0)) * 1e6 / int(hz) / n))
if int(instr) > 0:
    print("%-7s front_instructions_per_req=%.0f (callgrind, every thread; CPU figures above are valgrind's)"
          % (name, int(instr) / n))
print("%-7s evalsha_per_req=%.3f evalsha_usec_per_call=%.2f slowlog_over_100us=%s commands_per_req: %s"
      % (name, ev[0] / n, ev[1] / ev[0] if ev[0] else 0.0, slowlen,
         " ".join("%s=%.2f" % (k, v[0] / n) for k, v in sorted(delta.items(), key=lambda kv: -kv[1][0]))))
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
