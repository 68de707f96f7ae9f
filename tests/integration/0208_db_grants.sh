#!/usr/bin/env bash
# 0208_db_grants.sh: the least-privilege users of `seckill-admin db grants` (DESIGN.md 17)
# against the real MariaDB, with a small sale run entirely as the app user:
#   - two users created by root with random passwords; the admin grant applied; the
#     case's database dropped and re-created from nothing by `db migrate` as the admin
#     user (every table of ddl/; a second migrate applies 0); the app grants applied;
#   - as the app user: voucher create + preheat, a front and a consumer sell 20 units to
#     40 buyers, the reconciler's --repair passes, `seckill-admin verify`, `degrade
#     status`: every invariant holds (ft_check --sold-out);
#   - the app user cannot DROP, ALTER or CREATE a table, DELETE a row or read
#     schema_migrations; the admin user cannot GRANT, nor create a database whose name
#     only matches the case's with `_` read as a wildcard (the grant escapes it);
#   - both users are dropped at the end (and the database, by lib.sh).
. "$(dirname "$0")/../faults/lib.sh"
ft_init db_grants

APP="skg_app_$$" ADM="skg_adm_$$"
APW=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n') ADPW=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
drop_users() { ft_sql_root "DROP USER IF EXISTS '$APP'@'%', '$ADM'@'%'" >/dev/null 2>&1; }
FT_CLEANUP_HOOKS+=(drop_users)
ROOT_URL=$SECKILL_MYSQL_URL
URL_OF() { printf 'mysql://%s:%s@%s:%s/%s' "$1" "$2" "$FT_MYSQL_HOST" "$FT_MYSQL_PORT" "$FT_DB"; }
# as USER PASSWORD SQL: one statement through the mysql client as that user; stderr kept.
as() { mysql --no-defaults -u"$1" -p"$2" -h"$FT_MYSQL_HOST" -P"$FT_MYSQL_PORT" --protocol=TCP -N -B "$FT_DB" \
        -e "$3" 2>&1; }
# denied USER PASSWORD SQL LABEL: the statement must fail with an access-denied error.
denied() {
        local out
        if out=$(as "$1" "$2" "$3"); then
                ft_fail "$4: succeeded"
        elif grep -qE 'ERROR (1142|1044|1045|1143|1227|1410)' <<<"$out"; then
                ft_ok "$4: denied ($(grep -m1 '^ERROR' <<<"$out" | cut -c1-90))"
        else
                ft_fail "$4: failed for another reason: $out"
        fi
}

ft_sql_root "CREATE USER '$APP'@'%' IDENTIFIED BY '$APW'; CREATE USER '$ADM'@'%' IDENTIFIED BY '$ADPW'" ||
        ft_die "CREATE USER"
"$FT_BIN/seckill-admin" db grants --admin "$ADM" >"$FT_WORK/grants-admin.sql" || ft_die "db grants --admin"
ft_sql_root "$(cat "$FT_WORK/grants-admin.sql")" || ft_die "applying $(cat "$FT_WORK/grants-admin.sql")"

# The admin user builds the schema from nothing.
ft_sql_root "DROP DATABASE \`$FT_DB\`"
export SECKILL_MYSQL_URL
SECKILL_MYSQL_URL=$(URL_OF "$ADM" "$ADPW")
out=$("$FT_BIN/seckill-admin" db migrate 2>&1)
ft_eq "$(grep -c '^applied [1-9][0-9]* migration(s)$' <<<"$out")" 1 "db migrate as the admin user from an empty server ($out)"
ft_eq "$("$FT_BIN/seckill-admin" db migrate 2>&1)" "applied 0 migration(s)" "second migrate as the admin user"
NTB=$(cat "$FT_SRC"/ddl/*.sql | grep -c '^CREATE TABLE IF NOT EXISTS tb_')
ft_eq "$(ft_sql "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$FT_DB' AND table_name LIKE 'tb\\_%'")" \
        "$NTB" "every tb_ table of ddl/ ($NTB)"

"$FT_BIN/seckill-admin" db grants --app "$APP" >"$FT_WORK/grants-app.sql" || ft_die "db grants --app"
ft_eq "$(grep -c '^GRANT SELECT, INSERT, UPDATE ON ' "$FT_WORK/grants-app.sql")" "$NTB" "one app grant per table"
ft_sql_root "$(cat "$FT_WORK/grants-app.sql")" || ft_die "applying the app grants"

# A small sale, every binary as the app user.
SECKILL_MYSQL_URL=$(URL_OF "$APP" "$APW")
ft_front f
ft_consumer c
V=$(ft_voucher 20)
ft_buy f "$V" 1000 40 8
ft_settle 60 || ft_fail "not every 202 decided in 60 s"
ft_reconcile 90 || ft_fail "reconciler --repair as the app user: exit $FT_RECON_RC"
ft_check "$V" --sold-out
"$FT_BIN/seckill-admin" degrade status >"$FT_WORK/degrade.txt" 2>&1
ft_eq "$?" 0 "degrade status as the app user"
ft_eq "$(cat "$FT_WORK"/f.log "$FT_WORK"/c.log | grep -ciE 'command denied|access denied')" 0 \
        "no access-denied error in the front's and consumer's logs"

# What the app user may not do.
denied "$APP" "$APW" "DROP TABLE tb_seckill_outcome" "app: DROP TABLE"
denied "$APP" "$APW" "ALTER TABLE tb_voucher_order ADD COLUMN x INT" "app: ALTER TABLE"
denied "$APP" "$APW" "CREATE TABLE t_x (a INT)" "app: CREATE TABLE"
denied "$APP" "$APW" "DELETE FROM tb_voucher_order WHERE voucher_id = $V" "app: DELETE"
denied "$APP" "$APW" "SELECT COUNT(*) FROM schema_migrations" "app: read schema_migrations"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)")" 20 "the 20 orders are still there"
# ... nor the admin user.
denied "$ADM" "$ADPW" "GRANT SELECT ON \`$FT_DB\`.* TO '$APP'@'%'" "admin: GRANT"
LOOKALIKE=$(sed 's/_/x/' <<<"$FT_DB")
denied "$ADM" "$ADPW" "CREATE DATABASE \`$LOOKALIKE\`" "admin: CREATE DATABASE $LOOKALIKE ('_' is no wildcard)"
ft_sql_root "DROP DATABASE IF EXISTS \`$LOOKALIKE\`" >/dev/null 2>&1
SECKILL_MYSQL_URL=$ROOT_URL
ft_finish
