#!/usr/bin/env bash
# bench/queue.sh: the waiting room's budgets (DESIGN.md 18, issue 33), one run, figures and
# ratios printed, never asserted. Everything runs against a private redis-server on a spare
# port (so INFO commandstats can be reset and used_memory measured without the shared
# Redis's other tenants), the stack's MariaDB and Kafka, its own database, prefix and topic.
#   1. Redis usec_per_call of the scripts, each alone (CONFIG RESETSTAT, then INFO
#      commandstats' cmdstat_evalsha): queue_join.lua for new members and a repeat join,
#      driven by redis-benchmark (EVALSHA with __rand_int__ ids); and the poll, which is no
#      script (sk_qroom_poll): BENCH_POLLS polls' reads of a waiting member (TIME, HMGET of
#      the state, ZCARD, ZSCORE, ZRANK, as common/queue/queue_room.c sends them) piped
#      through redis-cli --pipe, the Redis time of all of them (every cmdstat's usec)
#      divided by the polls;
#   2. Redis memory per member: used_memory before and after BENCH_MEMBERS members joined
#      (user ids 10^12 + 0 .. N-1, piped through redis-cli --pipe), divided by the members;
#   3. the front's poll rate (GET …/queue of those members, bench/queue_poll.lua) against
#      bench/const409 driven by the same wrk script, and their ratio (budget >= 0.7);
#   4. release -> next admitted: BENCH_RELEASES times, one unit put back into the bucket's
#      stock key (as release.lua would) and the time until the room's admitted count (the
#      state hash's `upto`) grows, measured from here (5 ms polling): p50, p99, max (budget
#      p99 <= 1 s);
#   5. token check: build/bench/qtoken_verify (bench/qtoken_verify.c): CPU microseconds per
#      sk_qtoken_verify of a valid token and of another user's (budget <= 2 us).
# Environment: BENCH_MEMBERS (1000000), BENCH_NEW_JOINS (200000: redis-benchmark calls per
# script), BENCH_SECONDS (10: each wrk run), BENCH_CONNS (128), BENCH_THREADS (2: wrk),
# BENCH_POLLS (200000), BENCH_RELEASES (100), BENCH_POLL_MEMBERS (10000: the members step 3 polls, with their
# position tickets), BENCH_TOKENS_N (200000), SECKILL_HTTP_THREADS (2, also const409's), SK_BIN, SK_BENCH_BIN.
# Build first (cmake --build build); run at a quiet time (figures only, bench/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
SK_BENCH_BIN=${SK_BENCH_BIN:-$here/../build/bench}
GEN=${BENCH_GENERATED:-$here/../build/generated}
. "$here/lib.sh"
members=${BENCH_MEMBERS:-1000000}
calls=${BENCH_NEW_JOINS:-200000}
polls=${BENCH_POLLS:-200000}
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNS:-128}
threads=${BENCH_THREADS:-2}
releases=${BENCH_RELEASES:-100}
# members the front's polls cycle through: each one's first poll reads Redis and hands its
# position ticket, the next ones are answered from the front's room state (DESIGN.md 18)
poll_members=${BENCH_POLL_MEMBERS:-10000}
http_threads=${SECKILL_HTTP_THREADS:-2}
bench_require bench/queue.sh wrk redis-benchmark redis-cli redis-server curl python3
for f in "$SK_BIN/seckill-front" "$SK_BIN/seckill-admin" "$SK_BENCH_BIN/const409" \
        "$GEN/sk_lua_embedded.c.queue_join.lua"; do
  [ -e "$f" ] || { echo "bench/queue.sh: no $f (cmake --build build)" >&2; exit 2; }
done
run=bqueue_$$_$RANDOM
prefix=$run
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(freeport) port=$(freeport) oport=$(freeport) cport=$(freeport)
work=$(mktemp -d "/tmp/$run.XXXXXX")
rc="redis-cli -h 127.0.0.1 -p $rport"
db="bench_queue_$$_$RANDOM"
export SECKILL_MYSQL_URL="mysql://root@127.0.0.1:3306/$db"
export SECKILL_REDIS_URL="redis://127.0.0.1:$rport/0" SECKILL_REDIS_PREFIX=$prefix
export SECKILL_TOPIC="bench.queue.$$.$RANDOM" SECKILL_METRICS_ADDR=off
cleanup() {
  local p
  for p in ${fpid:-} ${cpid:-} ${rpid:-}; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  mysql -uroot -h127.0.0.1 -P3306 -e "DROP DATABASE IF EXISTS \`$db\`" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" --daemonize no >/dev/null 2>&1 &
rpid=$!
for _ in $(seq 1 100); do [ "$($rc ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
"$SK_BIN/seckill-admin" db migrate >/dev/null || { echo "bench/queue.sh: db migrate failed" >&2; exit 1; }
now=$(date +%s)
begin=$((now + 2))
out=$("$SK_BIN/seckill-admin" voucher create --stock 10 --begin "$begin" --end "$((now + 7200))" --queue \
  --queue-overbook 100 --queue-ttl 3600 --title bench --preheat 2>"$work/admin.log") ||
  { echo "bench/queue.sh: voucher create: $(cat "$work/admin.log")" >&2; exit 1; }
v=$(echo "$out" | sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p')
echo "machine: $(uptime | sed 's/.*load/load/') cores=$(nproc)"
echo "queue: voucher=$v members=$members calls=$calls conns=$conns wrk_threads=$threads seconds=$secs http_threads=$http_threads"
while [ "$(date +%s)" -le "$begin" ]; do sleep 0.2; done

# ---- 1 and 2: the scripts alone, on the room's six keys
K=()
for kind in state pre post used gone ticks; do K+=("$prefix:{q:$v}:$kind"); done
sha_join=$($rc -x script load <"$GEN/sk_lua_embedded.c.queue_join.lua")
b_ms=$((begin * 1000)) e_ms=$(((now + 7200) * 1000)) o_ms=$(((begin - 3600) * 1000))
exp_ms=$((e_ms + 86400000)) ttl_ms=3600000
join_args() { echo "$sha_join 6 ${K[*]} $1 $b_ms $e_ms $o_ms $2 1 $exp_ms $ttl_ms 0 0"; }
$rc evalsha $(join_args 999 4000000000000) >/dev/null   # the room's state: generation 1
mem0=$($rc info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
# members 10^12 + i (the form "1__rand_int__" takes with -r members), RESP through --pipe
awk -v n="$members" -v s="$sha_join" -v k="${K[*]}" -v b="$b_ms" -v e="$e_ms" -v o="$o_ms" \
    -v x="$exp_ms" -v t="$ttl_ms" 'BEGIN {
  split(k, kk, " ")
  for (i = 0; i < n; i++) {
    u = sprintf("1%012d", i); pk = sprintf("2%012d", i)
    a[1] = "EVALSHA"; a[2] = s; a[3] = "6"; for (j = 1; j <= 6; j++) a[3 + j] = kk[j]
    a[10] = u; a[11] = b; a[12] = e; a[13] = o; a[14] = pk; a[15] = "1"; a[16] = x; a[17] = t; a[18] = "0"; a[19] = "0"
    printf "*19\r\n"; for (j = 1; j <= 19; j++) printf "$%d\r\n%s\r\n", length(a[j]), a[j]
  }}' | $rc --pipe >"$work/pipe.log"
mem1=$($rc info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
n_post=$($rc zcard "${K[2]}")
echo "redis_members=$n_post (post-begin line) used_memory_delta=$((mem1 - mem0)) bytes_per_member=$(( (mem1 - mem0) / (n_post > 0 ? n_post : 1) )) (budget <= 120)"
usec() { $rc info commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p'; }
rb() { redis-benchmark -h 127.0.0.1 -p "$rport" -c 50 -n "$calls" "$@" >/dev/null; }
$rc config resetstat >/dev/null
rb -r 100000000000 evalsha $(join_args "3__rand_int__" "5__rand_int__")
echo "redis_join_new_usec_per_call=$(usec) (budget <= 8)"
$rc config resetstat >/dev/null
rb -r "$members" evalsha $(join_args "1__rand_int__" "6__rand_int__")
echo "redis_join_repeat_usec_per_call=$(usec)"
$rc config resetstat >/dev/null
# the poll's first round for members 10^12 + random i (waiting: not admitted, so no second
# round), as sk_qroom_poll sends it; Redis time summed over every command it ran
awk -v n="$polls" -v m="$members" -v k="${K[*]}" 'BEGIN {
  split(k, kk, " "); srand(7)
  f = "generation begun seq upto unitsLeft unitsHeld heldUntil closed expupto npre"; nf = split(f, ff, " ")
  for (i = 0; i < n; i++) {
    u = sprintf("1%012d", int(rand() * m))
    printf "*1\r\n$4\r\nTIME\r\n"
    printf "*%d\r\n$5\r\nHMGET\r\n$%d\r\n%s\r\n", nf + 2, length(kk[1]), kk[1]
    for (j = 1; j <= nf; j++) printf "$%d\r\n%s\r\n", length(ff[j]), ff[j]
    printf "*2\r\n$5\r\nZCARD\r\n$%d\r\n%s\r\n", length(kk[2]), kk[2]
    printf "*3\r\n$6\r\nZSCORE\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(kk[3]), kk[3], length(u), u
    printf "*3\r\n$5\r\nZRANK\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(kk[2]), kk[2], length(u), u
  }}' >"$work/polls.resp"
$rc config resetstat >/dev/null
$rc --pipe <"$work/polls.resp" >"$work/polls.log"
$rc info commandstats | awk -F'[:,=]' -v n="$polls" '/^cmdstat_(time|hmget|zcard|zscore|zrank)/ {
    u += $5; printf "redis_poll_%s_usec_per_call=%s\n", substr($1, 9), $7 }
  END { printf "redis_poll_usec_per_poll=%.2f (budget <= 4; the five reads together)\n", u / n }'

# ---- 3: the front's polls vs const409, same wrk script
keys=$work/queue.keys
printf 'k1 bench-queue-secret-0123456789abcdef\n' >"$keys"
chmod 600 "$keys"
SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_OPS_ADDR=127.0.0.1:$oport SECKILL_AUTH=trusted-header \
  SECKILL_TRUSTED_PROXIES=127.0.0.1/32 SECKILL_QUEUE_KEYS_FILE="$keys" SECKILL_LOG_LEVEL=warn \
  SECKILL_HTTP_THREADS=$http_threads "$SK_BIN/seckill-front" 2>"$work/front.log" &
fpid=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$oport/readyz" >/dev/null || { echo "front not ready" >&2; tail "$work/front.log" >&2; exit 1; }
r=$(curl -s -H "X-User-Id: 1000000000000" "http://127.0.0.1:$port/api/v1/vouchers/$v/queue")
echo "front_poll_sample: $r"
wrk_poll() {
  BENCH_VOUCHER=$v BENCH_MEMBERS=$poll_members BENCH_THREADS=$threads \
    wrk -t"$threads" -c"$conns" -d"${secs}s" -s "$here/queue_poll.lua" "$1" | grep -E '^(requests|rate|p50_ms)='
}
fout=$(wrk_poll "http://127.0.0.1:$port")
echo "$fout" | sed 's/^/front_poll_/'
front_rate=$(echo "$fout" | sed -n 's/^rate=//p')
"$SK_BENCH_BIN/const409" "127.0.0.1:$cport" "$http_threads" &
cpid=$!
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$cport/" 2>/dev/null && break; sleep 0.1; done
cout=$(wrk_poll "http://127.0.0.1:$cport")
echo "$cout" | sed 's/^/const409_/'
const_rate=$(echo "$cout" | sed -n 's/^rate=//p')
kill -TERM "$cpid"; wait "$cpid" || true; cpid=
echo "front_poll_ratio=$(python3 -c "print(round($front_rate / max($const_rate, 1), 3))") (front / const409, budget >= 0.7)"

# ---- 4: release -> next admitted (the front's tick advances the line)
stock_key="$prefix:{v:$v:0}:stock"
for _ in $(seq 1 100); do [ "$($rc hget "${K[0]}" upto)" != "" ] && break; sleep 0.1; done
python3 - "$rport" "$stock_key" "${K[0]}" "$releases" <<'PY'
import socket, sys, time
port, stock, state, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def cmd(*a):
    s.sendall(("*%d\r\n" % len(a) + "".join("$%d\r\n%s\r\n" % (len(x), x) for x in a)).encode())
    line = f.readline()
    if line[:1] == b"$":
        ln = int(line[1:])
        return None if ln < 0 else f.read(ln + 2)[:-2].decode()
    return line[1:].strip().decode()
def upto():
    v = cmd("HGET", state, "upto")
    return int(v) if v else 0
# let the first admissions settle: upto stops moving for 2 s
last, since = upto(), time.time()
while time.time() - since < 2:
    time.sleep(0.05)
    u = upto()
    if u != last:
        last, since = u, time.time()
lat = []
for i in range(n):
    before = upto()
    cmd("INCRBY", stock, "1")
    t0 = time.time()
    while upto() == before and time.time() - t0 < 10:
        time.sleep(0.005)
    lat.append(time.time() - t0)
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
print("release_to_admitted_ms: n=%d p50=%.0f p99=%.0f max=%.0f (budget p99 <= 1000)" % (len(lat), pct(0.5), pct(0.99), lat[-1] * 1000))
PY
# ---- 5: the admission check's CPU (build/bench/qtoken_verify)
if [ -x "$SK_BENCH_BIN/qtoken_verify" ]; then
  "$SK_BENCH_BIN/qtoken_verify" "${BENCH_TOKENS_N:-200000}"
else
  echo "token_check_us: not measured (no $SK_BENCH_BIN/qtoken_verify: cmake --build build)"
fi
