#!/usr/bin/env bash
# bench/spread.sh: a hot voucher's load over the masters of the local Redis Cluster
# (DESIGN.md 4, 4b), measured (not asserted). seckill-front runs against
# redis-cluster://127.0.0.1:7000..7002 (scripts/stack.sh up cluster; shared: this script
# never resets, flushes or stops it) and wrk buys with distinct users (bench/front.lua:
# every purchase admitted). Per master it prints the keys of the sale, the EVALSHA calls
# during the run (cmdstat_evalsha deltas; other helpers' traffic on the shared cluster is
# measured in an idle window of the same length before the run and printed as noise) and
# the deviation from the mean; last line: spread_max_dev_pct=D (target: within ±25%).
#
# Modes (SPREAD_MODE, default auto = buckets when `seckill-admin voucher create --help`
# offers --buckets):
#   buckets   one voucher of SPREAD_N buckets (default 12); its buckets' hash tags
#             {v:ID:b} land on slots fixed by the voucher id. With SPREAD_PICK=1 (default)
#             vouchers are created until one's buckets sit on the masters evenly (every
#             master within ±25% of N/masters: 12 tags at random over 3 masters do so in
#             ~38% of ids), and every placement tried is printed; SPREAD_PICK=0 takes the
#             first id as it falls.
#   vouchers  SPREAD_N one-bucket vouchers standing in for the buckets of one voucher (one
#             hash tag each, the load split evenly between them by the wrk script); with
#             SPREAD_PICK=1 vouchers are created until each master holds N/masters of them.
# Env: SK_BIN (build/bin), BENCH_SECONDS (10), BENCH_CONNS (64), BENCH_THREADS (2),
#      SPREAD_N (12), SPREAD_MODE, SPREAD_PICK (1), SPREAD_TRIES (40),
#      SPREAD_SEED (127.0.0.1:7000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNS:-64}
threads=${BENCH_THREADS:-2}
nb=${SPREAD_N:-12}
pick=${SPREAD_PICK:-1}
tries=${SPREAD_TRIES:-40}
seed_node=${SPREAD_SEED:-127.0.0.1:7000}
. "$here/lib.sh"
bench_require bench/spread.sh wrk redis-cli curl python3 mysql
sh=${seed_node%:*}; sp=${seed_node#*:}
redis-cli -h "$sh" -p "$sp" cluster info 2>/dev/null | grep -q '^cluster_state:ok' ||
  { echo "bench/spread.sh: no Redis Cluster at $seed_node (SECKILL_STACK_REDIS=cluster scripts/stack.sh up)" >&2; exit 2; }
mapfile -t masters < <(redis-cli -h "$sh" -p "$sp" cluster nodes |
  awk '$3 ~ /master/ && $3 !~ /fail/ {split($2, a, "@"); print a[1]}' | sort)
nm=${#masters[@]}
url="redis-cluster://$(IFS=,; echo "${masters[*]}")"
mode=${SPREAD_MODE:-auto}
if [ "$mode" = auto ]; then
  if "$SK_BIN/seckill-admin" voucher create --help 2>&1 | grep -q -- '--buckets'; then mode=buckets; else mode=vouchers; fi
fi

run=bspread_$$_$RANDOM
db=$run
topic="bench.spread.$$.$RANDOM"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')   # the front's /readyz, /metrics (SECKILL_OPS_ADDR, DESIGN.md 15)
export SECKILL_MYSQL_URL="mysql://root@127.0.0.1:3306/$db" SECKILL_REDIS_URL=$url \
  SECKILL_REDIS_PREFIX=$run SECKILL_TOPIC=$topic SECKILL_TOPIC_PARTITIONS=${SECKILL_TOPIC_PARTITIONS:-6} \
  SECKILL_LOG_LEVEL=warn
tmp=$(mktemp -d)
fpid=
mcli() { local m=$1; shift; redis-cli -h "${m%:*}" -p "${m#*:}" "$@"; }
cleanup() {
  [ -n "$fpid" ] && kill -TERM "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null || true
  for m in "${masters[@]}"; do
    mcli "$m" --scan --pattern "$run:*" | while read -r k; do mcli "$m" del "$k" >/dev/null; done
  done
  mysql -uroot -h127.0.0.1 -P3306 -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/spread.sh: db migrate failed" >&2; exit 1; }
now=$(date +%s)

create() {  # create [--buckets N]: a preheated voucher on sale, prints its id
  "$SK_BIN/seckill-admin" voucher create --stock 100000000 --begin $((now - 60)) \
    --end $((now + 3600)) --preheat "$@" | sed -n 's/.*"voucherId":"\([0-9]*\)".*/\1/p'
}
# stock keys of voucher $1 on each master, one count per master (masters' order)
placement() {
  local m
  for m in "${masters[@]}"; do
    mcli "$m" --scan --pattern "$run:*$1*:stock" | grep -c . || true
  done | paste -sd' '
}
even() {  # even "c1 c2 c3": every count within ±25% of the mean
  python3 -c 'import sys; c=[int(x) for x in sys.argv[1].split()]; m=sum(c)/len(c); sys.exit(0 if m and all(abs(x-m) <= 0.25*m for x in c) else 1)' "$1"
}

echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); masters: ${masters[*]}; mode=$mode N=$nb"
vouchers=()
if [ "$mode" = buckets ]; then
  # buckets usable end to end = preheat writes every bucket's keys (the front then spreads
  # buyers by home bucket); until then fall back to vouchers mode, and say so
  v=$(create --buckets "$nb")
  p=$(placement "$v")
  got=$(( $(echo "$p" | tr ' ' '+') ))
  if [ "$got" -lt "$nb" ]; then
    echo "buckets not served yet: preheat of a $nb-bucket voucher wrote $got bucket(s)' keys; measuring $nb one-bucket vouchers instead (mode=vouchers)"
    mode=vouchers
  fi
fi
if [ "$mode" = buckets ]; then
  for i in $(seq 1 "$tries"); do
    v=$(create --buckets "$nb")
    [ -n "$v" ] || { echo "bench/spread.sh: voucher create --buckets $nb failed" >&2; exit 1; }
    p=$(placement "$v")
    echo "try $i: voucher $v buckets per master: $p"
    if [ "$pick" = 0 ] || even "$p"; then vouchers=("$v"); break; fi
  done
else
  declare -A per
  made=0
  for _ in $(seq 1 "$tries"); do
    [ ${#vouchers[@]} -ge "$nb" ] && break
    v=$(create); made=$((made + 1))
    [ -n "$v" ] || { echo "bench/spread.sh: voucher create failed" >&2; exit 1; }
    p=$(placement "$v")
    j=0
    for c in $p; do [ "$c" -gt 0 ] && break; j=$((j + 1)); done
    if [ "$pick" = 0 ] || [ "${per[$j]:-0}" -lt $(( (nb + nm - 1) / nm )) ]; then
      vouchers+=("$v"); per[$j]=$(( ${per[$j]:-0} + 1 ))
    fi
  done
  echo "vouchers created: $made, used: ${#vouchers[@]}"
fi
[ ${#vouchers[@]} -gt 0 ] || { echo "bench/spread.sh: no even placement in $tries tries" >&2; exit 1; }

SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_WORKER_LEASE_MS=6000 \
  SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 "$SK_BIN/seckill-front" 2>"$tmp/front.log" &
fpid=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null || { echo "bench/spread.sh: front not ready" >&2; tail -5 "$tmp/front.log" >&2; exit 1; }

evalsha() {  # EVALSHA calls per master, one line
  local m
  for m in "${masters[@]}"; do
    mcli "$m" info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p' | grep . || echo 0
  done | paste -sd' '
}
list=$(IFS=,; echo "${vouchers[*]}")
BENCH_VOUCHERS=$list wrk -t1 -c4 -d1s -s "$here/front.lua" "http://127.0.0.1:$port" >/dev/null 2>&1 || true
i0=$(evalsha); sleep "$secs"; i1=$(evalsha)
e0=$(evalsha)
BENCH_VOUCHERS=$list BENCH_USER_BASE=5000000000 wrk -t"$threads" -c"$conns" -d"${secs}s" \
  -s "$here/front.lua" "http://127.0.0.1:$port" >"$tmp/wrk" 2>&1 || true
e1=$(evalsha)
grep -E '^front_' "$tmp/wrk" || true
keys=$(for m in "${masters[@]}"; do mcli "$m" --scan --pattern "$run:*:stock" | while read -r k; do
         for v in "${vouchers[@]}"; do case $k in *"$v"*) echo "$k" ;; esac; done; done | grep -c . || true; done | paste -sd' ')
python3 - "${masters[*]}" "$keys" "$i0" "$i1" "$e0" "$e1" <<'EOF'
import sys
masters = sys.argv[1].split()
keys, i0, i1, e0, e1 = ([int(x) for x in a.split()] for a in sys.argv[2:])
noise = [b - a for a, b in zip(i0, i1)]
calls = [b - a for a, b in zip(e0, e1)]
mean = sum(calls) / len(calls)
dev = [(c - mean) * 100.0 / mean if mean else 0.0 for c in calls]
for m, k, c, d, nz in zip(masters, keys, calls, dev, noise):
    print("master %s: sale_stock_keys=%d evalsha=%d share=%.1f%% dev_from_mean=%+.1f%% idle_noise=%d"
          % (m, k, c, c * 100.0 / sum(calls) if sum(calls) else 0, d, nz))
print("spread_max_dev_pct=%.1f" % max(abs(d) for d in dev))
EOF
