#!/usr/bin/env bash
# bench/scripts.sh: what each Lua script costs Redis per call, measured (not asserted), on
# a PRIVATE redis-server so that only these calls are counted: usec_per_call of EVALSHA
# (INFO commandstats: time inside the script, commands included), redis-server CPU-µs per
# call (INFO cpu: the script plus the network I/O of the call), Redis commands run per
# call (commandstats deltas, the EVALSHA itself included) and SLOWLOG entries over 100 µs.
# deduct.lua's cases run build/bench/evalsha_load (-c BENCH_CONNS -n BENCH_N; v5 puts one
# traceId in ARGV and in the give-up fence key and the clock in `ts`, which redis-benchmark
# cannot); claim.lua's runs `redis-benchmark -c BENCH_CONNS -n BENCH_N EVALSHA ...`. The
# scripts are loaded as the binaries embed them (build/generated/sk_lua_embedded.c.<name>.lua:
# the lua/lib files a script names prepended). For the comparison with v4's deduct.lua, see
# bench/admission_cost.sh.
# Cases:
#   deduct_admit       deduct.lua, large stock, a fresh traceId/orderId/userId per call
#                      (admitted: the entry)
#   deduct_soldout     deduct.lua on stock 0 (10005: the rejection path without the
#                      front's sold-out cache)
#   claim_consume      claim.lua consume of one traceId (the consumer's Redis call per
#                      batch of a voucher; BENCH_CLAIM_N traceIds per call, default 1)
# Env: BUILD (build), BENCH_N (200000), BENCH_CONNS (64), BENCH_PIPE (1: redis-benchmark
#      -P, claim_consume only), CASES (all of the above), BENCH_CALLGRIND=1: run redis-server under valgrind
#      --tool=callgrind and print instructions per call as well (independent of the
#      machine's load; the server's idle instructions over the same time subtracted; use a
#      small BENCH_N, e.g. 2000: ~100 calls/s under callgrind); SCRIPTS_KEEP=1 keeps the
#      scratch directory (its cg.out.* dumps: callgrind_annotate).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
gen=${BUILD:-$here/../build}/generated
load_bin=${BUILD:-$here/../build}/bench/evalsha_load
n=${BENCH_N:-200000}
conns=${BENCH_CONNS:-64}
pipe=${BENCH_PIPE:-1}
claim_n=${BENCH_CLAIM_N:-1}
bench_require bench/scripts.sh redis-server redis-cli redis-benchmark python3
[ -f "$gen/sk_lua_embedded.c.deduct.lua" ] && [ -x "$load_bin" ] ||
  { echo "bench/scripts.sh: build first ($gen, $load_bin)" >&2; exit 2; }
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tmp=$(mktemp -d)
cg=${BENCH_CALLGRIND:-0}
vg=()
[ "$cg" = 1 ] && vg=(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out")
"${vg[@]}" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
  --maxmemory-policy noeviction >"$tmp/redis.log" 2>&1 &
rpid=$!
cleanup() {
  kill -TERM "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
  [ -n "${SCRIPTS_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
rc="redis-cli -p $rport"
for _ in $(seq 1 100); do $rc ping >/dev/null 2>&1 && break; sleep 0.1; done
# callgrind: instructions since the last zeroing (dump, read the newest dump's summary)
cg_instr() {
  callgrind_control -d "$rpid" >/dev/null 2>&1
  sed -n 's/^summary: *//p' "$(ls -t "$tmp"/cg.out.* | head -1)"
}
idle_ips=0
if [ "$cg" = 1 ]; then
  callgrind_control -z "$rpid" >/dev/null 2>&1; sleep 5
  idle_ips=$(( $(cg_instr) / 5 ))
  echo "callgrind: idle redis-server $idle_ips instructions/s (subtracted)"
fi
$rc config set slowlog-log-slower-than 100 >/dev/null
$rc config set slowlog-max-len 100000 >/dev/null
now_ms=$(( $(date +%s) * 1000 ))
extra=$(( (48 + 24) * 3600 * 1000 ))
seed() { bench_seed "$rc" b "$1" "$2" "$now_ms"; }  # seed VOUCHER STOCK
load() { $rc script load "$(cat "$1")"; }
sha_deduct=$(load "$gen/sk_lua_embedded.c.deduct.lua")
sha_claim=$(load "$gen/sk_lua_embedded.c.claim.lua")
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); -c $conns -n $n (claim: -P $pipe)"

stats() { $rc info commandstats | tr -d '\r' |
          sed -n 's/^cmdstat_\([a-z|_-]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p' |
          grep -v -E '^(info|ping|config|script|client|hello|command|slowlog)[| ]' || true; }
cpu_us() { $rc info cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%d", s * 1e6}'; }

case_run() {  # case_run NAME DRIVER ARGS... (DRIVER rb: redis-benchmark, load: evalsha_load)
  local name=$1 driver=$2 r0 r1 out
  shift 2
  $rc config resetstat >/dev/null
  $rc slowlog reset >/dev/null
  r0=$(cpu_us)
  local t0 i1=0; t0=$(date +%s%N)
  [ "$cg" = 1 ] && callgrind_control -z "$rpid" >/dev/null 2>&1
  if [ "$driver" = load ]; then
    out=$("$load_bin" -p "$rport" -c "$conns" -n "$n" -- "$@" 2>&1)
    case $out in *" errors=0"*) ;; *) echo "bench/scripts.sh: $name answered errors: $out" >&2 ;; esac
    out="$(echo "$out" | sed -n 's/.*rate=\([0-9.]*\).*/\1/p') requests per second ($out)"
  else
    out=$(redis-benchmark -p "$rport" -c "$conns" -n "$n" -P "$pipe" -r 100000000000 -q "$@" 2>&1 |
          tr '\r' '\n' | grep 'requests per second' | tail -1)
  fi
  [ "$cg" = 1 ] && i1=$(( $(cg_instr) - idle_ips * ($(date +%s%N) - t0) / 1000000000 ))
  r1=$(cpu_us)
  stats >"$tmp/stats.$name"
  python3 - "$name" "$r0" "$r1" "$tmp/stats.$name" "$($rc slowlog len)" "$out" "$i1" <<'EOF'
import re, sys
name, r0, r1, f, slow, out, instr = sys.argv[1:]
d = {}
for line in open(f):
    k, calls, usec = line.split()
    d[k] = (int(calls), int(usec))
ev = d.get("evalsha", (0, 0))
n = ev[0]
if n == 0:
    print("%-18s no EVALSHA counted (%s)" % (name, out)); sys.exit(0)
m = re.search(r'([0-9.]+) requests per second', out)
print("%-18s calls=%d rate=%s/s evalsha_usec_per_call=%.2f redis_cpu_us_per_call=%.2f "
      "redis_cmds_per_call=%.2f slowlog_over_100us=%s"
      % (name, n, m.group(1) if m else "?", ev[1] / n, (int(r1) - int(r0)) / n,
         sum(v[0] for v in d.values()) / n, slow))
if int(instr) > 0:
    print("%-18s instructions_per_call=%.0f (callgrind; the call's network I/O included)"
          % (name, int(instr) / n))
print("%-18s commands_per_call: %s" % (name, " ".join(
    "%s=%.2f" % (k, v[0] / n) for k, v in sorted(d.items(), key=lambda kv: -kv[1][0]))))
EOF
}
deduct_cmd() {  # deduct_cmd SHA VOUCHER: v5 (sk/scripts.h), placeholders of evalsha_load
  local t="b:{v:$2:0}"
  echo EVALSHA "$1" 5 "$t:meta" "$t:stock" "$t:users" "$t:trace" "$t:f:__id1__" \
    __id1__ __id2__ __id3__ "$2" __ts__
}
v=$((RANDOM * 1000 + 41))
for c in ${CASES:-deduct_admit deduct_soldout claim_consume}; do
  case $c in
  deduct_admit) seed $v 1000000000; case_run "$c" load $(deduct_cmd "$sha_deduct" $v) ;;
  deduct_soldout) seed $((v + 2)) 0; case_run "$c" load $(deduct_cmd "$sha_deduct" $((v + 2))) ;;
  claim_consume)
    seed $((v + 3)) 0
    traces=$(for _ in $(seq 1 "$claim_n"); do printf '1__rand_int__ '; done)
    # shellcheck disable=SC2086
    case_run "$c" rb EVALSHA "$sha_claim" 2 "b:{v:$((v + 3)):0}:meta" "b:{v:$((v + 3)):0}:trace" \
      consume "$extra" $traces ;;
  *) echo "bench/scripts.sh: unknown case $c" >&2; exit 2 ;;
  esac
done
