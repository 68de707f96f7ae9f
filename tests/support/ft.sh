#!/usr/bin/env bash
# tests/support/ft.sh: the harness of the fault suite (DESIGN.md 7-11).
#
# A case sources this file, then:
#   ft_init NAME                   unique database, Redis prefix, topic and group; migrate
#   V=$(ft_voucher STOCK)          create + preheat a voucher with seckill-admin
#   ft_consumer NAME [VAR=VAL...] [-- ARGS...]   start seckill-consumer in the background
#   ft_front NAME [VAR=VAL...] [-- ARGS...]      start seckill-front on a free port, wait /readyz
#   ft_buy FRONT V FIRST_USER COUNT [PARALLEL]   purchases with curl (xargs -P); every 202
#                                  (userId, orderId, traceId) goes to $FT_WORK/accepted.tsv
#   ft_homed H N FROM COUNT | ft_buy_users FRONT V PARALLEL LABEL   buyers of one home bucket
#   ...inject the fault...
#   ft_settle TIMEOUT_S            wait until every logged 202 has an outcome (bounded)
#   ft_reconcile TIMEOUT_S         seckill-reconciler --repair passes until one exits 0
#   ft_check V [--sold-out]        seckill-admin verify + the invariants of DESIGN.md 9
#   ft_finish                      exit 0 iff no check failed
#   ft_least_privilege             (after ft_init) the database re-created by an admin user,
#                                  front, consumer, reconciler each run as its own user (DESIGN.md 15, 17)
# Figures: the EXIT trap records the case's figures (ft_record, at the end of this file);
# a case marks the end of its fault with ft_fault_over and may add ft_note TEXT.
#
# Isolation (DESIGN.md 10): everything a case creates is named after it and its pid, and
# the EXIT trap stops its processes, drops its database, deletes its Redis keys and Kafka
# topics. Faults that stop a server use a private one (ft_private_redis, ft_private_kafka).
# Timeouts are seconds: delivery timeout 2 s, worker lease 3 s, session timeout 6 s.
#
# What it deliberately does not do: touch the shared Redis, broker or server beyond the
# case's own names, or judge speed.
set -u

FT_T0=$(date +%s)
FT_FAILS=0
FT_SRC=${SK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FT_BIN=${SK_BIN:-$FT_SRC/build/bin}
FT_BUILD=${SK_BUILD:-$(dirname "$FT_BIN")}
# The shared servers: SECKILL_MYSQL_URL / SECKILL_REDIS_URL when set (scripts/test.sh
# exports the stack's), else the local stack. MySQL as root without a password (the
# test stack, DESIGN.md 10); each case uses its own database on that server.
# A multi-host URL (DESIGN.md 16: mysql://root@h1:p1,h2:p2,h3:p3/db, the local Galera
# stack) gives FT_MYSQL_HOSTS, every node as host:port; ft_sql talks to FT_MYSQL_HOST:PORT,
# the first node that answers (ft_mysql_pick), and the binaries get the whole list.
FT_MYSQL_HOST=127.0.0.1 FT_MYSQL_PORT=3306 FT_REDIS_HOST=127.0.0.1 FT_REDIS_PORT=6379
FT_MYSQL_HOSTS=127.0.0.1:3306
if [[ ${SECKILL_MYSQL_URL:-} =~ ^mysql(-galera)?://[^@/]*@([^/?]+) ]]; then
        FT_MYSQL_HOSTS=
        for hp in ${BASH_REMATCH[2]//,/ }; do
                [[ $hp == *:* ]] || hp=$hp:3306
                FT_MYSQL_HOSTS=${FT_MYSQL_HOSTS:+$FT_MYSQL_HOSTS,}$hp
        done
        hp=${FT_MYSQL_HOSTS%%,*}
        FT_MYSQL_HOST=${hp%:*} FT_MYSQL_PORT=${hp##*:}
fi
# Reads after a Galera failover see every write the cluster committed (wsrep_sync_wait).
FT_MYSQL_INIT=()
[[ $FT_MYSQL_HOSTS == *,* ]] && FT_MYSQL_INIT=(--init-command="SET SESSION wsrep_sync_wait = 1")
if [[ ${SECKILL_REDIS_URL:-} =~ ^redis://([^:/@]+)(:([0-9]+))?(/0)?/?$ ]]; then
        FT_REDIS_HOST=${BASH_REMATCH[1]} FT_REDIS_PORT=${BASH_REMATCH[3]:-6379}
fi
FT_SHARED_REDIS_HOST=$FT_REDIS_HOST FT_SHARED_REDIS_PORT=$FT_REDIS_PORT
FT_BROKERS=${SECKILL_KAFKA_BROKERS:-127.0.0.1:9092}
FT_SHARED_BROKERS=$FT_BROKERS
FT_DELIVERY_MS=${FT_DELIVERY_MS:-2000}
FT_LEASE_MS=${FT_LEASE_MS:-3000}
# the reconciler's grace covers the front's request deadline (2 x delivery timeout + 1 s),
# as seckill-reconciler requires: 5 s with the suite's 2 s delivery timeout
_ft_deadline_s=$(((2 * FT_DELIVERY_MS + 1000 + 999) / 1000))
FT_GRACE_S=${FT_GRACE_S:-$((_ft_deadline_s > 5 ? _ft_deadline_s : 5))}
FT_PARTITIONS=${FT_PARTITIONS:-3}
declare -A FT_PID=()     # name -> pid of a service we started
declare -A FT_ADDR=()    # front name -> host:port
declare -A FT_OPS=()     # front name -> host:port of its operations listener (SECKILL_OPS_ADDR)
FT_PRIV_REDIS_PID=
FT_PRIV_KAFKA_DIR=
FT_VOUCHERS=()
FT_CLEANUP_HOOKS=()      # functions ft_cleanup runs after stopping the services (private servers)
FT_CLEANUP_LAST=()       # functions it runs after the figures and the database drop (a private MySQL)

ft_log() { printf '[%s %4ss] %s\n' "${FT_NAME:-faults}" "$(($(date +%s) - FT_T0))" "$*"; }
ft_ok() { ft_log "ok: $*"; }
ft_fail() { ft_log "FAIL: $*"; FT_FAILS=$((FT_FAILS + 1)); }
ft_die() { ft_log "FATAL: $*"; FT_FAILS=$((FT_FAILS + 1)); exit 1; }
ft_eq() { if [[ "$1" == "$2" ]]; then ft_ok "$3"; else ft_fail "$3: got '$1', want '$2'"; fi; }

# ft_mysql ARGS...: the mysql client on FT_MYSQL_HOST:PORT as root; when that node does not
# answer and the URL has others, once more on the first node that does (ft_mysql_pick).
ft_mysql() {
        mysql --no-defaults -uroot -h"$FT_MYSQL_HOST" -P"$FT_MYSQL_PORT" --protocol=TCP --connect-timeout=3 \
                "${FT_MYSQL_INIT[@]}" "$@" && return 0
        local rc=$?
        [[ $FT_MYSQL_HOSTS == *,* ]] || return "$rc"
        ft_mysql_alive "$FT_MYSQL_HOST" "$FT_MYSQL_PORT" && return "$rc"
        ft_mysql_pick || return "$rc"
        mysql --no-defaults -uroot -h"$FT_MYSQL_HOST" -P"$FT_MYSQL_PORT" --protocol=TCP --connect-timeout=3 \
                "${FT_MYSQL_INIT[@]}" "$@"
}
ft_mysql_alive() { mysqladmin --no-defaults --connect-timeout=2 --protocol=TCP -h "$1" -P "$2" -uroot ping >/dev/null 2>&1; }
# ft_mysql_pick: FT_MYSQL_HOST:PORT = the first node of FT_MYSQL_HOSTS that answers (call it
# in the case's own shell after killing a node: a $(ft_sql) subshell's pick is not kept).
ft_mysql_pick() {
        local hp
        for hp in ${FT_MYSQL_HOSTS//,/ }; do
                if ft_mysql_alive "${hp%:*}" "${hp##*:}"; then
                        FT_MYSQL_HOST=${hp%:*} FT_MYSQL_PORT=${hp##*:}
                        return 0
                fi
        done
        return 1
}
ft_sql() { ft_mysql -N -B "$FT_DB" -e "$1"; }
ft_sql_root() { ft_mysql -N -B -e "$1"; }
# ft_wait_sql SQL WANT TRIES PAUSE_S: polls ft_sql SQL until it prints WANT, at most TRIES
# times PAUSE_S apart; 0 once it did, 1 when it never did (the caller asserts after).
ft_wait_sql() {
        local i
        for ((i = 0; i < $3; i++)); do
                [[ $(ft_sql "$1") == "$2" ]] && return 0
                sleep "$4"
        done
        return 1
}
# A Cluster or Sentinel URL goes through sk-rcli (the sk_redis routing layer, DESIGN.md
# 4b: keys routed to their slot's master); one server through redis-cli.
ft_rcli() {
        case ${SECKILL_REDIS_URL:-} in
        redis-cluster://* | redis-sentinel://*) "${SK_BUILD:?}/tests/sk-rcli" "$@" ;;
        *) redis-cli -h "$FT_REDIS_HOST" -p "$FT_REDIS_PORT" "$@" ;;
        esac
}
# ft_script NAME NKEYS KEY... ARG...: one of the sale's Lua scripts as the binaries run it
# (sk-rcli --script, any topology): a fault case sends a delayed copy of a purchase's
# deduct or take with it. Prints the reply; exit 1 on an error reply.
ft_script() { "$FT_BUILD/tests/sk-rcli" --script "$@"; }
# ft_trace_ts T: the snowflake timestamp (ms) of id T, the `ts` deduct.lua and take.lua get.
ft_trace_ts() { echo $((($1 >> 22) + 1704067200000)); }
# ft_cancel FRONT USER ORDER: the buyer cancels; prints "CODE BODY".
ft_cancel() {
        local out
        out=$(curl -s -m 20 -w '\n%{http_code}' -X POST -H "X-User-Id: $2" \
                "http://${FT_ADDR[$1]}/api/v1/orders/$3/cancel")
        printf '%s %s\n' "${out##*$'\n'}" "$(tr -d '\n' <<<"${out%$'\n'*}")"
}
# ft_key VOUCHER meta|stock|users|trace [BUCKET]: a bucket's key (DESIGN.md 4; bucket 0 by default).
ft_key() { printf '%s:{v:%s:%s}:%s' "$FT_PREFIX" "$1" "${3:-0}" "$2"; }
# ft_nbuckets V: V's number of buckets (its DB row).
ft_nbuckets() { ft_sql "SELECT buckets FROM tb_seckill_voucher WHERE voucher_id = $1"; }
# ft_rstock V: V's Redis stock, the sum over its buckets (a missing key counts 0).
ft_rstock() {
        local b n sum=0 x
        n=$(ft_nbuckets "$1")
        for ((b = 0; b < ${n:-1}; b++)); do
                x=$(ft_rcli get "$(ft_key "$1" stock "$b")")
                sum=$((sum + ${x:-0}))
        done
        echo "$sum"
}
# ft_rbuyers V: the buyers in V's Redis users hashes, all buckets (without the placeholder `_`).
ft_rbuyers() {
        local b n
        n=$(ft_nbuckets "$1")
        for ((b = 0; b < ${n:-1}; b++)); do ft_rcli hkeys "$(ft_key "$1" users "$b")"; done | grep -c '^[1-9]'
}

ft_free_port() {
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ft_port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
# ft_low_ports N: N distinct free loopback ports below the kernel's ephemeral range, never
# a port of the shared servers or topologies (tests/support/sk_low_ports.py says which).
ft_low_ports() { python3 "$FT_SRC/tests/support/sk_low_ports.py" "$1"; }

# ft_init NAME: names, environment, migrated database, cleanup trap.
ft_init() {
        FT_NAME=$1
        local run="${1}_$$_${RANDOM}"
        for b in seckill-front seckill-consumer seckill-reconciler seckill-admin; do
                [[ -x $FT_BIN/$b ]] || { echo "missing $FT_BIN/$b (SK_BIN)"; exit 1; }
        done
        FT_DB=$(printf 'skf_%s' "$run" | cut -c1-64)
        FT_PREFIX="skf_${run}"
        FT_TOPIC="skf.${run}"
        FT_GROUP="skf-${run}"
        FT_WORK=$(mktemp -d "/tmp/skf.${1}.XXXXXX")
        : >"$FT_WORK/results.txt"
        : >"$FT_WORK/accepted.tsv"
        ft_write_buy1   # before any (parallel) ft_buy: rewriting it while xargs runs it is ETXTBSY
        export SECKILL_MYSQL_URL="mysql://root@${FT_MYSQL_HOSTS}/${FT_DB}"
        # A Cluster or Sentinel URL (labels cluster/sentinel, tests/support/topo_run.sh)
        # is kept: the case then runs on that topology; ft_rcli follows it.
        case ${SECKILL_REDIS_URL:-} in
        redis-cluster://* | redis-sentinel://*) ;;
        *) export SECKILL_REDIS_URL="redis://${FT_REDIS_HOST}:${FT_REDIS_PORT}/0" ;;
        esac
        export SECKILL_KAFKA_BROKERS=$FT_BROKERS
        export SECKILL_REDIS_PREFIX=$FT_PREFIX
        export SECKILL_TOPIC=$FT_TOPIC
        export SECKILL_GROUP_ID=$FT_GROUP
        export SECKILL_TOPIC_PARTITIONS=$FT_PARTITIONS
        export SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=$FT_DELIVERY_MS
        export SECKILL_WORKER_LEASE_MS=$FT_LEASE_MS
        export SECKILL_METRICS_ADDR=off
        # The front's Redis breaker (DESIGN.md 12) stays open 1 s, not the production 30 s,
        # so a case sees purchases admitted again within seconds of a Redis fault ending.
        export SECKILL_BREAKER_OPEN_MS=${FT_BREAKER_OPEN_MS:-1000}
        # The cases use pay windows of seconds; the webhook grace after pay_deadline
        # (DESIGN.md 13, production 120 s) is 0 unless a case sets FT_PAY_GRACE_S.
        export SECKILL_PAY_GRACE_S=${FT_PAY_GRACE_S:-0}
        unset SECKILL_WORKER_ID SECKILL_FAILPOINTS SECKILL_HTTP_ADDR
        trap ft_cleanup EXIT
        trap 'exit 130' INT TERM
        ft_log "db $FT_DB prefix $FT_PREFIX topic $FT_TOPIC group $FT_GROUP work $FT_WORK"
        "$FT_BIN/seckill-admin" db migrate >"$FT_WORK/migrate.log" 2>&1 ||
                ft_die "db migrate: $(cat "$FT_WORK/migrate.log")"
        ft_tool_build
}

# The Kafka helper tests/faults/tools/fttool.c: the CMake target fttool (tests/fttool of
# the build, $FT_BUILD or else $FT_SRC/build), built with the rest; built here when missing.
ft_tool_build() {
        local dir
        for dir in "$FT_BUILD" "$FT_SRC/build"; do
                FT_TOOL=$dir/tests/fttool
                [[ -x $FT_TOOL ]] && return 0
        done
        dir=$FT_BUILD
        [[ -f $dir/CMakeCache.txt ]] || dir=$FT_SRC/build
        FT_TOOL=$dir/tests/fttool
        cmake --build "$dir" --target fttool >"$FT_WORK/fttool-build.log" 2>&1 ||
                ft_die "fttool build: $(tail -n 20 "$FT_WORK/fttool-build.log")"
}

# Stop one service by name: SIGTERM (SIGCONT too), wait up to $2 s (10), then SIGKILL.
ft_stop() {
        local name=$1 wait_s=${2:-10} pid i
        pid=${FT_PID[$name]:-}
        [[ -n $pid ]] || return 0
        kill -TERM "$pid" 2>/dev/null
        kill -CONT "$pid" 2>/dev/null
        for ((i = 0; i < wait_s * 10; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
                ft_log "$name (pid $pid) did not stop in ${wait_s}s: SIGKILL"
                kill -KILL "$pid" 2>/dev/null
        fi
        wait "$pid" 2>/dev/null
        unset "FT_PID[$name]"
}
# SIGKILL one service by name (a crash).
ft_kill() {
        local name=$1 pid
        pid=${FT_PID[$name]:-}
        [[ -n $pid ]] || return 0
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        unset "FT_PID[$name]"
}
# Wait up to $2 s (30) for service $1 to exit by itself (a failpoint `exit`). 0 iff it did.
ft_wait_exit() {
        local name=$1 wait_s=${2:-30} pid i
        pid=${FT_PID[$name]:-}
        [[ -n $pid ]] || return 0
        for ((i = 0; i < wait_s * 10; i++)); do
                if ! kill -0 "$pid" 2>/dev/null; then
                        wait "$pid" 2>/dev/null
                        ft_log "$name (pid $pid) exited (status $?)"
                        unset "FT_PID[$name]"
                        return 0
                fi
                sleep 0.1
        done
        return 1
}
ft_alive() { [[ -n ${FT_PID[$1]:-} ]] && kill -0 "${FT_PID[$1]}" 2>/dev/null; }

ft_cleanup() {
        local rc=$? name k
        trap - EXIT INT TERM
        for name in "${!FT_PID[@]}"; do
                kill -CONT "${FT_PID[$name]}" 2>/dev/null
                kill -TERM "${FT_PID[$name]}" 2>/dev/null
        done
        sleep 0.5
        for name in "${!FT_PID[@]}"; do
                ft_stop "$name" 5
        done
        # Binaries built with -DSK_SANITIZE=ON report to their logs (the fault paths are
        # where error-handling bugs hide): any report fails the case.
        if [[ -n ${FT_WORK:-} ]] && grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' \
                "$FT_WORK"/*.log >"$FT_WORK/sanitizer.txt" 2>/dev/null; then
                for k in $(cat "$FT_WORK/sanitizer.txt"); do
                        ft_log "FAIL: sanitizer report in $(basename "$k"):"
                        grep -m 5 -E 'ERROR: |SUMMARY: |runtime error:|^    #[0-3] ' "$k" | sed 's/^/    /'
                done
                FT_FAILS=$((FT_FAILS + 1))
        fi
        if [[ -n $FT_PRIV_KAFKA_DIR ]]; then
                ft_kafka_ctl kafka-stop >/dev/null 2>&1
        fi
        for k in "${FT_CLEANUP_HOOKS[@]}"; do "$k"; done
        if [[ -n ${FT_TOOL:-} && -x ${FT_TOOL:-} && -n ${FT_TOPIC:-} && $FT_BROKERS == "$FT_SHARED_BROKERS" ]]; then
                timeout 20 "$FT_TOOL" delete-topics "$FT_BROKERS" "$FT_TOPIC" "$FT_TOPIC.dlq" >/dev/null 2>&1
        fi
        if [[ -n $FT_PRIV_REDIS_PID ]]; then
                kill -TERM "$FT_PRIV_REDIS_PID" 2>/dev/null
                wait "$FT_PRIV_REDIS_PID" 2>/dev/null
        fi
        FT_REDIS_HOST=$FT_SHARED_REDIS_HOST FT_REDIS_PORT=$FT_SHARED_REDIS_PORT
        ft_record "$rc"
        if [[ -n ${FT_DB:-} ]]; then
                ft_sql_root "DROP DATABASE IF EXISTS \`$FT_DB\`" >/dev/null 2>&1
                ft_rcli --scan --pattern "${FT_PREFIX}:*" 2>/dev/null | while read -r k; do
                        ft_rcli unlink "$k" >/dev/null
                done
        fi
        for k in "${FT_CLEANUP_LAST[@]}"; do "$k"; done
        if [[ $FT_FAILS -gt 0 || $rc -ne 0 ]]; then
                ft_log "logs kept in $FT_WORK"
                [[ $rc -eq 0 ]] && rc=1
        else
                [[ -n ${FT_WORK:-} ]] && rm -rf "$FT_WORK"
        fi
        ft_log "done in $(($(date +%s) - FT_T0))s, $FT_FAILS failure(s)"
        exit "$rc"
}

ft_finish() {
        [[ $FT_FAILS -eq 0 ]] && exit 0
        exit 1
}

# Split "VAR=VAL... [-- ARGS...]" into FT_ENV and FT_ARGS.
ft_split_args() {
        FT_ENV=() FT_ARGS=()
        while [[ $# -gt 0 ]]; do
                if [[ $1 == -- ]]; then shift; FT_ARGS=("$@"); return; fi
                FT_ENV+=("$1")
                shift
        done
}

# ft_consumer NAME [VAR=VAL...] [-- ARGS...]
ft_consumer() {
        local name=$1
        shift
        ft_split_args "$@"
        env $(ft_db_url consumer) "${FT_ENV[@]}" "$FT_BIN/seckill-consumer" --workers 1 --metrics-addr off \
                -X session.timeout.ms=6000 -X heartbeat.interval.ms=1000 "${FT_ARGS[@]}" \
                >>"$FT_WORK/$name.log" 2>&1 &
        FT_PID[$name]=$!
        ft_log "started consumer $name (pid $!)${FT_ENV:+ ${FT_ENV[*]}}"
}

# ft_front NAME [VAR=VAL...] [-- ARGS...]: start and wait (30 s) until /readyz answers 200.
# The identity mode is named (DESIGN.md 15: jwt is the binary's default):
# SECKILL_AUTH=trusted-header, SECKILL_TRUSTED_PROXIES=127.0.0.1/32,unix (the case's curl
# on loopback plays the gateway); a case's VAR=VAL says otherwise. The front logs at
# debug (SECKILL_LOG_LEVEL=debug; a case's VAR=VAL says otherwise): among others one
# `delivered` line per PERSISTED message with its partition and offset, which
# ft_why_undecided follows.
ft_front() {
        local name=$1 port ops i
        shift
        ft_split_args "$@"
        port=$(ft_free_port)
        ops=$(ft_free_port)
        while [[ $ops == "$port" ]]; do ops=$(ft_free_port); done
        FT_ADDR[$name]=127.0.0.1:$port
        FT_OPS[$name]=127.0.0.1:$ops    # /healthz, /readyz, /metrics (DESIGN.md 15)
        env SECKILL_OPS_ADDR="127.0.0.1:$ops" SECKILL_AUTH=trusted-header SECKILL_LOG_LEVEL=debug \
                SECKILL_TRUSTED_PROXIES=127.0.0.1/32,unix $(ft_db_url front) "${FT_ENV[@]}" "$FT_BIN/seckill-front" \
                --http-addr "127.0.0.1:$port" "${FT_ARGS[@]}" >>"$FT_WORK/$name.log" 2>&1 &
        FT_PID[$name]=$!
        for ((i = 0; i < 300; i++)); do
                ft_alive "$name" || { tail -n 20 "$FT_WORK/$name.log"; ft_die "front $name exited at startup"; }
                if [[ $(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$ops/readyz") == 200 ]]; then
                        ft_log "started front $name (pid ${FT_PID[$name]}) on 127.0.0.1:$port${FT_ENV:+ ${FT_ENV[*]}}"
                        return 0
                fi
                sleep 0.1
        done
        tail -n 20 "$FT_WORK/$name.log"
        ft_die "front $name not ready in 30 s"
}

# The payment provider's side (DESIGN.md 15): ft_pay_keys FILE SECRET... writes a payment
# keys file (one secret per line); ft_pay_sign SECRET T BODY prints the v1= value
# (hex HMAC-SHA256 of "T.BODY", openssl); ft_pay ADDR ORDER TXN AMOUNT [CUR [SECRET [T]]]
# POSTs a signed callback to the front at ADDR and prints "CODE BODY" (defaults: CNY,
# $FT_PAY_SECRET, now). FT_PAY_SIG, when set, replaces the whole signature header.
ft_pay_keys() {
        local f=$1
        shift
        printf '%s\n' "$@" >"$f"
        chmod 0600 "$f"
}
ft_pay_sign() { printf '%s.%s' "$2" "$3" | openssl dgst -sha256 -hmac "$1" -r | cut -d' ' -f1; }
ft_pay() {
        local addr=$1 order=$2 txn=$3 amount=$4 cur=${5:-CNY} secret=${6:-$FT_PAY_SECRET}
        local t=${7:-$(date +%s)} body
        body=$(printf '{"orderId":"%s","providerTxnId":"%s","amount":"%s","currency":"%s"}' \
                "$order" "$txn" "$amount" "$cur")
        ft_pay_body "$addr" "$body" "$secret" "$t"
}
# ft_pay_body ADDR BODY [SECRET [T]]: the callback with BODY as given (any bytes printf %s
# keeps), signed like ft_pay; prints "CODE BODY".
ft_pay_body() {
        local addr=$1 body=$2 secret=${3:-$FT_PAY_SECRET} t=${4:-$(date +%s)} sig out
        sig=${FT_PAY_SIG:-"t=$t,v1=$(ft_pay_sign "$secret" "$t" "$body")"}
        out=$(curl -s -m 20 -w '\n%{http_code}' -X POST -H "Content-Type: application/json" \
                -H "X-Payment-Signature: $sig" --data-binary "$body" \
                "http://$addr/api/v1/payments/callback")
        printf '%s %s\n' "${out##*$'\n'}" "$(tr -d '\n' <<<"${out%$'\n'*}")"
}

# ft_voucher STOCK [BUCKETS [PRICE [CURRENCY]]]: prints the id of a new voucher on sale for
# the next two hours, preheated, with BUCKETS buckets (default $FT_BUCKETS, else 1;
# DESIGN.md 14), priced PRICE minor units (default 0) in CURRENCY (default: the admin's).
ft_voucher() {
        local stock=$1 buckets=${2:-${FT_BUCKETS:-1}} price=${3:-0} now out id
        local cur=()
        [[ -n ${4:-} ]] && cur=(--currency "$4")
        now=$(date +%s)
        out=$("$FT_BIN/seckill-admin" voucher create --stock "$stock" --buckets "$buckets" --begin "$((now - 60))" \
                --end "$((now + 7200))" --price "$price" "${cur[@]}" --preheat 2>>"$FT_WORK/admin.log") ||
                ft_die "voucher create: $(tail -n 3 "$FT_WORK/admin.log")"
        id=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out" | tail -n 1)
        [[ -n $id ]] || ft_die "voucher create printed no voucherId: $out"
        # Preheat again (idempotent) in case --preheat is not honoured by this build.
        "$FT_BIN/seckill-admin" voucher preheat "$id" >>"$FT_WORK/admin.log" 2>&1 ||
                ft_die "voucher preheat $id: $(tail -n 3 "$FT_WORK/admin.log")"
        echo "$id"
}

# The per-request script xargs runs: ADDR V USER -> appends "USER CODE BODY" to results.
ft_write_buy1() {
        cat >"$FT_WORK/buy1.sh" <<'EOF'
#!/usr/bin/env bash
out=$(curl -s -m 20 -o - -w '\n%{http_code}' -X POST -H "X-User-Id: $3" \
        "http://$1/api/v1/vouchers/$2/seckill" 2>/dev/null)
code=${out##*$'\n'}
body=${out%$'\n'*}
[[ $code == "$out" ]] && body=
printf '%s %s %s\n' "$3" "${code:-000}" "$(tr -d '\n' <<<"$body")" >>"$4"
EOF
        chmod +x "$FT_WORK/buy1.sh"
}

# ft_buy FRONT V FIRST_USER COUNT [PARALLEL=8]: one purchase per user FIRST..FIRST+COUNT-1.
# Every 202 is appended to $FT_WORK/accepted.tsv as "user order trace voucher"; all answers go
# to $FT_WORK/results.txt. Prints the tally of status codes of this batch.
ft_buy() {
        seq "$3" $(($3 + $4 - 1)) | ft_buy_users "$1" "$2" "${5:-8}" "users $3..$(($3 + $4 - 1))"
}
# ft_buy_users FRONT V PARALLEL LABEL: ft_buy for the user ids read from stdin (one a line);
# LABEL names them in the log line.
ft_buy_users() {
        local front=$1 v=$2 par=$3 label=$4 addr batch lockfd
        addr=${FT_ADDR[$front]:?unknown front $front}
        batch=$(mktemp "$FT_WORK/batch.XXXXXX")
        xargs -P "$par" -I{} "$FT_WORK/buy1.sh" "$addr" "$v" {} "$batch"
        # Concurrent ft_buy calls (in the background) append whole batches under a lock.
        exec {lockfd}>>"$FT_WORK/.append.lock"
        flock "$lockfd"
        cat "$batch" >>"$FT_WORK/results.txt"
        awk '$2 == 202' "$batch" |
                sed -n "s/^\([0-9]*\) 202 .*\"orderId\":\"\([0-9]*\)\".*\"traceId\":\"\([0-9]*\)\".*/\1 \2 \3 $v/p" \
                >>"$FT_WORK/accepted.tsv"
        exec {lockfd}>&-
        ft_log "buy via $front $label: $(awk '{print $2}' "$batch" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
        rm -f "$batch"
}

# ft_homed H N FROM COUNT: COUNT user ids from FROM up whose home bucket among N is H
# (CRC-16/XMODEM of the decimal id mod N, sk_home_bucket; DESIGN.md 4).
ft_homed() {
        python3 -c 'import binascii, sys
h, n, u, c = map(int, sys.argv[1:5])
while c > 0:
    if binascii.crc_hqx(str(u).encode(), 0) % n == h:
        print(u)
        c -= 1
    u += 1' "$@"
}

# ft_answer USER: "CODE ERRCODE" of USER's last answer in results.txt (ERRCODE: the body's
# "code", - when it has none; CODE 000: no answer, the connection died).
ft_answer() {
        grep "^$1 " "$FT_WORK/results.txt" | tail -n 1 |
                awk '{c = "-"; if (match($0, /"code":[0-9]+/)) c = substr($0, RSTART + 7, RLENGTH - 7); print $2, c}'
}

# Load accepted.tsv into the case's own database (table ft_accepted) for the joins.
ft_load_accepted() {
        ft_sql "CREATE TABLE IF NOT EXISTS ft_accepted (trace_id BIGINT PRIMARY KEY,
                order_id BIGINT NOT NULL, user_id BIGINT NOT NULL, voucher_id BIGINT NOT NULL);
                TRUNCATE ft_accepted" ||
                ft_die "cannot create ft_accepted"
        [[ -s $FT_WORK/accepted.tsv ]] || return 0
        awk '{printf "INSERT INTO ft_accepted VALUES (%s, %s, %s, %s);\n", $3, $2, $1, $4}' "$FT_WORK/accepted.tsv" |
                ft_mysql "$FT_DB" ||
                ft_fail "loading accepted.tsv (a traceId answered twice?)"
}

# ft_settle TIMEOUT_S: wait until every logged 202 has an outcome row. 0 iff it happened.
ft_settle() {
        local timeout_s=${1:-60} t0=$SECONDS n undecided=-1
        ft_load_accepted
        n=$(wc -l <"$FT_WORK/accepted.tsv")
        while ((SECONDS - t0 < timeout_s)); do
                undecided=$(ft_sql "SELECT COUNT(*) FROM ft_accepted a LEFT JOIN tb_seckill_outcome o
                        ON o.trace_id = a.trace_id WHERE o.trace_id IS NULL" 2>/dev/null || echo -1)
                if [[ $undecided == 0 ]]; then
                        ft_log "settled: $n accepted purchases decided ($((SECONDS - t0))s)"
                        ft_recovered
                        return 0
                fi
                sleep 1
        done
        ft_log "not settled after ${timeout_s}s: $undecided of $n accepted purchases undecided"
        ft_why_undecided
        return 1
}

# ft_why_undecided: for each 202 with no outcome row (at most 10), where its traceId is:
# where the front's delivery report put it (the front's `delivered` debug line: partition
# and offset, or `delivered_without_offset`), in the topic (partition offset), in the
# DLQ, in the services' logs, and the group's lag; then which of the suspects it points
# to: the front answered 202 with no PERSISTED report, Kafka lost an acknowledged message
# (offset below the log start, at or above the high watermark, or holding another
# message), or the dump missed it. The dumps stay in $FT_WORK (topic.dump, dlq.dump,
# topic.marks: "PARTITION LOW HIGH" per partition, broker.log: the broker's lines about
# the topic when its log is found). Diagnostics only: a lost accepted purchase must say
# whether Kafka, the consumer, the harness or the client's record lost it.
ft_why_undecided() {
        local t where dlq logs rep p o lo hi at verdict f
        [[ -n ${FT_TOOL:-} ]] || return 0
        timeout 60 "$FT_TOOL" marks "$FT_BROKERS" "$FT_TOPIC" >"$FT_WORK/topic.marks" 2>>"$FT_WORK/fttool.log"
        timeout 60 "$FT_TOOL" dump "$FT_BROKERS" "$FT_TOPIC" >"$FT_WORK/topic.dump" 2>>"$FT_WORK/fttool.log"
        timeout 60 "$FT_TOOL" dump "$FT_BROKERS" "$FT_TOPIC.dlq" >"$FT_WORK/dlq.dump" 2>>"$FT_WORK/fttool.log"
        ft_log "diagnosis: topic $(wc -l <"$FT_WORK/topic.dump") message(s), DLQ $(wc -l <"$FT_WORK/dlq.dump"), group lag $(ft_lag)"
        ft_log "topic partitions (partition log-start high-watermark, dumped): $(while read -r p lo hi; do
                printf '%s:%s..%s(%s) ' "$p" "$lo" "$hi" "$(awk -v p="$p" '$1 == p' "$FT_WORK/topic.dump" | wc -l)"
        done <"$FT_WORK/topic.marks")"
        [[ -s $FT_WORK/fttool.log ]] && tail -n 5 "$FT_WORK/fttool.log" | sed 's/^/    fttool: /'
        for f in "$FT_SRC/.stack/logs/kafka.log" "${SECKILL_STACK_DIR:-/nonexistent}/logs/kafka.log"; do
                [[ -r $f ]] && grep -h -F "$FT_TOPIC" "$f" >>"$FT_WORK/broker.log" 2>/dev/null
        done
        [[ -s $FT_WORK/broker.log ]] && ft_log "the broker's log names the topic $(wc -l <"$FT_WORK/broker.log") time(s) (broker.log):" &&
                tail -n 5 "$FT_WORK/broker.log" | cut -c1-300 | sed 's/^/    /'
        while read -r t; do
                where=$(grep -F "\"traceId\":\"$t\"" "$FT_WORK/topic.dump" | awk '{printf "%s/%s ", $1, $2}')
                dlq=$(grep -c -F "\"traceId\":\"$t\"" "$FT_WORK/dlq.dump")
                logs=$(grep -l -F "$t" "$FT_WORK"/*.log 2>/dev/null | xargs -r -n1 basename | paste -sd, -)
                # The front's report: "partition offset" of its last delivered line for t.
                rep=$(grep -h -E "event=delivered(_without_offset)? .*trace_id=$t( |$)" "$FT_WORK"/*.log 2>/dev/null |
                        tail -n 1 | sed -n 's/.*partition=\(-\{0,1\}[0-9]*\) offset=\(-\{0,1\}[0-9]*\).*/\1 \2/p')
                if [[ -n $where ]]; then
                        verdict="in the topic: the consumer or the outcome lost it"
                elif [[ -z $rep ]]; then
                        verdict="no PERSISTED report logged for it: the front answered 202 without one (or its log level is above debug)"
                else
                        read -r p o <<<"$rep"
                        lo= hi=
                        read -r lo hi < <(awk -v p="$p" '$1 == p {print $2, $3}' "$FT_WORK/topic.marks")
                        at=$(awk -v p="$p" -v o="$o" '$1 == p && $2 == o' "$FT_WORK/topic.dump" |
                                sed -n 's/.*"traceId":"\([0-9]*\)".*/\1/p')
                        if ((o < 0)); then
                                verdict="PERSISTED without an offset (a batch the broker called a duplicate): nothing shows Kafka stored this message"
                        elif [[ -z $lo ]]; then
                                verdict="partition $p is not in the topic's metadata now: Kafka lost it (topic re-created with fewer partitions?)"
                        elif ((o < lo)); then
                                verdict="offset $o is below partition $p's log start $lo: Kafka deleted it (retention, DeleteRecords or a re-created topic)"
                        elif ((o >= hi)); then
                                verdict="offset $o is at or above partition $p's high watermark $hi: Kafka lost it (log truncated or topic re-created)"
                        elif [[ -n $at ]]; then
                                verdict="offset $p/$o holds trace $at: Kafka acknowledged it at another message's place (duplicate sequence or re-created topic)"
                        else
                                verdict="offset $p/$o lies between log start $lo and high watermark $hi but the dump has no message there: the dump is wrong"
                        fi
                fi
                ft_log "undecided trace $t ($(grep " $t " "$FT_WORK/accepted.tsv" | awk '{print "user " $1 ", order " $2}')): front's report ${rep:-none}, topic at ${where:-nowhere}, DLQ copies $dlq, in logs: ${logs:-none}"
                ft_log "    -> $verdict"
                grep -h -F "$t" "$FT_WORK"/*.log 2>/dev/null | head -n 8 | sed 's/^/    /'
        done < <(ft_sql "SELECT a.trace_id FROM ft_accepted a LEFT JOIN tb_seckill_outcome o
                ON o.trace_id = a.trace_id WHERE o.trace_id IS NULL ORDER BY a.trace_id LIMIT 10")
}

# ft_reconcile TIMEOUT_S [ARGS...]: waits out the grace, then runs
# `seckill-reconciler --repair --grace-seconds G` until a pass exits 0 (consistent) or
# the timeout passes. Exit 1 (repaired) and 2 (waiting) mean "run again". Every pass's
# output is kept in $FT_WORK/recon.N.log. Returns the last exit status.
ft_reconcile() {
        local timeout_s=${1:-90} t0=$SECONDS pass=0 rc=2
        shift
        sleep $((FT_GRACE_S + 1))
        while :; do
                pass=$((pass + 1))
                env $(ft_db_url reconciler) timeout 120 "$FT_BIN/seckill-reconciler" --repair --grace-seconds "$FT_GRACE_S" "$@" \
                        >"$FT_WORK/recon.$pass.log" 2>&1
                rc=$?
                ft_log "reconciler pass $pass: exit $rc"
                [[ $rc == 0 ]] && break
                if ((SECONDS - t0 >= timeout_s)); then
                        tail -n 30 "$FT_WORK/recon.$pass.log"
                        break
                fi
                sleep 2
        done
        FT_RECON_RC=$rc
        return "$rc"
}

# ft_wait_state_redis V [TIMEOUT_S]: wait until V's degrade state (tb_seckill_switch,
# DESIGN.md 12) is back to redis. While V is draining, db or rebuilding no front or
# reconciler writes V's Redis keys, so a reconciler pass can end clean with Redis still
# empty; the Redis = DB checks only hold once a front's recovery rebuilt V.
ft_wait_state_redis() {
        local v=$1 timeout_s=${2:-60} t0=$SECONDS st
        while :; do
                st=$(ft_sql "SELECT state FROM tb_seckill_switch WHERE scope = $v")
                [[ -z $st || $st == redis ]] && return 0  # no row: never left redis
                if ((SECONDS - t0 >= timeout_s)); then
                        ft_log "voucher $v still in degrade state '$st' after ${timeout_s}s"
                        return 1
                fi
                sleep 1
        done
}

# ft_check V [--sold-out]: the invariants of DESIGN.md 9 on voucher V, plus the client's
# record (every 202). --sold-out also asserts zero undersell (active orders = init_stock).
ft_check() {
        local v=$1 sold_out=0 init active dbstock rstock bad rusers dusers vrc
        [[ ${2:-} == --sold-out ]] && sold_out=1
        # Quiesced (DESIGN.md 9, 12) includes the voucher back in state redis: a front
        # rebuilds Redis only once Redis has been healthy for its recovery hold, which
        # can outlast ft_settle and a clean reconciler pass (seen in CI: 0182).
        ft_wait_state_redis "$v" 60 || ft_fail "voucher $v not back to state redis before the checks"
        ft_load_accepted
        "$FT_BIN/seckill-admin" verify "$v" --quiesced >"$FT_WORK/verify.$v.log" 2>&1
        vrc=$?
        if [[ $vrc == 0 ]]; then ft_ok "seckill-admin verify $v --quiesced: exit 0"; else
                ft_fail "seckill-admin verify $v --quiesced: exit $vrc: $(tr '\n' ' ' <"$FT_WORK/verify.$v.log" | cut -c1-600)"
        fi
        # The stock is the sum of the voucher's bucket rows (DESIGN.md 6); verify above checks each bucket.
        read -r init dbstock < <(ft_sql "SELECT init_stock, (SELECT COALESCE(SUM(stock), 0) FROM tb_seckill_stock s
                WHERE s.voucher_id = v.voucher_id) FROM tb_seckill_voucher v WHERE voucher_id = $v")
        bad=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_stock s WHERE s.voucher_id = $v AND s.init_stock - s.stock <>
                (SELECT COUNT(*) FROM tb_voucher_order o WHERE o.voucher_id = s.voucher_id AND o.bucket = s.bucket
                 AND o.status IN (1, 2))")
        ft_eq "$bad" 0 "per bucket: init_stock - stock = active orders of the bucket"
        active=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $v AND status IN (1, 2)")
        ft_log "voucher $v: init $init, DB stock $dbstock, active orders $active, 202s $(ft_sql "SELECT COUNT(*) FROM ft_accepted WHERE voucher_id = $v")"
        ((active <= init)) && ft_ok "zero oversell ($active <= $init)" || ft_fail "OVERSELL: $active active orders for $init units"
        ft_eq "$((init - dbstock))" "$active" "init_stock - stock = active orders"
        ((sold_out)) && ft_eq "$active" "$init" "zero undersell (sold out)"
        bad=$(ft_sql "SELECT COUNT(*) FROM (SELECT user_id FROM tb_voucher_order WHERE voucher_id = $v
                AND status IN (1, 2) GROUP BY user_id HAVING COUNT(*) > 1) d")
        ft_eq "$bad" 0 "no user with two orders"
        bad=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order vo LEFT JOIN tb_seckill_outcome o
                ON o.trace_id = vo.trace_id AND o.outcome = 1 AND o.order_id = vo.id
                WHERE vo.voucher_id = $v AND o.trace_id IS NULL")
        ft_eq "$bad" 0 "every order has its CREATED outcome"
        # Invariant 4: every 202 is CREATED + order row, or FAILED + RESTORE row; never both, never neither.
        bad=$(ft_sql "SELECT COUNT(*) FROM ft_accepted a LEFT JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id
                WHERE a.voucher_id = $v AND o.trace_id IS NULL")
        ft_eq "$bad" 0 "every 202 has an outcome"
        bad=$(ft_sql "SELECT COUNT(*) FROM ft_accepted a JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id
                WHERE a.voucher_id = $v AND (o.order_id <> a.order_id OR o.user_id <> a.user_id OR o.voucher_id <> $v)")
        ft_eq "$bad" 0 "outcome rows match the 202s (order, user, voucher)"
        bad=$(ft_sql "SELECT COUNT(*) FROM ft_accepted a JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id
                LEFT JOIN tb_voucher_order vo ON vo.id = a.order_id AND vo.trace_id = a.trace_id
                WHERE a.voucher_id = $v AND o.outcome = 1 AND vo.id IS NULL")
        ft_eq "$bad" 0 "every CREATED 202 has its order row"
        bad=$(ft_sql "SELECT COUNT(*) FROM ft_accepted a JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id
                LEFT JOIN tb_voucher_reconcile_log rl ON rl.trace_id = a.trace_id AND rl.log_type = 1
                WHERE a.voucher_id = $v AND o.outcome = 2 AND rl.id IS NULL")
        ft_eq "$bad" 0 "every FAILED 202 has its RESTORE row"
        bad=$(ft_sql "SELECT COUNT(*) FROM ft_accepted a JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id
                WHERE a.voucher_id = $v AND ((o.outcome = 1 AND EXISTS (SELECT 1 FROM tb_voucher_reconcile_log rl
                         WHERE rl.trace_id = a.trace_id AND rl.log_type = 1 AND rl.business_type NOT IN (4, 5)))
                   OR (o.outcome = 2 AND EXISTS (SELECT 1 FROM tb_voucher_order vo WHERE vo.trace_id = a.trace_id)))")
        ft_eq "$bad" 0 "no 202 is both CREATED and FAILED (order + RESTORE)"
        ft_log "202 outcomes: $(ft_sql "SELECT IF(o.outcome = 1, 'CREATED', CONCAT('FAILED/', COALESCE(o.reason, '?'))) k, COUNT(*)
                FROM ft_accepted a JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id WHERE a.voucher_id = $v GROUP BY k" | tr '\t\n' '= ')"
        # A 503 that said state FAILED (the front fenced the trace) never becomes an order.
        awk '$2 == 503' "$FT_WORK/results.txt" | grep '"state":"FAILED"' |
                sed -n 's/.*"traceId":"\([0-9]*\)".*/\1/p' >"$FT_WORK/failed503.txt"
        if [[ -s $FT_WORK/failed503.txt ]]; then
                bad=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $v AND trace_id IN ($(paste -sd, "$FT_WORK/failed503.txt"))")
                ft_eq "$bad" 0 "no order for the $(wc -l <"$FT_WORK/failed503.txt") purchase(s) answered 503 FAILED"
        fi
        ft_log "all outcomes of $v: $(ft_sql "SELECT IF(outcome = 1, 'CREATED', CONCAT('FAILED/', COALESCE(reason, '?'))) k, COUNT(*)
                FROM tb_seckill_outcome WHERE voucher_id = $v GROUP BY k" | tr '\t\n' '= ')"
        # Invariant 3: Redis = DB after quiescence and --repair, per bucket (DESIGN.md 4).
        ft_check_redis "$v"
}

# ft_check_told V: invariant 7 (DESIGN.md 9) for the purchases of V in results.txt: no
# buyer told 409/10005 (sold out) who was never answered 200 or 202 holds an order of V
# (any status), and every buyer told 409/10006 (already purchased) holds an active one.
ft_check_told() {
        local v=$1 users bad
        users=$(awk '$2 == 409 && /"code":10005/ {print $1}' "$FT_WORK/results.txt" | sort -u)
        users=$(comm -23 <(echo "$users") <(awk '$2 == 200 || $2 == 202 {print $1}' "$FT_WORK/results.txt" | sort -u) | grep -v '^$' | paste -sd,)
        if [[ -n $users ]]; then
                bad=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $v AND user_id IN ($users)")
                ft_eq "$bad" 0 "no order for the $(tr ',' '\n' <<<"$users" | wc -l) buyer(s) told only 409 sold out"
        fi
        users=$(awk '$2 == 409 && /"code":10006/ {print $1}' "$FT_WORK/results.txt" | sort -u | paste -sd,)
        if [[ -n $users ]]; then
                bad=$(ft_sql "SELECT COUNT(*) FROM (SELECT DISTINCT user_id FROM tb_voucher_order
                        WHERE voucher_id = $v AND status IN (1, 2) AND user_id IN ($users)) d")
                ft_eq "$bad" "$(tr ',' '\n' <<<"$users" | wc -l)" "every buyer told 409 already purchased holds an active order"
        fi
}

# ft_check_db_path FRONT V: every purchase answered 200 (the DB-only path, DESIGN.md 12; the
# case's purchases must all be of V) has its CREATED outcome with path db and its order
# row, for that user and voucher, with the orderId and traceId of the answer; orders/me
# says CREATED for the first 20 of them. FT_DB_PATH_N = the number of 200s.
ft_check_db_path() {
        local front=$1 v=$2 n good user bad=0
        awk '$2 == 200' "$FT_WORK/results.txt" |
                sed -n 's/^\([0-9]*\) 200 .*"orderId":"\([0-9]*\)".*"traceId":"\([0-9]*\)".*/\1 \2 \3/p' \
                >"$FT_WORK/created200.txt"
        n=$(wc -l <"$FT_WORK/created200.txt")
        FT_DB_PATH_N=$n
        ft_eq "$n" "$(awk '$2 == 200' "$FT_WORK/results.txt" | wc -l)" "every 200 carries an orderId and a traceId"
        ((n > 0)) || return 0
        good=$(awk -v v="$v" '{printf "SELECT COUNT(*) FROM tb_seckill_outcome o JOIN tb_voucher_order vo ON vo.id = o.order_id AND vo.trace_id = o.trace_id AND vo.user_id = o.user_id AND vo.voucher_id = o.voucher_id WHERE o.trace_id = %s AND o.order_id = %s AND o.user_id = %s AND o.voucher_id = %s AND o.outcome = 1 AND o.path = \"db\";\n", $3, $2, $1, v}' \
                "$FT_WORK/created200.txt" | ft_mysql -N -B "$FT_DB" | awk '{s += $1} END {print s + 0}')
        ft_eq "$good" "$n" "purchases answered 200 that are CREATED on path db with their order row"
        while read -r user; do
                [[ $(ft_me_state "$front" "$v" "$user") == CREATED ]] || { bad=$((bad + 1)); ft_log "user $user answered 200: orders/me $(ft_me_state "$front" "$v" "$user")"; }
        done < <(awk '{print $1}' "$FT_WORK/created200.txt" | head -n 20)
        ft_eq "$bad" 0 "orders/me says CREATED for $(awk 'NR <= 20' "$FT_WORK/created200.txt" | wc -l) purchases answered 200"
}

# ft_check_redis V: for every bucket b of V, Redis stock = its tb_seckill_stock row, and the
# union of the users hashes (without the placeholder `_`) = the DB's active buyers, each
# in its home bucket (CRC-16/XMODEM of the decimal id mod N, sk_home_bucket).
ft_check_redis() {
        local v=$1 n b rstock dstock bad=0 rusers dusers wrong
        n=$(ft_nbuckets "$v")
        for ((b = 0; b < ${n:-1}; b++)); do
                rstock=$(ft_rcli get "$(ft_key "$v" stock "$b")")
                dstock=$(ft_sql "SELECT stock FROM tb_seckill_stock WHERE voucher_id = $v AND bucket = $b")
                [[ $rstock == "$dstock" ]] || { bad=$((bad + 1)); ft_log "bucket $b: Redis stock '$rstock', DB '$dstock'"; }
        done
        ft_eq "$bad" 0 "Redis stock = DB stock in each of the $n bucket(s)"
        : >"$FT_WORK/rusers.$v"
        for ((b = 0; b < ${n:-1}; b++)); do
                ft_rcli hkeys "$(ft_key "$v" users "$b")" | grep -v -e '^$' -e '^_$' | sed "s/\$/ $b/" >>"$FT_WORK/rusers.$v"
        done
        rusers=$(awk '{print $1}' "$FT_WORK/rusers.$v" | sort | md5sum)
        dusers=$(ft_sql "SELECT user_id FROM tb_voucher_order WHERE voucher_id = $v AND status IN (1, 2)" | grep -v '^$' | sort | md5sum)
        ft_eq "$rusers" "$dusers" "Redis users hashes = DB active buyers ($(wc -l <"$FT_WORK/rusers.$v") users)"
        wrong=$(python3 -c 'import binascii, sys
n = int(sys.argv[1]); bad = 0
for line in open(sys.argv[2]):
    u, b = line.split()
    if binascii.crc_hqx(u.encode(), 0) % n != int(b): bad += 1
print(bad)' "${n:-1}" "$FT_WORK/rusers.$v")
        ft_eq "$wrong" 0 "every Redis buyer is in its home bucket"
}

# ft_me FRONT V USER: orders/me state of USER.
ft_me_state() {
        curl -s -m 10 -H "X-User-Id: $3" "http://${FT_ADDR[$1]}/api/v1/vouchers/$2/orders/me" |
                sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p'
}

# ft_check_me FRONT V: every FAILED 202 answers orders/me FAILED (or CREATED when the
# reason is has_order), every CREATED one CREATED (invariant 4). Capped at 200 lookups.
ft_check_me() {
        local front=$1 v=$2 user outcome reason st bad=0 n=0
        while read -r user outcome reason; do
                n=$((n + 1))
                st=$(ft_me_state "$front" "$v" "$user")
                if [[ $outcome == 1 || $reason == has_order ]]; then
                        [[ $st == CREATED ]] || { bad=$((bad + 1)); ft_log "user $user outcome $outcome/$reason: orders/me $st"; }
                else
                        [[ $st == FAILED ]] || { bad=$((bad + 1)); ft_log "user $user outcome $outcome/$reason: orders/me $st"; }
                fi
        done < <(ft_sql "SELECT a.user_id, o.outcome, COALESCE(o.reason, '-') FROM ft_accepted a
                JOIN tb_seckill_outcome o ON o.trace_id = a.trace_id WHERE a.voucher_id = $v
                ORDER BY o.outcome DESC, a.user_id LIMIT 200")
        ft_eq "$bad" 0 "orders/me agrees with the outcome for $n accepted purchases"
}

# ft_lag: sum over the topic's partitions of high watermark - committed offset of the group.
ft_lag() {
        timeout 20 "$FT_TOOL" lag "$SECKILL_KAFKA_BROKERS" "$FT_GROUP" "$FT_TOPIC" 2>>"$FT_WORK/fttool.log"
}
# ft_wait_lag0 TIMEOUT_S: wait until the group has committed everything in the topic.
ft_wait_lag0() {
        local timeout_s=${1:-60} t0=$SECONDS lag=
        while ((SECONDS - t0 < timeout_s)); do
                lag=$(ft_lag)
                [[ $lag == 0 ]] && { ft_log "group caught up ($((SECONDS - t0))s)"; return 0; }
                sleep 1
        done
        ft_log "group lag still ${lag:-?} after ${timeout_s}s"
        return 1
}

# ft_private_redis: a redis-server of our own on a free port, no persistence, noeviction;
# SECKILL_REDIS_URL and ft_rcli point at it from now on.
# ft_least_privilege: the least-privilege users of `seckill-admin db grants` (DESIGN.md
# 15, 17) for the case, one per binary: admin, front, consumer and reconciler, created by
# root for host 127.0.0.1 (the tests' address; no '%') with random passwords (dropped by
# the EXIT trap); the admin grant applied, the case's database dropped and re-created
# from nothing by `db migrate` as the admin user, the table and column grants of the
# three run-time users applied. SECKILL_MYSQL_URL is exported as the admin user's (every
# seckill-admin command), and ft_front, ft_consumer and ft_reconcile give their binary
# its own URL (FT_URL[front|consumer|reconciler]). Sets FT_DBU (user name prefix),
# FT_DBPW[role], FT_URL[role]; FT_ADM_URL.
declare -A FT_DBPW=() FT_URL=()
FT_DBU=
ft_least_privilege() {
        local role
        FT_DBU="skg$$_"
        FT_CLEANUP_HOOKS+=(ft_drop_users)
        for role in admin front consumer reconciler; do
                FT_DBPW[$role]=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
                ft_sql_root "CREATE USER '$FT_DBU$role'@'127.0.0.1' IDENTIFIED BY '${FT_DBPW[$role]}'" ||
                        ft_die "CREATE USER $FT_DBU$role"
                FT_URL[$role]="mysql://$FT_DBU$role:${FT_DBPW[$role]}@$FT_MYSQL_HOSTS/$FT_DB"
        done
        "$FT_BIN/seckill-admin" db grants --host 127.0.0.1 --users admin --user-prefix "$FT_DBU" \
                >"$FT_WORK/grants-admin.sql" || ft_die "db grants --users admin"
        ft_sql_root "$(cat "$FT_WORK/grants-admin.sql")" || ft_die "applying the admin grant"
        ft_sql_root "DROP DATABASE \`$FT_DB\`"
        FT_ADM_URL=${FT_URL[admin]}
        SECKILL_MYSQL_URL=$FT_ADM_URL "$FT_BIN/seckill-admin" db migrate >"$FT_WORK/migrate-admin.log" 2>&1 ||
                ft_die "db migrate as the admin user: $(cat "$FT_WORK/migrate-admin.log")"
        grep -q '^applied [1-9][0-9]* migration(s)$' "$FT_WORK/migrate-admin.log" ||
                ft_die "db migrate as the admin user applied nothing: $(cat "$FT_WORK/migrate-admin.log")"
        "$FT_BIN/seckill-admin" db grants --host 127.0.0.1 --users front,consumer,reconciler \
                --user-prefix "$FT_DBU" >"$FT_WORK/grants-run.sql" || ft_die "db grants --users front,..."
        ft_sql_root "$(cat "$FT_WORK/grants-run.sql")" || ft_die "applying the run-time grants"
        export SECKILL_MYSQL_URL=$FT_ADM_URL
        ft_log "least privilege: migrated as ${FT_DBU}admin; front, consumer, reconciler each as its own user"
}
ft_drop_users() {
        local role
        for role in admin front consumer reconciler; do
                ft_sql_root "DROP USER IF EXISTS '$FT_DBU$role'@'127.0.0.1'" >/dev/null 2>&1
        done
}
# ft_db_url ROLE: "SECKILL_MYSQL_URL=<ROLE's URL>" after ft_least_privilege, else nothing
# (the binary inherits SECKILL_MYSQL_URL). For env(1) argument lists.
ft_db_url() { [[ -n ${FT_URL[$1]:-} ]] && printf 'SECKILL_MYSQL_URL=%s\n' "${FT_URL[$1]}"; }

ft_private_redis() {
        FT_REDIS_PORT=$(ft_free_port)
        mkdir -p "$FT_WORK/redis"
        export SECKILL_REDIS_URL="redis://127.0.0.1:$FT_REDIS_PORT/0"   # ft_rcli follows it
        ft_private_redis_run
        [[ $(ft_rcli ping 2>/dev/null) == PONG ]] || ft_die "private redis-server on $FT_REDIS_PORT did not start"
        ft_log "private redis-server pid $FT_PRIV_REDIS_PID on 127.0.0.1:$FT_REDIS_PORT"
}
# ft_private_redis_run: redis-server on FT_REDIS_PORT in the background; waits (10 s) for PONG.
ft_private_redis_run() {
        local i
        redis-server --port "$FT_REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
                --maxmemory-policy noeviction --dir "$FT_WORK/redis" --daemonize no \
                --logfile "$FT_WORK/redis.log" >/dev/null 2>&1 &
        FT_PRIV_REDIS_PID=$!
        for ((i = 0; i < 100; i++)); do
                [[ $(ft_rcli ping 2>/dev/null) == PONG ]] && break
                sleep 0.1
        done
}
# ft_private_redis_kill: kill -9 the private Redis (no persistence: all data gone); it
# stays down until ft_private_redis_start.
ft_private_redis_kill() {
        kill -KILL "$FT_PRIV_REDIS_PID" 2>/dev/null
        wait "$FT_PRIV_REDIS_PID" 2>/dev/null
        ft_log "private redis killed (pid $FT_PRIV_REDIS_PID)"
}
# ft_private_redis_start: start the private Redis again, empty, on its port.
ft_private_redis_start() {
        ft_private_redis_run
        ft_log "private redis restarted empty (pid $FT_PRIV_REDIS_PID, $(ft_rcli dbsize) keys)"
}
# ft_private_redis_restart [DOWN_S]: kill it, keep it down DOWN_S seconds (0), start it again.
ft_private_redis_restart() {
        ft_private_redis_kill
        sleep "${1:-0}"
        ft_private_redis_start
}

# ft_private_kafka: a broker of our own (scripts/stack.sh with a private state dir and
# spare ports, the shared jars linked in); SECKILL_KAFKA_BROKERS points at it.
ft_private_kafka() {
        local libs port cport
        FT_PRIV_KAFKA_DIR=$FT_WORK/stack
        mkdir -p "$FT_PRIV_KAFKA_DIR/kafka"
        for libs in "${SECKILL_STACK_DIR:-}/kafka/libs" "$FT_SRC/.stack/kafka/libs"; do
                if [[ -f $libs/.pom.sha256 ]]; then
                        ln -s "$libs" "$FT_PRIV_KAFKA_DIR/kafka/libs"
                        break
                fi
        done
        port=$(ft_free_port)
        cport=$(ft_free_port)
        while [[ $cport == "$port" ]]; do cport=$(ft_free_port); done
        FT_PRIV_KAFKA_PORT=$port FT_PRIV_KAFKA_CPORT=$cport
        ft_kafka_ctl kafka-start >"$FT_WORK/stack-kafka.log" 2>&1 ||
                { tail -n 20 "$FT_WORK/stack-kafka.log"; ft_die "private broker did not start"; }
        FT_BROKERS=127.0.0.1:$port
        export SECKILL_KAFKA_BROKERS=$FT_BROKERS
        ft_log "private broker on $FT_BROKERS (controller $cport)"
}
ft_kafka_ctl() {
        SECKILL_STACK_DIR=$FT_PRIV_KAFKA_DIR SECKILL_STACK_KAFKA_PORT=$FT_PRIV_KAFKA_PORT \
                SECKILL_STACK_KAFKA_CONTROLLER_PORT=$FT_PRIV_KAFKA_CPORT SECKILL_STACK_KAFKA_TIMEOUT_S=90 \
                "$FT_SRC/scripts/stack.sh" "$@"
}

# ft_case_consumer_crash POINT: the body of the 02xx cases. A healthy consumer drains a
# first batch; a second consumer with POINT=exit dies (SIGKILL) on its first batch of
# the second burst; a third one takes over after the session timeout. DESIGN.md 8:
# "worker killed before/after commit: redelivery; the outcome key gives one order".
ft_case_consumer_crash() {
        local point=$1 v n
        v=$(ft_voucher 60)
        ft_front f1
        ft_consumer c1
        ft_buy f1 "$v" 1 20 8
        ft_settle 30 || ft_fail "first batch not decided"
        ft_stop c1
        ft_consumer c2 SECKILL_FAILPOINTS="$point=exit"
        ft_buy f1 "$v" 1001 20 8
        if ft_wait_exit c2 30; then ft_ok "consumer c2 died at $point"; else ft_fail "consumer c2 never reached $point"; fi
        n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE user_id BETWEEN 1001 AND 1020")
        ft_log "outcomes of the second burst right after the crash: $n"
        ft_consumer c3
        ft_fault_over
        ft_buy f1 "$v" 2001 80 8
        ft_settle 60 || ft_fail "202s not decided after the crash"
        ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
        ft_check "$v" --sold-out
        ft_check_me f1 "$v"
        n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2")
        ft_eq "$n" 0 "no purchase failed (a crash is never a business failure)"
}

# ft_buy_loop FRONT V FIRST_USER [PARALLEL=2] [BATCH=10] [PAUSE_S=0.3]: buy in batches
# of BATCH new users (PAUSE_S apart) in the background until ft_buy_loop_stop; for
# faults that need a sale running across them. The loop's pid is FT_LOOP_PID.
ft_buy_loop() {
        local front=$1 v=$2 u=$3 par=${4:-2} batch=${5:-10} pause=${6:-0.3}
        rm -f "$FT_WORK/loop.stop"
        (
                while [[ ! -f $FT_WORK/loop.stop ]]; do
                        ft_buy "$front" "$v" "$u" "$batch" "$par"
                        u=$((u + batch))
                        sleep "$pause"
                done
        ) &
        FT_LOOP_PID=$!
}
ft_buy_loop_stop() {
        touch "$FT_WORK/loop.stop"
        wait "$FT_LOOP_PID"
}

# ft_probe_code CODE FRONT V FIRST_USER TIMEOUT_S: one purchase at a time (new users from
# FIRST_USER, 0.3 s apart) until one is answered CODE (202, or 200 on the DB-only path of
# DESIGN.md 12), a 409 (sold out: the probe cannot tell) or TIMEOUT_S passes; the answers
# join the record like ft_buy's. FT_PROBE_S = seconds until the CODE, empty if none.
ft_probe_code() {
        local want=$1 front=$2 v=$3 u=$4 timeout_s=$5 t0=$SECONDS code
        FT_PROBE_S=
        : >"$FT_WORK/probe.txt"
        for ((; SECONDS - t0 < timeout_s; u++)); do
                "$FT_WORK/buy1.sh" "${FT_ADDR[$front]}" "$v" "$u" "$FT_WORK/probe.txt"
                code=$(tail -n 1 "$FT_WORK/probe.txt" | awk '{print $2}')
                [[ $code == "$want" ]] && { FT_PROBE_S=$((SECONDS - t0)); break; }
                [[ $code == 409 ]] && break
                sleep 0.3
        done
        cat "$FT_WORK/probe.txt" >>"$FT_WORK/results.txt"
        awk '$2 == 202' "$FT_WORK/probe.txt" |
                sed -n "s/^\([0-9]*\) 202 .*\"orderId\":\"\([0-9]*\)\".*\"traceId\":\"\([0-9]*\)\".*/\1 \2 \3 $v/p" \
                >>"$FT_WORK/accepted.tsv"
        [[ -n $FT_PROBE_S ]]
}
# ft_probe_202 FRONT V FIRST_USER TIMEOUT_S: ft_probe_code 202.
ft_probe_202() { ft_probe_code 202 "$@"; }

# ft_drain_check FRONT V FIRST_USER COUNT: the end of a case: settle what was accepted,
# --repair, check; then COUNT new buyers sell the voucher out; settle, --repair, check
# with --sold-out, orders/me.
ft_drain_check() {
        local front=$1 v=$2
        ft_settle 60 || ft_fail "202s not decided after the fault"
        ft_reconcile 120 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
        ft_check "$v"
        ft_buy "$front" "$v" "$3" "$4" 8
        ft_settle 60 || ft_fail "202s of the drain not decided"
        ft_reconcile 90 || ft_fail "reconciler after the drain: last exit $FT_RECON_RC"
        ft_check "$v" --sold-out
        ft_check_me "$front" "$v"
}

# --- Figures of the case (docs/FAULTS.md) ---------------------------------------------
# ft_fault_over: the fault has ended (the broker is back, the process replaced, ...).
# The next ft_settle that finds every 202 decided sets the case's recovery time.
ft_fault_over() { FT_HEAL_T=$(date +%s); FT_RECOVER_S=; ft_log "fault over"; }
ft_recovered() {
        [[ -n ${FT_HEAL_T:-} && -z ${FT_RECOVER_S:-} ]] || return 0
        FT_RECOVER_S=$(($(date +%s) - FT_HEAL_T))
        ft_log "recovered: every 202 decided ${FT_RECOVER_S}s after the fault ended"
}
# ft_note TEXT: a figure of this case only (shown in the table's notes column).
ft_note() { FT_NOTE="${FT_NOTE:+$FT_NOTE; }$*"; ft_log "note: $*"; }

# ft_record RC: one line for this case in $FT_BUILD/faults-results/CASE.tsv (replaced on
# every run), read by tests/faults/tools/faults_table.sh to rewrite docs/FAULTS.md:
# case, result, requests, 202s, 503s, active orders, FAILED outcomes by reason, recovery
# seconds ("-" when the case has no end-of-fault mark), notes, duration, date (UTC).
# Called by ft_cleanup before the database is dropped; never fails the case.
ft_record() {
        local rc=$1 dir=$FT_BUILD/faults-results case result=pass req=0 ok=0 n503=0 orders=? failed=?
        case=$(basename "$0" .sh)
        [[ $case =~ ^[0-9]{4}_ ]] || return 0
        [[ $FT_FAILS -gt 0 || $rc -ne 0 ]] && result=FAIL
        if [[ -n ${FT_WORK:-} && -f $FT_WORK/results.txt ]]; then
                req=$(wc -l <"$FT_WORK/results.txt")
                ok=$(wc -l <"$FT_WORK/accepted.tsv")
                n503=$(awk '$2 == 503' "$FT_WORK/results.txt" | wc -l)
        fi
        if [[ -n ${FT_DB:-} ]]; then
                orders=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE status IN (1, 2)" 2>/dev/null || echo '?')
                failed=$(ft_sql "SELECT CONCAT(COALESCE(reason, '?'), '=', COUNT(*)) FROM tb_seckill_outcome
                        WHERE outcome = 2 GROUP BY reason ORDER BY reason" 2>/dev/null | paste -sd' ')
                failed=${failed:-none}
        fi
        mkdir -p "$dir" 2>/dev/null || return 0
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$result" "$req" "$ok" "$n503" \
                "${orders:-?}" "$failed" "${FT_RECOVER_S:--}" "$(printf '%s' "${FT_NOTE:--}" | tr '\t\n' '  ')" \
                "$(($(date +%s) - FT_T0))" "$(date -u +%Y-%m-%dT%H:%MZ)" >"$dir/$case.tsv.tmp" &&
                mv -f "$dir/$case.tsv.tmp" "$dir/$case.tsv"
        ft_log "figures: $result, $ok×202 of $req, $n503×503, $orders orders, FAILED ${failed}, recovery ${FT_RECOVER_S:--}s"
}
