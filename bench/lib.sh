# bench/lib.sh: shell functions shared by the bench scripts (sourced, not run).
# Redis is reached at 127.0.0.1:6379, the stack's default.
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/apt.sh"

# bench_require NAME TOOL...: every TOOL on PATH, or its Debian package installed by
# sk_apt_install (scripts/lib/apt.sh, as scripts/test.sh installs its own); exit 2 with
# the apt-get line to run when it cannot install. NAME prefixes the messages.
bench_require() {
  local name=$1 t pkg missing=() pkgs=()
  shift
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 && continue
    case $t in
      redis-cli|redis-benchmark) pkg=redis-tools ;;
      redis-server) pkg=redis-server ;;
      mysql) pkg=mariadb-client ;;
      cc) pkg=build-essential ;;
      perf) pkg=linux-perf ;;
      callgrind_control|callgrind_annotate) pkg=valgrind ;;
      *) pkg=$t ;;   # wrk, curl, python3, pkg-config, valgrind: package = command
    esac
    missing+=("$t")
    pkgs+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
  echo "$name: installing ${pkgs[*]} (for ${missing[*]})" >&2
  sk_apt_install "" "${pkgs[@]}" ||
    { echo "$name: install them with: apt-get install ${pkgs[*]}" >&2; exit 2; }
  for t in "${missing[@]}"; do
    command -v "$t" >/dev/null 2>&1 || { echo "$name: $t still not found after installing" >&2; exit 2; }
  done
}

# bench_deduct_evalsha KEY_PREFIX VOUCHER CONNS SECS EXTRA_MS CAL_N
# EVALSHA of deduct.lua, loaded as the binaries embed it (the build's
# generated/sk_lua_embedded.c.deduct.lua, written by cmake/embed_lua.cmake; BUILD, default
# build/), on VOUCHER's bucket 0 under KEY_PREFIX at 127.0.0.1:6379 for SECS seconds, by
# build/bench/evalsha_load (redis-benchmark cannot put one traceId in ARGV and in the
# give-up fence key, nor the clock in `ts`): a fresh traceId, orderId and userId per call.
# It saturates Redis: CONNS connections (at least 16) shared by BENCH_EVALSHA_THREADS (2)
# threads, BENCH_EVALSHA_PIPELINE (8) calls in flight on each, so the rate is Redis's own
# limit for this script, and its line says how busy Redis was (redis_busy = INFO
# used_cpu_sys + used_cpu_user over the run's wall time; ~1.0 when Redis is the limit).
# CAL_N is unused (redis-benchmark needed a calibration run). EXTRA_MS is passed to a
# deduct.lua of the v4 convention only. Prints one line ending in "R requests per second"
# (bench_rate_of), the driver's counts and redis_busy (bench_busy_of).
bench_deduct_evalsha() {
  local kp=$1 v=$2 conns=$3 secs=$4 extra=$5 b gen sha out t
  local lt=${BENCH_EVALSHA_THREADS:-2} lp=${BENCH_EVALSHA_PIPELINE:-8}
  [ "$conns" -ge 16 ] || conns=16
  b=${BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build}
  gen=$b/generated/sk_lua_embedded.c.deduct.lua
  sha=$(redis-cli -h 127.0.0.1 -p 6379 script load "$(cat "$gen")")
  t="$kp:{v:$v:0}"
  if grep -q 'expected 5 keys' "$gen"; then
    out=$("$b/bench/evalsha_load" -p 6379 -c "$conns" -t "$lt" -P "$lp" -d "$secs" -- EVALSHA "$sha" 5 \
      "$t:meta" "$t:stock" "$t:users" "$t:trace" "$t:f:__id1__" __id1__ __id2__ __id3__ "$v" __ts__)
  else
    out=$("$b/bench/evalsha_load" -p 6379 -c "$conns" -t "$lt" -P "$lp" -d "$secs" -- EVALSHA "$sha" 4 \
      "$t:meta" "$t:stock" "$t:users" "$t:trace" __id1__ __id2__ __id3__ "$v" 1 "$extra")
  fi
  echo "EVALSHA deduct.lua: $(echo "$out" | sed -n 's/.* rate=\([0-9]*\).*/\1/p') requests per second ($out)"
}

# bench_busy_of: the redis_busy=F figure of a bench_deduct_evalsha line on stdin ("?" if none).
bench_busy_of() {
  sed -n 's/.* redis_busy=\([0-9.?]*\).*/\1/p' | grep . || echo "?"
}

# bench_redis_cpu: Redis's used_cpu_sys + used_cpu_user (s) from INFO cpu (127.0.0.1:6379).
bench_redis_cpu() {
  redis-cli -h 127.0.0.1 -p 6379 info cpu | tr -d '\r' |
    awk -F: '$1 == "used_cpu_sys" || $1 == "used_cpu_user" { s += $2 } END { printf "%.3f\n", s }'
}

# bench_pid_of_port PORT: the pid of the process listening on 127.0.0.1:PORT (ss -ltnp;
# empty when ss cannot name it, e.g. not root).
bench_pid_of_port() {
  ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1
}

# bench_pid_cpu_ticks PID: utime + stime of PID and all its threads (clock ticks,
# /proc/PID/stat fields 14 and 15); empty when PID is empty or gone.
bench_pid_cpu_ticks() {
  [ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 0
  # the command name (field 2) may hold spaces: count fields after its closing ')'
  sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# bench_us_per A B N UNIT: (B - A) CPU over N requests in microseconds per request; UNIT is
# ticks (clock ticks, getconf CLK_TCK) or s. "?" when a figure is missing.
bench_us_per() {
  python3 -c "
import os, sys
a, b, n, unit = sys.argv[1:5]
if not a or not b or not n or int(n) == 0: print('?'); sys.exit(0)
hz = os.sysconf('SC_CLK_TCK') if unit == 'ticks' else 1
print('%.1f' % ((float(b) - float(a)) / hz * 1e6 / int(n)))" "$1" "$2" "$3" "$4"
}

# bench_now_s: a monotonic-enough wall clock in seconds with ms (date +%s.%N).
bench_now_s() {
  date +%s.%N
}

# bench_busy CPU0 CPU1 T0 T1: Redis's busy fraction over a run (CPU seconds / wall seconds).
bench_busy() {
  python3 -c "print('%.2f' % ((float('$2') - float('$1')) / max(float('$4') - float('$3'), 1e-9)))"
}

# bench_seed RC KEY_PREFIX VOUCHER STOCK NOW_MS [N]: VOUCHER on sale (began a minute
# before NOW_MS, ends an hour after) with N buckets (1), laid out as preheat does
# (DESIGN.md 4): every bucket's stock (STOCK/N, the remainder one each to the first),
# users and trace holding the placeholder _, meta (buckets=N) written last, bucket 0's
# last of all. deduct.lua answers 10004 for a bucket with any key missing. RC is the
# redis-cli command line (word-split on purpose).
bench_seed() {
  local rc=$1 kp=$2 v=$3 stock=$4 now=$5 n=${6:-1} b share
  for ((b = n - 1; b >= 0; b--)); do
    share=$(( stock / n + (b < stock % n ? 1 : 0) ))
    $rc set "$kp:{v:$v:$b}:stock" "$share" >/dev/null
    $rc hset "$kp:{v:$v:$b}:users" _ _ >/dev/null
    $rc hset "$kp:{v:$v:$b}:trace" _ _ >/dev/null
    $rc hset "$kp:{v:$v:$b}:meta" begin_ms $((now - 60000)) end_ms $((now + 3600000)) \
      status 1 buckets "$n" >/dev/null
  done
}

# bench_rate_of: the requests per second of a redis-benchmark summary line on stdin.
bench_rate_of() {
  sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p'
}

# bench_wait_ready OPS_PORT LOG: wait up to 60 s for the front whose operations listener
# (SECKILL_OPS_ADDR) is 127.0.0.1:OPS_PORT to answer /readyz 200; if it does not, print LOG (the front's stderr) and exit 1.
bench_wait_ready() {
  local i
  for i in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  curl -sf "http://127.0.0.1:$1/readyz" >/dev/null || { echo "front not ready" >&2; cat "$2" >&2; exit 1; }
}
