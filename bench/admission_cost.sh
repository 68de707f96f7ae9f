#!/usr/bin/env bash
# bench/admission_cost.sh: the Redis cost of one admission, current scripts vs the v4
# release's (bench/v4/lua, byte-identical to lua/ at 15298f7), in one run
# (DESIGN.md 4 "Cost of an admission"). One command; measured, never asserted.
#
# On a PRIVATE redis-server (a spare port, stopped at the end) it loads deduct.lua as the
# binaries embed it: the current one from the build (build/generated/
# sk_lua_embedded.c.deduct.lua, written by cmake/embed_lua.cmake) and the v4 one composed
# from bench/v4/lua by the v4 embedding rule (lib/validate.lua, lib/expiry.lua, the other
# lib/ files in name order, then the script). Then, ROUNDS times, alternating current and
# v4, for the admitted path (large stock, fresh traceId/orderId/userId per call) and the
# sold-out path (stock 0, one bucket: the code 10005), it runs build/bench/evalsha_load
# (CONNS connections, each with one EVALSHA in flight, as redis-benchmark -c CONNS; it
# exists because redis-benchmark cannot put one traceId in both ARGV and the give-up
# fence key, nor the clock in `ts`) for SECS seconds and reads usec_per_call of
# cmdstat_evalsha (INFO commandstats: the time inside the script, its commands included).
# Prints the medians:
#   admit_us= v4_admit_us= soldout_us= v4_soldout_us= ratio= (admit_us / v4_admit_us)
#   floor_admit_us= floor_ratio= (bench/floor/deduct_floor.lua: the nine commands the
#   admitted path must run and no other Lua work, the lower bound of any deduct.lua that
#   keeps DESIGN.md 4's answers, over v4_admit_us)
# then Redis memory per admitted purchase (INFO memory used_memory delta over MEM_N fresh
# admissions, each script on its own voucher): mem_admit_b= v4_mem_admit_b=;
# with ADMISSION_CALLGRIND=1 the Redis instructions per call of each case (redis-server
# under valgrind --tool=callgrind, a few hundred calls; load-independent): EVALSHA
# inclusive (evalShaCommand and all it calls: what usec_per_call times), and the process
# total;
# and last, unless ADMISSION_FRONT=0, bench/front.sh (the front's all-admitted rate as a
# ratio of raw EVALSHA of the current deduct.lua; it uses the local stack): front_ratio=.
# Every call must answer what its path answers: a run with error replies (e.g. `ts`
# outside deduct.lua's +-5 s) is reported and the script exits 1.
#
# Env: BUILD (build), ADMISSION_SHORT=1 (a smoke run: 1 s per case, MEM_N 2000, front 2 s;
#      its figures mean nothing), ADMISSION_SECS (5), ADMISSION_ROUNDS (3),
#      ADMISSION_CONNS (32), ADMISSION_MEM_N (100000), ADMISSION_CALLGRIND (0),
#      ADMISSION_FRONT (1), ADMISSION_KEEP=1 keeps the scratch directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${BUILD:-$here/../build}
gen=$build/generated
load=$build/bench/evalsha_load
short=${ADMISSION_SHORT:-0}
if [ "$short" = 1 ]; then d_secs=1; d_mem=2000; d_front=2; else d_secs=5; d_mem=100000; d_front=10; fi
secs=${ADMISSION_SECS:-$d_secs}
rounds=${ADMISSION_ROUNDS:-3}
conns=${ADMISSION_CONNS:-32}
mem_n=${ADMISSION_MEM_N:-$d_mem}
cg=${ADMISSION_CALLGRIND:-0}
bench_require bench/admission_cost.sh redis-server redis-cli python3
[ "$cg" = 1 ] && bench_require bench/admission_cost.sh valgrind callgrind_control callgrind_annotate
[ -f "$gen/sk_lua_embedded.c.deduct.lua" ] && [ -x "$load" ] ||
  { echo "bench/admission_cost.sh: build first (cmake --build $build)" >&2; exit 2; }

tmp=$(mktemp -d)
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rpid=
start_redis() {  # start_redis [valgrind args...]
  "$@" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --maxmemory-policy noeviction >"$tmp/redis.log" 2>&1 &
  rpid=$!
  for _ in $(seq 1 300); do redis-cli -p "$rport" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "bench/admission_cost.sh: redis-server did not start" >&2; cat "$tmp/redis.log" >&2; exit 1
}
stop_redis() {
  [ -n "$rpid" ] && kill -TERM "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null || true
  rpid=
}
cleanup() {
  stop_redis
  [ -n "${ADMISSION_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
rc="redis-cli -p $rport"

# The two bodies, as the binaries embed them.
cp "$gen/sk_lua_embedded.c.deduct.lua" "$tmp/cur.lua"
v4=$here/v4/lua
{ cat "$v4/lib/validate.lua"; echo; cat "$v4/lib/expiry.lua"
  for f in $(ls "$v4"/lib/*.lua | sort); do
    case ${f##*/} in validate.lua|expiry.lua) ;; *) echo; cat "$f" ;; esac
  done
  echo; cat "$v4/deduct.lua"; } >"$tmp/v4.lua"
# The current script's calling convention: v5 (5 keys, ARGV ... ts) or still v4's.
cur_v5=0
grep -q 'expected 5 keys' "$tmp/cur.lua" && cur_v5=1

now_ms=$(( $(date +%s) * 1000 ))
extra=$(( (48 + 24) * 3600 * 1000 ))
kp=ac
# args_of WHICH VOUCHER: the EVALSHA line (after the SHA) for script WHICH (cur|v4).
args_of() {
  local which=$1 v=$2 t="$kp:{v:$2:0}"
  if [ "$which" = cur ] && [ "$cur_v5" = 1 ]; then
    echo 5 "$t:meta" "$t:stock" "$t:users" "$t:trace" "$t:f:__id1__" __id1__ __id2__ __id3__ "$v" __ts__
  else
    echo 4 "$t:meta" "$t:stock" "$t:users" "$t:trace" __id1__ __id2__ __id3__ "$v" 1 "$extra"
  fi
}
usec_per_call() { $rc info commandstats | tr -d '\r' |
  sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p'; }
used_memory() { $rc info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p'; }
bad=0
# run_case WHICH SHA VOUCHER -n N | -d S: one load; prints usec_per_call, the driver's line
# to $tmp/last.
run_case() {
  local which=$1 sha=$2 v=$3 out
  shift 3
  $rc config resetstat >/dev/null
  # shellcheck disable=SC2046
  out=$("$load" -p "$rport" -c "$conns" "$@" -- EVALSHA "$sha" $(args_of "$which" "$v"))
  echo "$out" >"$tmp/last"
  case $out in *" errors=0"*) ;; *) echo "ERROR $which voucher $v: $out" >&2; bad=1 ;; esac
  usec_per_call
}

start_redis
sha_cur=$($rc script load "$(cat "$tmp/cur.lua")")
sha_v4=$($rc script load "$(cat "$tmp/v4.lua")")
sha_floor=$($rc script load "$(cat "$here/floor/deduct_floor.lua")")
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); conns=$conns secs=$secs rounds=$rounds; current deduct.lua convention: $([ $cur_v5 = 1 ] && echo v5 || echo v4)"
v=$((RANDOM * 1000 + 71))
# vouchers: cur admit v, cur sold out v+1, v4 admit v+2, v4 sold out v+3
bench_seed "$rc" "$kp" "$v" 1000000000 "$now_ms"
bench_seed "$rc" "$kp" $((v + 1)) 0 "$now_ms"
bench_seed "$rc" "$kp" $((v + 2)) 1000000000 "$now_ms"
bench_seed "$rc" "$kp" $((v + 3)) 0 "$now_ms"
bench_seed "$rc" "$kp" $((v + 4)) 1000000000 "$now_ms"
declare -A res
for r in $(seq 1 "$rounds"); do
  for which in cur v4; do
    if [ "$which" = cur ]; then sha=$sha_cur; va=$v; else sha=$sha_v4; va=$((v + 2)); fi
    res[$which.admit]+="$(run_case "$which" "$sha" "$va" -d "$secs") "
    echo "round $r $which admit: usec_per_call=$(echo "${res[$which.admit]}" | awk '{print $NF}') $(cat "$tmp/last")"
    res[$which.soldout]+="$(run_case "$which" "$sha" $((va + 1)) -d "$secs") "
    echo "round $r $which soldout: usec_per_call=$(echo "${res[$which.soldout]}" | awk '{print $NF}') $(cat "$tmp/last")"
  done
  # The floor: the nine commands of the admitted path and nothing else (bench/floor/).
  res[floor.admit]+="$(run_case cur "$sha_floor" $((v + 4)) -d "$secs") "
  echo "round $r floor admit: usec_per_call=$(echo "${res[floor.admit]}" | awk '{print $NF}') $(cat "$tmp/last")"
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
admit=$(echo "${res[cur.admit]}" | median)
v4_admit=$(echo "${res[v4.admit]}" | median)
echo "admit_us=$admit"
echo "v4_admit_us=$v4_admit"
echo "soldout_us=$(echo "${res[cur.soldout]}" | median)"
echo "v4_soldout_us=$(echo "${res[v4.soldout]}" | median)"
python3 -c "print('ratio=%.2f' % (float('$admit') / float('$v4_admit')))"
floor=$(echo "${res[floor.admit]}" | median)
echo "floor_admit_us=$floor"
python3 -c "print('floor_ratio=%.2f' % (float('$floor') / float('$v4_admit')))"

# Memory per admitted purchase: MEM_N admissions on a fresh voucher per script (the
# entry T, users[U]; the claim record T:c the consumer adds later is not in it).
for which in cur v4; do
  if [ "$which" = cur ]; then vm=$((v + 10)); sha=$sha_cur; else vm=$((v + 11)); sha=$sha_v4; fi
  bench_seed "$rc" "$kp" "$vm" 1000000000 "$now_ms"
  m0=$(used_memory)
  run_case "$which" "$sha" "$vm" -n "$mem_n" >/dev/null
  m1=$(used_memory)
  n_adm=$(( 1000000000 - $($rc get "$kp:{v:$vm:0}:stock") ))
  name=mem_admit_b; [ "$which" = v4 ] && name=v4_mem_admit_b
  python3 -c "print('$name=%.0f (%d admissions, used_memory +%d B)' % (($m1 - $m0) / max($n_adm, 1), $n_adm, $m1 - $m0))"
done
stop_redis

# Instructions per call (callgrind): load-independent; a few hundred calls per case.
if [ "$cg" = 1 ]; then
  start_redis valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out"
  sha_cur=$($rc script load "$(cat "$tmp/cur.lua")")
  sha_v4=$($rc script load "$(cat "$tmp/v4.lua")")
  bench_seed "$rc" "$kp" "$v" 1000000000 "$now_ms"
  bench_seed "$rc" "$kp" $((v + 1)) 0 "$now_ms"
  bench_seed "$rc" "$kp" $((v + 2)) 1000000000 "$now_ms"
  bench_seed "$rc" "$kp" $((v + 3)) 0 "$now_ms"
  cg_n=${ADMISSION_CG_N:-400}
  for c in "cur admit $v" "cur soldout $((v + 1))" "v4 admit $((v + 2))" "v4 soldout $((v + 3))"; do
    set -- $c
    sha=$sha_cur; [ "$1" = v4 ] && sha=$sha_v4
    run_case "$1" "$sha" "$3" -n 640 >/dev/null    # warm-up: users past hash-max-listpack-entries (512)
    callgrind_control -z "$rpid" >/dev/null 2>&1
    run_case "$1" "$sha" "$3" -n "$cg_n" >/dev/null
    callgrind_control -d "$rpid" >/dev/null 2>&1
    f=$(ls -t "$tmp"/cg.out.* | head -1)
    instr=$(sed -n 's/^summary: *//p' "$f")
    # EVALSHA inclusive (what usec_per_call times): evalShaCommand's inclusive cost
    incl=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*:evalShaCommand .*/\1/p' | head -1 | tr -d ,)
    name=${2}_instructions; [ "$1" = v4 ] && name=v4_$name
    echo "$name=$(( ${incl:-0} / cg_n )) (callgrind, EVALSHA inclusive; process total $(( instr / cg_n )), idle time and the calls' network I/O included)"
  done
  stop_redis
fi

if [ "${ADMISSION_FRONT:-1}" = 1 ]; then
  fout=$(BENCH_SECONDS=${ADMISSION_FRONT_SECS:-$d_front} BENCH_CONNS=${BENCH_CONNS:-64} \
         "$here/front.sh" 2>&1) || { echo "$fout" >&2; echo "bench/front.sh failed" >&2; exit 1; }
  echo "$fout" | sed 's/^/front: /'
  echo "front_ratio=$(echo "$fout" | sed -n 's/^ratio=//p' | tail -1)"
fi
[ "$bad" = 0 ] || { echo "bench/admission_cost.sh: some calls answered an error: figures invalid" >&2; exit 1; }
