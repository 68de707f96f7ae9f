#!/usr/bin/env bash
# bench/consumer_buckets.sh: the order drain of ONE hot voucher with B buckets (default 8)
# vs the same voucher with 1 bucket (DESIGN.md 5, 14: a bucket's messages are keyed
# "voucherId:bucket", so B buckets spread over up to B partitions and workers, each
# decrementing its own bucket row). Runs bench/consumer.sh twice with BENCH_VOUCHERS=1
# (its batched rate; its one-order-per-transaction run kept short) and prints both rates
# and, last, ratio=<B buckets / 1 bucket>. Figures only, never asserted.
# Usage: bench/consumer_buckets.sh [M]   (default 100000)
# Env: BENCH_BUCKETS_HOT (8), BENCH_PARTITIONS (6), BENCH_WORKERS (2), as bench/consumer.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
M=${1:-100000}
hot=${BENCH_BUCKETS_HOT:-8}
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc); M=$M one voucher; partitions=${BENCH_PARTITIONS:-6} workers=${BENCH_WORKERS:-2}"
rate() {  # rate B: the batched orders/s of one run
  local out
  out=$(BENCH_VOUCHERS=1 BENCH_BUCKETS=$1 BENCH_SINGLE_SECONDS=${BENCH_SINGLE_SECONDS:-3} "$here/consumer.sh" "$M")
  echo "$out" | grep -E '^(batched|per_order_cpu_us)' | sed "s/^/buckets=$1 /" >&2
  echo "$out" | sed -n 's/^batched_rate=\([0-9]*\) .*/\1/p'
}
r_hot=$(rate "$hot")
r_one=$(rate 1)
echo "rate_buckets_$hot=$r_hot orders/s rate_buckets_1=$r_one orders/s"
python3 -c "print('ratio=%.2f' % ($r_hot / $r_one if $r_one > 0 else 0))"
