#!/usr/bin/env bash
# 0202_admin_cli.sh: seckill-admin against the real MariaDB and Redis (DESIGN.md 2, 4, 6, 8).
# A unique database and key prefix per run; a topic that does not exist (nothing in
# flight for the rebuild). Checks: migrate twice (second applies 0); two migrates at once
# both exit 0 with a correct schema; voucher create with ISO and epoch times prints a
# canonical id and the row holds those times; preheat writes stock/users/meta with TTLs;
# preheat refuses to overwrite a sold-down stock; set-status updates DB and Redis; show;
# rebuild: waits for an undecided DEDUCT (exit 2, status restored), records FAILED for a
# fenced one, copies active buyers; bad arguments exit 2 with one line.
set -u
ADMIN="${SK_BIN:?SK_BIN not set}/seckill-admin"
# Endpoints follow the environment (scripts/test.sh exports them), defaults = local stack.
_rurl="${SECKILL_REDIS_URL:-redis://127.0.0.1:6379/0}"; _rurl="${_rurl#redis://}"; _rurl="${_rurl#*@}"
REDIS_HOST="${_rurl%%[:/]*}"; REDIS_PORT=6379
case "$_rurl" in *:*) REDIS_PORT="${_rurl#*:}"; REDIS_PORT="${REDIS_PORT%%/*}" ;; esac
# The hosts part may list several nodes (DESIGN.md 16, label galera): the binaries get them
# all, this script's mysql client the first.
_murl="${SECKILL_MYSQL_URL:-mysql://root@127.0.0.1:3306/seckill}"; _murl="${_murl#*@}"
MYSQL_HOSTS="${_murl%%/*}"; _first="${MYSQL_HOSTS%%,*}"
MYSQL_HOST="${_first%%:*}"; MYSQL_PORT=3306
case "$_first" in *:*) MYSQL_PORT="${_first#*:}" ;; esac
RUN="admcli_$$_${RANDOM}"
DB="skt_${RUN}"
export SECKILL_MYSQL_URL="mysql://root@${MYSQL_HOSTS}/${DB}"
export SECKILL_REDIS_PREFIX="skt_${RUN}"
export SECKILL_TOPIC="skt.${RUN}.none"
export SECKILL_GROUP_ID="skt-${RUN}"
export SECKILL_WORKER_LEASE_MS=600
export SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=1000
P="$SECKILL_REDIS_PREFIX"
FAILS=0

sql() { mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -N -B "$DB" -e "$1"; }
# A Cluster or Sentinel URL goes through sk-rcli (keys routed by sk_redis, DESIGN.md 4b);
# one server through redis-cli.
rcli() {
        case ${SECKILL_REDIS_URL:-} in
        redis-cluster://* | redis-sentinel://*) "${SK_BUILD:?}/tests/sk-rcli" "$@" ;;
        *) redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@" ;;
        esac
}
cleanup() {
        mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -e "DROP DATABASE IF EXISTS \`$DB\`" >/dev/null 2>&1
        rcli --scan --pattern "${P}*" | while read -r k; do rcli del "$k" >/dev/null; done
        rm -f "$OUT" "$ERR"
}
OUT=$(mktemp) ERR=$(mktemp)
trap cleanup EXIT
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
# run EXPECTED_RC args...: runs the admin, output in $OUT/$ERR.
run() {
        local want=$1; shift
        timeout 60 "$ADMIN" "$@" >"$OUT" 2>"$ERR"
        local rc=$?
        if [ "$rc" != "$want" ]; then
                fail "seckill-admin $* -> rc=$rc, want $want; stdout: $(cat "$OUT") stderr: $(cat "$ERR")"
                return 1
        fi
        return 0
}
eq() { if [ "$1" == "$2" ]; then ok "$3"; else fail "$3: got '$1', want '$2'"; fi; }

# --- migrate: twice, then two at once on a fresh database --------------------------
run 0 db migrate && grep -q "^applied [1-9][0-9]* migration(s)$" "$OUT" && ok "first migrate applies" || fail "first migrate: $(cat "$OUT")"
run 0 db migrate && eq "$(cat "$OUT")" "applied 0 migration(s)" "second migrate applies 0"
NMIG=$(sql "SELECT COUNT(*) FROM schema_migrations")

DB2="${DB}_x"
( SECKILL_MYSQL_URL="mysql://root@${MYSQL_HOSTS}/${DB2}" timeout 60 "$ADMIN" db migrate >"$OUT.a" 2>&1; echo $? >"$OUT.ra" ) &
( SECKILL_MYSQL_URL="mysql://root@${MYSQL_HOSTS}/${DB2}" timeout 60 "$ADMIN" db migrate >"$OUT.b" 2>&1; echo $? >"$OUT.rb" ) &
wait
eq "$(cat "$OUT.ra")$(cat "$OUT.rb")" "00" "two concurrent migrates both exit 0"
eq "$(cat "$OUT.a" "$OUT.b" | sort | tr '\n' '|')" "applied 0 migration(s)|applied ${NMIG} migration(s)|" "exactly one of them applied"
NTB=$(cat "$SK_SRC"/ddl/*.sql | grep -c '^CREATE TABLE IF NOT EXISTS tb_')
eq "$(mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -N -B "$DB2" -e "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$DB2' AND table_name LIKE 'tb\\_%'")" "$NTB" "concurrent migrate: every tb_ table of ddl/ ($NTB)"
eq "$(mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -N -B "$DB2" -e "SELECT COUNT(*) FROM schema_migrations")" "$NMIG" "concurrent migrate: recorded once"
mysql -uroot -h"$MYSQL_HOST" -P"$MYSQL_PORT" -e "DROP DATABASE IF EXISTS \`$DB2\`"
rm -f "$OUT.a" "$OUT.b" "$OUT.ra" "$OUT.rb"

# --- voucher create ------------------------------------------------------------------
NOW=$(date +%s)
BEGIN_ISO=$(date -u -d "@$((NOW - 3600))" +%Y-%m-%dT%H:%M:%S)+00:00
END_S=$((NOW + 86400))
if run 0 voucher create --stock 5 --begin "$BEGIN_ISO" --end "$END_S"; then
        V=$(sed -n 's/^{"voucherId":"\([1-9][0-9]*\)"}$/\1/p' "$OUT")
        [ -n "$V" ] && ok "create prints a canonical id ($V)" || fail "create output: $(cat "$OUT")"
fi
V=${V:-0}
eq "$(sql "SELECT CONCAT_WS(',', v.init_stock, s.stock, status, TIMESTAMPDIFF(SECOND, '1970-01-01', begin_time), TIMESTAMPDIFF(SECOND, '1970-01-01', end_time)) FROM tb_seckill_voucher v JOIN tb_seckill_stock s USING (voucher_id) WHERE voucher_id = $V")" \
   "5,5,1,$((NOW - 3600)),$END_S" "row has stock, status and both times (ISO and epoch)"
# An offset zone: 18:00+08:00 is 10:00Z.
if run 0 voucher create --stock 1 --begin 2030-01-01T18:00:00+08:00 --end 2030-01-01T20:00:00.5Z --status 2; then
        V2=$(sed -n 's/^{"voucherId":"\([1-9][0-9]*\)"}$/\1/p' "$OUT")
        eq "$(sql "SELECT CONCAT_WS(',', DATE_FORMAT(begin_time, '%Y-%m-%dT%H:%i:%s.%f'), DATE_FORMAT(end_time, '%H:%i:%s.%f'), status) FROM tb_seckill_voucher WHERE voucher_id = ${V2:-0}")" \
           "2030-01-01T10:00:00.000000,20:00:00.500000,2" "ISO offsets and fractions are converted to UTC"
fi
eq "$(rcli exists "${P}:{v:${V}:0}:meta")" "0" "create without --preheat writes nothing to Redis"
eq "$(sql "SELECT CONCAT_WS(',', v.buckets, s.bucket, s.init_stock, s.stock) FROM tb_seckill_voucher v JOIN tb_seckill_stock s USING (voucher_id) WHERE voucher_id = $V")" \
   "1,0,5,5" "default: one bucket row holding the whole stock"
eq "$(sql "SELECT CONCAT_WS(',', COALESCE(mode, 'NULL'), state) FROM tb_seckill_switch WHERE scope = $V")" "NULL,redis" "create writes the voucher's switch row"
# --buckets: 10 over 4 = 3,3,2,2 (the remainder one unit each to the first buckets).
if run 0 voucher create --stock 10 --buckets 4 --begin "$BEGIN_ISO" --end "$END_S"; then
        VB=$(sed -n 's/^{"voucherId":"\([1-9][0-9]*\)"}$/\1/p' "$OUT")
        eq "$(sql "SELECT GROUP_CONCAT(CONCAT(bucket, ':', init_stock, '/', stock) ORDER BY bucket) FROM tb_seckill_stock WHERE voucher_id = ${VB:-0}")" \
           "0:3/3,1:3/3,2:2/2,3:2/2" "--buckets 4: rows 3,3,2,2"
        eq "$(sql "SELECT CONCAT_WS(',', buckets, init_stock) FROM tb_seckill_voucher WHERE voucher_id = ${VB:-0}")" "4,10" "voucher row: buckets 4, init = total"
        # add-stock (DESIGN.md 14): +6 spread 2,2,1,1; a repeated request id changes nothing.
        run 0 voucher add-stock "${VB:-0}" --stock 6 --request-id "r-1" --wait-ms 2000
        eq "$(sql "SELECT GROUP_CONCAT(CONCAT(bucket, ':', init_stock, '/', stock) ORDER BY bucket) FROM tb_seckill_stock WHERE voucher_id = ${VB:-0}")" \
           "0:5/5,1:5/5,2:3/3,3:3/3" "add-stock 6: rows 5,5,3,3"
        eq "$(sql "SELECT init_stock FROM tb_seckill_voucher WHERE voucher_id = ${VB:-0}")" "16" "add-stock: voucher init 16"
        run 0 voucher add-stock "${VB:-0}" --stock 6 --request-id "r-1" --wait-ms 2000 && grep -q "already applied" "$ERR" && ok "repeated request id: exit 0, says so"
        eq "$(sql "SELECT CONCAT(SUM(init_stock), '/', COUNT(*)) FROM tb_seckill_stock WHERE voucher_id = ${VB:-0}")" "16/4" "repeat changed nothing"
        eq "$(sql "SELECT COUNT(*) FROM tb_seckill_stock_change WHERE voucher_id = ${VB:-0}")" "1" "one stock change row"
        run 2 voucher add-stock "${VB:-0}" --stock 6 && ok "add-stock without --request-id rejected"
fi
NV=$(sql "SELECT COUNT(*) FROM tb_seckill_voucher")
run 2 voucher create --stock 5 --buckets 17 --begin "$BEGIN_ISO" --end "$END_S" && ok "--buckets 17 rejected"
run 2 voucher create --stock 5 --buckets 0 --begin "$BEGIN_ISO" --end "$END_S" && ok "--buckets 0 rejected"
eq "$(sql "SELECT COUNT(*) FROM tb_seckill_voucher")" "$NV" "rejected creates wrote nothing"

# --- bad arguments: exit 2, one line --------------------------------------------------
run 2 voucher create --stock 5 --begin 2030-01-01T18:00:00 --end 2030-01-02T18:00:00Z && grep -q "ambiguous" "$ERR" && ok "zone-less time rejected" || fail "zone-less: $(cat "$ERR")"
run 2 voucher create --begin 2030-01-01T18:00:00Z --end 2030-01-02T18:00:00Z && ok "missing --stock"
run 2 voucher create --stock 0 --begin 2030-01-01T18:00:00Z --end 2030-01-02T18:00:00Z && ok "stock 0 rejected"
run 2 voucher create --stock 5 --begin 2030-01-02T18:00:00Z --end 2030-01-01T18:00:00Z && ok "end before begin rejected"
run 2 voucher create --stock 5 --begin 2030-02-30T18:00:00Z --end 2030-03-01T18:00:00Z && ok "invalid date rejected"
run 2 voucher create --stock 5 --begin yesterday --end 2030-03-01T18:00:00Z && ok "garbage time rejected"
run 2 voucher preheat 0123 && ok "non-canonical id rejected"
run 2 voucher preheat 9223372036854775808 && ok "id out of range rejected"
run 2 voucher show && ok "missing id"
run 2 voucher set-status "$V" 5 && ok "status 5 rejected"
run 2 voucher frobnicate 1 && ok "unknown voucher command"
run 2 frobnicate && ok "unknown command"
run 2 && ok "no command"
run 2 db migrate --stock 3 && ok "flag of another command rejected"
run 2 voucher show "$V" extra && ok "extra argument rejected"
[ "$(wc -l <"$ERR")" = 1 ] && ok "one error line" || fail "error lines: $(cat "$ERR")"
run 0 voucher create --help && grep -q "voucher create --stock N" "$OUT" && ok "voucher create --help"
run 0 voucher preheat --help && grep -q "rebuild-from-db" "$OUT" && ok "voucher preheat --help"
run 0 db migrate --help && ok "db migrate --help"
run 0 --help && ok "--help"
run 2 voucher preheat 42 && grep -q "not in the database" "$ERR" && ok "preheat of an unknown voucher: exit 2"

# --- preheat ---------------------------------------------------------------------------
sql "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id) VALUES (501, 71, $V, 901)"
sql "UPDATE tb_seckill_stock SET stock = 4 WHERE voucher_id = $V"
run 0 voucher preheat "$V" && ok "preheat exit 0"
eq "$(rcli get "${P}:{v:${V}:0}:stock")" "4" "stock = DB stock"
eq "$(rcli hget "${P}:{v:${V}:0}:users" 71)" "901" "users = DB active buyers -> trace id"
eq "$(rcli hmget "${P}:{v:${V}:0}:meta" begin_ms end_ms status | tr '\n' ',')" "$(((NOW - 3600) * 1000)),$((END_S * 1000)),1," "meta begin_ms,end_ms,status"
E=$((END_S * 1000 + (48 + 24) * 3600 * 1000))
for k in meta stock users; do
        eq "$(rcli pexpiretime "${P}:{v:${V}:0}:$k")" "$E" "$k expires at end + window + 1 day"
done
run 0 voucher preheat "$V" && ok "preheat again with an equal stock: ok"
rcli decrby "${P}:{v:${V}:0}:stock" 1 >/dev/null
rcli hset "${P}:{v:${V}:0}:meta" status 2 >/dev/null
run 2 voucher preheat "$V" && grep -q "refusing to overwrite Redis stock 3" "$ERR" && ok "sold-down stock refused" || fail "sold-down: $(cat "$ERR")"
eq "$(rcli get "${P}:{v:${V}:0}:stock")" "3" "sold-down stock unchanged"
eq "$(rcli hget "${P}:{v:${V}:0}:meta" status)" "2" "refused preheat wrote no meta"

# --- set-status -------------------------------------------------------------------------
run 0 voucher set-status "$V" 2 && eq "$(cat "$OUT")" "{\"voucherId\":\"$V\",\"status\":2,\"redisMeta\":\"updated\"}" "set-status output"
eq "$(sql "SELECT status FROM tb_seckill_voucher WHERE voucher_id = $V")" "2" "set-status: DB"
eq "$(rcli hget "${P}:{v:${V}:0}:meta" status)" "2" "set-status: Redis meta"
run 0 voucher set-status "$V" 1
eq "$(sql "SELECT status FROM tb_seckill_voucher WHERE voucher_id = $V"),$(rcli hget "${P}:{v:${V}:0}:meta" status)" "1,1" "set-status back to 1"
run 0 voucher set-status "$V2" 3 && grep -q '"redisMeta":"missing"' "$OUT" && ok "set-status without meta does not create it"
eq "$(rcli exists "${P}:{v:${V2}:0}:meta")" "0" "no meta created"
run 2 voucher set-status 42 1 && ok "set-status of an unknown voucher: exit 2"

# --- show --------------------------------------------------------------------------------
run 0 voucher show "$V" --json && grep -q "\"voucherId\":\"$V\",\"db\":{\"initStock\":5,\"stock\":4,.*\"activeOrders\":1.*\"redis\":{\"meta\":{.*\"stock\":\"3\",\"users\":1" "$OUT" && ok "show --json" || fail "show --json: $(cat "$OUT")"
run 0 voucher show "$V" && grep -q "init_stock=5 stock=4" "$OUT" && ok "show text"

# --- rebuild ------------------------------------------------------------------------------
T="${P}:{v:${V}:0}:trace"
rcli hset "$T" 777 "{\"traceId\":\"777\",\"orderId\":\"778\",\"userId\":\"72\",\"voucherId\":\"$V\",\"beforeQty\":4,\"deductQty\":1,\"afterQty\":3,\"ts\":1}" >/dev/null
rcli hset "${P}:{v:${V}:0}:users" 72 777 >/dev/null
run 2 voucher preheat "$V" --rebuild-from-db --wait-ms 1500 && grep -q "1 DEDUCT(s) of 1 have no outcome yet" "$ERR" && ok "rebuild waits for an undecided DEDUCT, exit 2" || fail "rebuild undecided: $(cat "$ERR")"
eq "$(rcli hget "${P}:{v:${V}:0}:meta" status)" "1" "rebuild not settled: status restored"
eq "$(rcli get "${P}:{v:${V}:0}:stock")" "3" "rebuild not settled: stock untouched"
rcli hset "$T" 777:r '{"mode":"front"}' >/dev/null
run 0 voucher preheat "$V" --rebuild-from-db --wait-ms 1500 && grep -q '"action":"rebuild","stock":4,"users":1,"status":1,"previousStatus":1,"deducts":1,"fencedFailed":1' "$OUT" && ok "rebuild records FAILED for the fenced DEDUCT" || fail "rebuild: $(cat "$OUT") $(cat "$ERR")"
eq "$(sql "SELECT CONCAT_WS(',', outcome, reason, order_id, user_id) FROM tb_seckill_outcome WHERE trace_id = 777")" "2,front_rollback,778,72" "FAILED front_rollback row"
eq "$(rcli get "${P}:{v:${V}:0}:stock")" "4" "rebuild: stock = DB stock"
eq "$(rcli hgetall "${P}:{v:${V}:0}:users" | tr '\n' ',' | sed 's/_,_,//')" "71,901," "rebuild: users = DB active buyers only (and the placeholder _)"
eq "$(rcli pexpiretime "${P}:{v:${V}:0}:users")" "$E" "rebuild: users expiry"
# Redis lost the stock after sales began: a plain preheat runs the rebuild.
rcli del "${P}:{v:${V}:0}:stock" >/dev/null
run 0 voucher preheat "$V" && grep -q '"action":"rebuild"' "$OUT" && ok "preheat of a lost stock rebuilds" || fail "lost stock: $(cat "$OUT") $(cat "$ERR")"
eq "$(rcli get "${P}:{v:${V}:0}:stock")" "4" "lost stock restored from the DB"

# --- verify hook -----------------------------------------------------------------------
timeout 30 "$ADMIN" verify "$V" >/dev/null 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 2 ] && ok "verify dispatches (rc=$rc)" || fail "verify rc=$rc"

if [ "$FAILS" -gt 0 ]; then
        echo "$FAILS check(s) failed"
        exit 1
fi
echo "all checks passed"
