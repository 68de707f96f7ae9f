#!/usr/bin/env bash
# bench/consumer_ab.sh: the consumer's drain of two heads, back to back, in the same run.
#
# Builds seckill-consumer and seckill-admin of HEAD_A and of HEAD_B (any git revision of
# this repository) in temporary trees under /tmp (a `git archive` of each head, so nothing
# is registered in the repository; Release build, no failpoints), then runs THIS tree's
# bench/consumer.sh once per head, A then B (BENCH_AB_ROUNDS > 1: A B, B A, A B, ... so
# neither head always runs second, after the other's cleanup), with
# SK_BIN pointing at that head's binaries: the same preload, vouchers, partitions,
# workers and batch size for both. Every run of bench/consumer.sh migrates its own fresh
# databases with its head's `seckill-admin db migrate` (their names carry the run's pid),
# so heads whose migrations differ (7d3b330 stops at ddl/0005) never share a schema.
# Prints, per head: the batched rate, MariaDB CPU-us per order, the Handler reads per
# order, and (unless BENCH_SKIP_SINGLE=1) the single rate and batched/single ratio; then
# the medians over the rounds and, LAST, ratio=<B batched / A batched>.
# The budget it checks by eye (bench/README.md): B batched >= A batched (A = the v4 head
# 7d3b330, B = HEAD), B's MariaDB CPU per order <= 40 us, B's batched/single >= 10.
# Usage: bench/consumer_ab.sh HEAD_A HEAD_B [M]
#   e.g. bench/consumer_ab.sh 7d3b330 HEAD 200000
# Env: BENCH_AB_ROUNDS (1), BENCH_AB_WORK (a fresh /tmp/consumer_ab.XXXX; kept with
#      KEEP_AB=1, and reused when it already holds a head's build), BENCH_AB_JOBS (2: make
#      -j), and every variable of bench/consumer.sh (BENCH_VOUCHERS, BENCH_PARTITIONS,
#      BENCH_WORKERS, BENCH_BATCH_MAX, BENCH_SINGLE_SECONDS, BENCH_SKIP_SINGLE, ...).
# A run of bench/consumer.sh that fails (it prints "FAILED: ..." and exits non-zero) fails
# this script with one line naming the head.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "bench/consumer_ab.sh: FAILED: $*" >&2; exit 1; }
[ $# -ge 2 ] || { echo "usage: bench/consumer_ab.sh HEAD_A HEAD_B [M]" >&2; exit 2; }
M=${3:-${BENCH_M:-200000}}
ROUNDS=${BENCH_AB_ROUNDS:-1}
JOBS=${BENCH_AB_JOBS:-2}
case "$ROUNDS" in ''|*[!0-9]*|0) echo "bench/consumer_ab.sh: BENCH_AB_ROUNDS must be >= 1" >&2; exit 2;; esac
sha_a=$(git -C "$repo" rev-parse --verify "$1^{commit}") || die "no revision $1"
sha_b=$(git -C "$repo" rev-parse --verify "$2^{commit}") || die "no revision $2"
work=${BENCH_AB_WORK:-$(mktemp -d /tmp/consumer_ab.XXXX)}
mkdir -p "$work"
[ -n "${KEEP_AB:-}" ] || [ -n "${BENCH_AB_WORK:-}" ] || trap 'rm -rf "$work"' EXIT

# build SHA: $work/<sha12>/build/bin/{seckill-consumer,seckill-admin} of that revision.
build() {
  local sha=$1 dir=$work/${1:0:12}
  if [ -x "$dir/build/bin/seckill-consumer" ] && [ -x "$dir/build/bin/seckill-admin" ]; then
    echo "head ${sha:0:12}: reusing $dir/build" >&2
    return 0
  fi
  rm -rf "$dir"; mkdir -p "$dir/src"
  git -C "$repo" archive "$sha" | tar -x -C "$dir/src"
  echo "head ${sha:0:12}: building in $dir ($(git -C "$repo" log -1 --format='%cd %s' --date=short "$sha" | cut -c1-80))" >&2
  cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DSK_WERROR=OFF -DSK_FAILPOINTS=OFF \
    >"$dir/cmake.log" 2>&1 || { tail -20 "$dir/cmake.log" >&2; die "cmake of ${sha:0:12}"; }
  cmake --build "$dir/build" -j"$JOBS" --target seckill-consumer seckill-admin >"$dir/build.log" 2>&1 ||
    { tail -20 "$dir/build.log" >&2; die "build of ${sha:0:12}"; }
  # Older heads put the binaries in build/bin as well (DESIGN.md 2); check it.
  [ -x "$dir/build/bin/seckill-consumer" ] || die "${sha:0:12}: no build/bin/seckill-consumer"
}
build "$sha_a"
build "$sha_b"

echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); M=$M rounds=$ROUNDS"
echo "A=${sha_a:0:12} $(git -C "$repo" log -1 --format=%s "$sha_a" | cut -c1-70)"
echo "B=${sha_b:0:12} $(git -C "$repo" log -1 --format=%s "$sha_b" | cut -c1-70)"

# run LABEL SHA: one bench/consumer.sh run; its figures as "key=value ..." on stdout.
run() {
  local label=$1 sha=$2 out
  out=$(SK_BIN="$work/${sha:0:12}/build/bin" "$here/consumer.sh" "$M" 2>"$work/$label.err") ||
    { tail -5 "$work/$label.err" >&2; die "bench/consumer.sh on head $label (${sha:0:12})"; }
  echo "$out" | sed "s/^/  $label| /" >&2
  OUT=$out python3 - "$label" <<'EOF'
import os, re, sys
out = os.environ['OUT']
def f(pat, default='nan'):
    m = re.search(pat, out, re.M)
    return m.group(1) if m else default
fig = {
    'batched': f(r'^batched_rate=(\d+)'),
    'mariadb_us': f(r'^per_order_cpu_us: .*mariadb=([0-9.]+)'),
    'consumer_us': f(r'^per_order_cpu_us: consumer=([0-9.]+)'),
    'mariadb_conn_us': f(r'^per_order_cpu_us: .*mariadb_conn=([0-9.]+)'),
    'read_key': f(r'^batched_handler_per_order: read_key=([0-9.]+)'),
    'read_next': f(r'^batched_handler_per_order: .*read_next=([0-9.]+)'),
    'rows_read': f(r'^batched_handler_per_order: .*rows_read=([0-9.]+)'),
    'single': f(r'^single_rate=(\d+)'),
    'ratio_single': f(r'^ratio=([0-9.]+)'),
}
print(sys.argv[1] + ' ' + ' '.join('%s=%s' % kv for kv in fig.items()))
EOF
}

results=$work/results.txt
: >"$results"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    run A "$sha_a" | tee -a "$results"
    run B "$sha_b" | tee -a "$results"
  else
    run B "$sha_b" | tee -a "$results"
    run A "$sha_a" | tee -a "$results"
  fi
done
echo "uptime at the end: $(uptime | sed 's/.*load/load/')"
python3 - "$results" <<'EOF'
import math, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, *kv = line.split()
    rows.setdefault(label, []).append({k: float(v) for k, v in (x.split('=') for x in kv)})
med = {}
for label in ('A', 'B'):
    med[label] = {k: statistics.median([r[k] for r in rows[label]]) for k in rows[label][0]}
    m = med[label]
    print('%s_median: batched_rate=%.0f orders/s mariadb_cpu_us_per_order=%.1f (its connections: %.1f) '
          'consumer_cpu_us_per_order=%.1f read_key=%.2f read_next=%.2f rows_read=%.2f single_rate=%s batched/single=%s'
          % (label, m['batched'], m['mariadb_us'], m['mariadb_conn_us'], m['consumer_us'], m['read_key'],
             m['read_next'], m['rows_read'],
             'n/a' if math.isnan(m['single']) else '%.0f' % m['single'],
             'n/a' if math.isnan(m['ratio_single']) else '%.1f' % m['ratio_single']))
a, b = med['A']['batched'], med['B']['batched']
if not a > 0 or not b > 0:
    print('bench/consumer_ab.sh: FAILED: a head produced no batched rate', file=sys.stderr)
    sys.exit(1)
r = lambda k: '%.2f' % (med['B'][k] / med['A'][k]) if med['A'][k] > 0 else 'n/a'
print('mariadb_cpu_ratio=%s mariadb_conn_cpu_ratio=%s (B/A per order)' % (r('mariadb_us'), r('mariadb_conn_us')))
print('ratio=%.2f' % (b / a))
EOF
