#!/usr/bin/env bash
# bench/degrade.sh: DB-only purchases/s (DESIGN.md 12) on one hot voucher with 1 bucket
# row and with 8 bucket rows (`seckill-admin voucher create --buckets 8`), same
# concurrency. Starts its own seckill-front (own database, key prefix and topic), creates
# each voucher with a large stock, switches it with `seckill-admin degrade db-only
# --voucher ID` (Redis stays up; the front's follower moves it redis -> draining -> db),
# waits for state db, then runs wrk (distinct user ids, bench/front.lua). Prints for each
# the wrk rate, the created orders/s (orders in the DB over the run) and the p99, and
# ratio_8_1=<created/s with 8 buckets / with 1> as the LAST line.
# Env: SK_BIN (default build/bin), BENCH_SECONDS (10), BENCH_CONNS (32), BENCH_THREADS (2),
#      BENCH_DB_CONNS (SECKILL_DEGRADE_DB_CONNS, 8), BENCH_MYSQL_HOSTS (host:port[,...] of
#      the database, root without a password; default 127.0.0.1:3306; bench/galera.sh
#      passes the Galera cluster's nodes),
#      SECKILL_* as for the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
. "$here/lib.sh"
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNS:-32}
threads=${BENCH_THREADS:-2}
bench_require bench/degrade.sh wrk redis-cli mysql curl
for b in seckill-front seckill-admin; do
  [ -x "$SK_BIN/$b" ] || { echo "bench/degrade.sh: no $SK_BIN/$b" >&2; exit 2; }
done

run=bench_dg_$$_$RANDOM
prefix=$run
topic="bench.degrade.$$.$RANDOM"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
oport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')   # the front's /readyz, /metrics (SECKILL_OPS_ADDR, DESIGN.md 15)
rc="redis-cli -h 127.0.0.1 -p 6379"
db="bench_degrade_$$_$RANDOM"
hosts=${BENCH_MYSQL_HOSTS:-127.0.0.1:3306}
h1=${hosts%%,*}
export SECKILL_MYSQL_URL="mysql://root@$hosts/$db"
export SECKILL_REDIS_PREFIX=$prefix SECKILL_TOPIC=$topic
my() { mysql -uroot -h"${h1%:*}" -P"${h1##*:}" --protocol=TCP -N -B "$db" -e "$1"; }
cleanup() {
  [ -n "${fpid:-}" ] && kill -TERM "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null || true
  $rc --scan --pattern "$prefix:*" | xargs -r -n 100 $rc del >/dev/null || true
  mysql -uroot -h"${h1%:*}" -P"${h1##*:}" --protocol=TCP -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/degrade.sh: db migrate failed" >&2; exit 1; }

SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_LOG_LEVEL=warn \
  SECKILL_TOPIC_PARTITIONS=${SECKILL_TOPIC_PARTITIONS:-6} \
  SECKILL_WORKER_LEASE_MS=${SECKILL_WORKER_LEASE_MS:-6000} \
  SECKILL_DEGRADE_DB_CONNS=${BENCH_DB_CONNS:-8} \
  SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 \
  "$SK_BIN/seckill-front" 2>/tmp/$run.front.log &
fpid=$!
bench_wait_ready "$oport" /tmp/$run.front.log

# bench_one BUCKETS USER_BASE: prints rate_B=, created_rate_B=, p99_ms_B=
bench_one() {
  local b=$1 base=$2 now out id st n0 n1 i
  now=$(date +%s)
  out=$("$SK_BIN/seckill-admin" voucher create --stock 1000000 --buckets "$b" \
        --begin $((now - 60)) --end $((now + 3600)))
  id=$(echo "$out" | sed -n 's/.*"voucherId":"\([0-9]*\)".*/\1/p')
  [ -n "$id" ] || { echo "bench/degrade.sh: voucher create printed $out" >&2; exit 1; }
  "$SK_BIN/seckill-admin" degrade db-only --voucher "$id" >/dev/null
  st=
  for i in $(seq 1 300); do
    st=$(my "SELECT state FROM tb_seckill_switch WHERE scope = $id")
    [ "$st" = db ] && break
    sleep 0.2
  done
  [ "$st" = db ] || { echo "bench/degrade.sh: voucher $id stuck in state '$st'" >&2; exit 1; }
  BENCH_VOUCHER=$id BENCH_USER_BASE=$base wrk -t"$threads" -c"$conns" -d2s \
    -s "$here/front.lua" "http://127.0.0.1:$port" >/dev/null
  n0=$(my "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $id")
  out=$(BENCH_VOUCHER=$id BENCH_USER_BASE=$((base + 2000000000)) wrk -t"$threads" -c"$conns" \
        -d"${secs}s" -s "$here/front.lua" "http://127.0.0.1:$port")
  n1=$(my "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $id")
  echo "buckets=$b voucher=$id $(echo "$out" | grep -E '^front_requests' || true)"
  echo "rate_$b=$(echo "$out" | sed -n 's/^front_rate=//p')"
  echo "created_rate_$b=$(( (n1 - n0) / secs ))"
  echo "p99_ms_$b=$(echo "$out" | sed -n 's/.*front_p99_ms=//p')"
}
r1=$(bench_one 1 1000000000); echo "$r1"
r8=$(bench_one 8 5000000000); echo "$r8"
c1=$(echo "$r1" | sed -n 's/^created_rate_1=//p')
c8=$(echo "$r8" | sed -n 's/^created_rate_8=//p')
echo "uptime: $(uptime)"
python3 -c "print('ratio_8_1=%.2f' % (float('$c8') / max(float('$c1'), 1.0)))"
