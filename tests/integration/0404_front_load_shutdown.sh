#!/usr/bin/env bash
# 0404_front_load_shutdown.sh: seckill-front under a short concurrent mixed load, then a
# SIGTERM in the middle of another load (DESIGN.md 8). Built to flush
# out lifetime and shutdown races, most useful on the sanitizer build (SK_SANITIZE=ON):
#   - wrk: keep-alive purchases by distinct users, and orders/me + orders/{id} lookups;
#   - clients that hang up while their purchase is suspended (curl --max-time 0.02);
#   - clients that send a purchase and close at once (bash /dev/tcp);
#   - SIGTERM while wrk is still sending: the front must exit 0 within the deadline
#     (2 x delivery timeout + 1 s) plus the purge wait, with no sanitizer report and no
#     abort (MHD_stop_daemon panics on a connection left suspended);
#   - started with a soft descriptor limit of 256: the front raises it (else its
#     in-flight cap could never be reached before EMFILE).
# Redis accounting after each phase (no failpoints, no faults): init - stock = HLEN
# users = DEDUCT entries without a fence (a purged message's rollback restores and
# releases both together). Own database, key prefix and topic.
set -u
FRONT="${SK_BIN:?SK_BIN not set}/seckill-front"
ADMIN="${SK_BIN}/seckill-admin"
SRC="${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
for t in wrk curl redis-cli mysql python3; do
        command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 0; }
done
_rurl="${SECKILL_REDIS_URL:-redis://127.0.0.1:6379/0}"; _rurl="${_rurl#redis://}"; _rurl="${_rurl#*@}"
REDIS_HOST="${_rurl%%[:/]*}"; REDIS_PORT=6379
case "$_rurl" in *:*) REDIS_PORT="${_rurl#*:}"; REDIS_PORT="${REDIS_PORT%%/*}" ;; esac
_murl="${SECKILL_MYSQL_URL:-mysql://root@127.0.0.1:3306/seckill}"; _murl="${_murl#*@}"
MYSQL_HOST="${_murl%%[:/]*}"; MYSQL_PORT=3306
case "$_murl" in *:*) MYSQL_PORT="${_murl#*:}"; MYSQL_PORT="${MYSQL_PORT%%/*}" ;; esac
RUN="frload_$$_${RANDOM}"
DB="skt_${RUN}"
export SECKILL_MYSQL_URL="mysql://root@${MYSQL_HOST}:${MYSQL_PORT}/${DB}"
export SECKILL_REDIS_PREFIX="skt_${RUN}"
export SECKILL_TOPIC="skt.${RUN}"
export SECKILL_GROUP_ID="skt-${RUN}"
export SECKILL_TOPIC_PARTITIONS=2
export SECKILL_WORKER_LEASE_MS=900
export SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=2000
export SECKILL_LOG_LEVEL=info
unset SECKILL_WORKER_ID SECKILL_FAILPOINTS
P="$SECKILL_REDIS_PREFIX"
BUILD="${SK_BUILD:-/tmp}"
LOG="$BUILD/front_0404_$$.log"
WORK=$(mktemp -d)
FAILS=0
FPID=

# A Cluster or Sentinel URL goes through sk-rcli (keys routed by sk_redis, DESIGN.md 4b);
# one server through redis-cli.
rcli() {
        case ${SECKILL_REDIS_URL:-} in
        redis-cluster://* | redis-sentinel://*) "${SK_BUILD:?}/tests/sk-rcli" "$@" ;;
        *) redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@" ;;
        esac
}
cleanup() {
        [ -n "$FPID" ] && kill -KILL "$FPID" 2>/dev/null
        mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -e "DROP DATABASE IF EXISTS \`$DB\`" >/dev/null 2>&1
        rcli --scan --pattern "${P}:*" | while read -r k; do rcli del "$k" >/dev/null; done
        rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }

timeout 60 "$ADMIN" db migrate >/dev/null || { echo "FAIL: db migrate"; exit 1; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
OPS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
OPS="http://127.0.0.1:$OPS_PORT"   # /healthz, /readyz, /metrics (DESIGN.md 15)
NOW=$(( $(date +%s) * 1000 ))
V=$(( 1000000 + RANDOM ))
INIT=100000
rcli hset "$P:{v:$V:0}:meta" begin_ms $((NOW - 60000)) end_ms $((NOW + 3600000)) status 1 >/dev/null
rcli set "$P:{v:$V:0}:stock" $INIT >/dev/null
rcli hset "$P:{v:$V:0}:users" _ _ >/dev/null   # as preheat lays a bucket out (DESIGN.md 4)
rcli hset "$P:{v:$V:0}:trace" _ _ >/dev/null
mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" "$DB" -e "INSERT INTO tb_seckill_voucher \
  (voucher_id, init_stock, begin_time, end_time, status) VALUES ($V, $INIT, \
  FROM_UNIXTIME($((NOW / 1000 - 60))), FROM_UNIXTIME($((NOW / 1000 + 3600))), 1); \
  INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock) VALUES ($V, 0, $INIT, $INIT)"

# Started with a distribution-like soft descriptor limit (256 here): the front must
# raise it toward the hard limit, or its in-flight cap (SECKILL_MAX_INFLIGHT, default
# 10000) could never be reached (EMFILE first: buyers stuck in the listen backlog).
HARD=$(ulimit -Hn)
LAUNCH=()
command -v prlimit >/dev/null && LAUNCH=(prlimit "--nofile=256:$HARD")
SECKILL_HTTP_ADDR=127.0.0.1:$PORT SECKILL_OPS_ADDR=127.0.0.1:$OPS_PORT SECKILL_AUTH=trusted-header \
        SECKILL_TRUSTED_PROXIES=127.0.0.1/32 "${LAUNCH[@]}" "$FRONT" >"$LOG" 2>&1 &
FPID=$!
for _ in $(seq 1 300); do
        curl -sf "$OPS/readyz" >/dev/null 2>&1 && break
        sleep 0.1
done
curl -sf "$OPS/readyz" >/dev/null || { echo "FAIL: front not ready (log $LOG)"; exit 1; }
if [ ${#LAUNCH[@]} -gt 0 ]; then
        SOFT=$(awk '/^Max open files/ {print $4}' "/proc/$FPID/limits")
        WANT=12048
        [ "$HARD" != unlimited ] && [ "$HARD" -lt "$WANT" ] && WANT=$HARD
        [ "$SOFT" -ge "$WANT" ] && ok "descriptor soft limit raised from 256 to $SOFT" ||
                fail "descriptor soft limit $SOFT < $WANT (max in-flight 10000 + 2048)"
fi

cat >"$WORK/lookup.lua" <<EOF
local n = 0
function request()
  n = n + 1
  local u = tostring(1000 + (n % 5000))
  if n % 3 == 0 then
    return "GET /api/v1/orders/" .. tostring(100000 + n) .. " HTTP/1.1\r\nHost: x\r\nX-User-Id: " .. u .. "\r\n\r\n"
  end
  return "GET /api/v1/vouchers/$V/orders/me HTTP/1.1\r\nHost: x\r\nX-User-Id: " .. u .. "\r\n\r\n"
end
EOF

# Purchases whose client hangs up while the connection is suspended (user ids 9e9+).
hangups() {
        local i
        for i in $(seq 1 "$2"); do
                curl -s -o /dev/null --max-time 0.02 -X POST -H "X-User-Id: $(( $1 + i ))" \
                        "$BASE/api/v1/vouchers/$V/seckill" 2>/dev/null
                { exec 3<>"/dev/tcp/127.0.0.1/$PORT" &&
                  printf 'POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\nX-User-Id: %s\r\n\r\n' \
                        "$V" "$(( $1 + 500000 + i ))" >&3 && exec 3>&-; } 2>/dev/null
        done
}

accounting() {
        local stock users deducts fences
        stock=$(rcli get "$P:{v:$V:0}:stock")
        users=$(( $(rcli hlen "$P:{v:$V:0}:users") - 1 ))   # the placeholder _ is no user
        deducts=$(rcli hkeys "$P:{v:$V:0}:trace" | grep -c '^[0-9]*$')
        fences=$(rcli hkeys "$P:{v:$V:0}:trace" | grep -c ':r$')
        echo "$1: stock=$stock users=$users deducts=$deducts fences=$fences"
        if [ "$((INIT - stock))" == "$users" ] && [ "$((deducts - fences))" == "$users" ]; then
                ok "$1: init - stock = users = deducts - fences ($users)"
        else
                fail "$1: init - stock=$((INIT - stock)) users=$users deducts=$deducts fences=$fences"
        fi
}

# --- phase 1: mixed load -------------------------------------------------------------
BENCH_VOUCHER=$V BENCH_USER_BASE=1000000000 timeout 30 wrk -t2 -c24 -d6s \
        -s "$SRC/bench/front.lua" "$BASE" >"$WORK/wrk1" 2>&1 &
W1=$!
timeout 30 wrk -t1 -c8 -d6s -s "$WORK/lookup.lua" "$BASE" >"$WORK/wrk2" 2>&1 &
W2=$!
hangups 9000000000 60 &
H1=$!
wait $W1 $W2 $H1
grep -E '^front_requests' "$WORK/wrk1"
kill -0 "$FPID" 2>/dev/null && ok "front alive after the mixed load" || fail "front died (log $LOG)"
curl -sf "$OPS/healthz" >/dev/null && ok "healthz after load" || fail "healthz after load"
sleep 1
accounting "after load"

# --- phase 2: SIGTERM while wrk keeps sending ----------------------------------------
BENCH_VOUCHER=$V BENCH_USER_BASE=3000000000 timeout 30 wrk -t2 -c24 -d8s \
        -s "$SRC/bench/front.lua" "$BASE" >"$WORK/wrk3" 2>&1 &
W3=$!
timeout 30 wrk -t1 -c8 -d8s -s "$WORK/lookup.lua" "$BASE" >"$WORK/wrk4" 2>&1 &
W4=$!
hangups 8000000000 400 &
H2=$!
sleep 2
T0=$(date +%s)
kill -TERM "$FPID"
# deadline 5 s + purge wait 3 s + answers; generous on a loaded sanitizer build.
RC=
for _ in $(seq 1 400); do
        if ! kill -0 "$FPID" 2>/dev/null; then
                wait "$FPID"; RC=$?
                break
        fi
        sleep 0.1
done
if [ -z "$RC" ]; then
        fail "front still running 40 s after SIGTERM (log $LOG)"
        kill -KILL "$FPID"; wait "$FPID" 2>/dev/null
else
        [ "$RC" == 0 ] && ok "exit 0 after SIGTERM under load ($(( $(date +%s) - T0 )) s)" ||
                fail "exit status $RC after SIGTERM under load (log $LOG)"
fi
FPID=
kill "$H2" 2>/dev/null
wait $W3 $W4 2>/dev/null
wait $H2 2>/dev/null
grep -q 'shutdown_done' "$LOG" && ok "shutdown_done logged" || fail "no shutdown_done (log $LOG)"
if grep -qE 'Sanitizer|runtime error|MHD_PANIC|suspended connections' "$LOG"; then
        grep -nE -m5 'Sanitizer|runtime error|MHD_PANIC|suspended connections' "$LOG"
        fail "sanitizer or libmicrohttpd report in $LOG"
else
        ok "no sanitizer report"
fi
accounting "after shutdown"

if [ "$FAILS" -gt 0 ]; then
        echo "$FAILS failure(s); front log: $LOG"
        exit 1
fi
rm -f "$LOG"
echo "all ok"
