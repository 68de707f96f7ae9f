#!/usr/bin/env bash
# bench/galera.sh: what replication costs the book of record (DESIGN.md 16): the consumer's
# drain and the DB-only purchase path on the local three-node Galera cluster
# (`scripts/stack.sh galera up`, 127.0.0.1:3311-3313, started here if needed) against the
# standalone MariaDB on 127.0.0.1:3306, in the same run, same settings:
#   1. bench/consumer.sh, batched run only (BENCH_SKIP_SINGLE=1), on each server:
#      batched_rate (orders/s over the outcome rows' span); ratio_drain = galera / standalone
#   2. bench/degrade.sh on each: created orders/s of the DB-only path with 1 and 8 bucket
#      rows; ratio_dbonly_1 and ratio_dbonly_8 = galera / standalone
# Galera pays a replication round trip (certification) per COMMIT: batching should hide
# most of it on the drain; the DB-only path commits once per purchase. Figures only, never
# asserted; record runs in bench/README.md with the load (`uptime`).
# Env: BENCH_M (50000 messages), BENCH_SECONDS (10), SK_BIN; the rest as for the two scripts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
export BENCH_M=${BENCH_M:-50000} BENCH_SECONDS=${BENCH_SECONDS:-10}
standalone=127.0.0.1:3306
"$repo/scripts/stack.sh" galera up >/tmp/bench_galera_up.$$.log 2>&1 ||
  { tail -n 20 /tmp/bench_galera_up.$$.log >&2; echo "bench/galera.sh: galera up failed" >&2; exit 1; }
rm -f /tmp/bench_galera_up.$$.log
galera=$("$repo/scripts/stack.sh" galera env | sed -n 's|^export SECKILL_MYSQL_URL=mysql://[^@]*@\([^/]*\)/.*|\1|p')
[ -n "$galera" ] || { echo "bench/galera.sh: no Galera URL" >&2; exit 1; }
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc)"
echo "standalone=$standalone galera=$galera M=$BENCH_M seconds=$BENCH_SECONDS"

drain() {  # drain HOSTS: batched_rate
  BENCH_MYSQL_HOSTS=$1 BENCH_SKIP_SINGLE=1 "$here/consumer.sh" "$BENCH_M" | tee /dev/stderr |
    sed -n 's/^batched_rate=\([0-9]*\).*/\1/p'
}
dbonly() {  # dbonly HOSTS: "created_rate_1 created_rate_8"
  local out
  out=$(BENCH_MYSQL_HOSTS=$1 "$here/degrade.sh" | tee /dev/stderr)
  echo "$(echo "$out" | sed -n 's/^created_rate_1=//p') $(echo "$out" | sed -n 's/^created_rate_8=//p')"
}
ds=$(drain "$standalone"); dg=$(drain "$galera")
read -r s1 s8 < <(dbonly "$standalone"); read -r g1 g8 < <(dbonly "$galera")
echo "drain_standalone=$ds drain_galera=$dg orders/s"
echo "dbonly_standalone_1=$s1 dbonly_galera_1=$g1 dbonly_standalone_8=$s8 dbonly_galera_8=$g8 created/s"
echo "uptime: $(uptime)"
python3 -c "
r = lambda a, b: '%.2f' % (float(a) / float(b)) if float(b) > 0 else 'n/a'
print('ratio_dbonly_1=%s ratio_dbonly_8=%s' % (r('$g1', '$s1'), r('$g8', '$s8')))
print('ratio_drain=%s' % r('$dg', '$ds'))"
