#!/usr/bin/env bash
# 0208_db_grants.sh: the least-privilege users of `seckill-admin db grants` (DESIGN.md 15,
# 17) against the real MariaDB, with a small sale run entirely by them:
#   - four users (admin, front, consumer, reconciler) created by root with random
#     passwords; the admin grant applied; the case's database dropped and re-created from
#     nothing by `db migrate` as the admin user (every table of ddl/; a second migrate
#     applies 0); the run-time grants applied;
#   - voucher create + preheat as the admin user, a front and a consumer (each its own
#     user) sell 20 units to 40 buyers, the reconciler's --repair passes as its user,
#     `seckill-admin verify`, `degrade status`: every invariant holds (ft_check --sold-out);
#   - no run-time user can DROP, ALTER or CREATE a table, DELETE a row or read
#     schema_migrations; the admin user cannot GRANT, nor create a database whose name
#     only matches the case's with `_` read as a wildcard (the grant escapes it);
#   - the users are dropped at the end (and the database, by ft.sh).
# The column grants (what the front may not change): 0450_db_grants_columns.sh.
. "$(dirname "$0")/../support/ft.sh"
ft_init db_grants

ft_least_privilege
ADM=${FT_DBU}admin ADPW=${FT_DBPW[admin]}
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

ft_ok "db migrate as the admin user from an empty server: $(cat "$FT_WORK/migrate-admin.log")"
ft_eq "$(SECKILL_MYSQL_URL=$FT_ADM_URL "$FT_BIN/seckill-admin" db migrate 2>&1)" "applied 0 migration(s)" \
        "second migrate as the admin user"
NTB=$(cat "$FT_SRC"/ddl/*.sql | grep -c '^CREATE TABLE IF NOT EXISTS tb_')
ft_eq "$(ft_sql "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$FT_DB' AND table_name LIKE 'tb\\_%'")" \
        "$NTB" "every tb_ table of ddl/ ($NTB)"
for role in front consumer reconciler; do
        n=$(grep -c "^GRANT .* TO '$FT_DBU$role'@'127.0.0.1';\$" "$FT_WORK/grants-run.sql")
        ((n >= 8 && n <= NTB)) && ft_ok "$role: $n table grants" || ft_fail "$role: $n table grants (of $NTB tables)"
done

# A small sale, each binary as its own user.
ft_front f
ft_consumer c
V=$(ft_voucher 20)
ft_buy f "$V" 1000 40 8
ft_settle 60 || ft_fail "not every 202 decided in 60 s"
ft_reconcile 90 || ft_fail "reconciler --repair as its user: exit $FT_RECON_RC"
ft_check "$V" --sold-out
"$FT_BIN/seckill-admin" degrade status >"$FT_WORK/degrade.txt" 2>&1
ft_eq "$?" 0 "degrade status as the admin user"
ft_eq "$(cat "$FT_WORK"/f.log "$FT_WORK"/c.log | grep -ciE 'command denied|access denied')" 0 \
        "no access-denied error in the front's and consumer's logs"

# What the run-time users may not do.
for role in front consumer reconciler; do
        U=$FT_DBU$role P=${FT_DBPW[$role]}
        denied "$U" "$P" "DROP TABLE tb_seckill_outcome" "$role: DROP TABLE"
        denied "$U" "$P" "ALTER TABLE tb_voucher_order ADD COLUMN x INT" "$role: ALTER TABLE"
        denied "$U" "$P" "CREATE TABLE t_x (a INT)" "$role: CREATE TABLE"
        denied "$U" "$P" "DELETE FROM tb_voucher_order WHERE voucher_id = $V" "$role: DELETE"
        denied "$U" "$P" "SELECT COUNT(*) FROM schema_migrations" "$role: read schema_migrations"
done
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)")" 20 "the 20 orders are still there"
# ... nor the admin user.
denied "$ADM" "$ADPW" "GRANT SELECT ON \`$FT_DB\`.* TO '${FT_DBU}front'@'127.0.0.1'" "admin: GRANT"
LOOKALIKE=$(sed 's/_/x/' <<<"$FT_DB")
denied "$ADM" "$ADPW" "CREATE DATABASE \`$LOOKALIKE\`" "admin: CREATE DATABASE $LOOKALIKE ('_' is no wildcard)"
ft_sql_root "DROP DATABASE IF EXISTS \`$LOOKALIKE\`" >/dev/null 2>&1
ft_finish
