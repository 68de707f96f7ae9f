#!/usr/bin/env bash
# 0224_migrate_unpaid_guard.sh: the v4 -> v5 migration guard (DESIGN.md header, "Migration
# from v4"). A database at the v4 level (ddl/0001..0007 applied and recorded, as a v4
# `db migrate` left it) with orders in it:
#   - an UNPAID order (status 1 with a pay_deadline) and 0008_payments pending: `db
#     migrate` refuses with exit 2 and one line naming the count and --allow-unpaid, and
#     changes nothing (no migration recorded, no tb_payment, no amount column), twice;
#   - once that order is PAID, `db migrate` goes on (exit 0, 0008 recorded);
#   - `db migrate --allow-unpaid` with SECKILL_CURRENCY=USD: exit 0, the UNPAID orders stay
#     UNPAID at amount 0, currency USD (the others get the column default), and a later
#     plain `db migrate` is a no-op (0008 recorded: the guard is silent);
#   - --allow-unpaid with an invalid SECKILL_CURRENCY is exit 2 with nothing changed;
#     --allow-unpaid given to another command is exit 2.
. "$(dirname "$0")/../support/ft.sh"
ft_init migrate_unpaid_guard
ADMIN="$FT_BIN/seckill-admin"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
NV4=7   # ddl/0001..0007: the v4 schema

# Re-creates $FT_DB at the v4 level: the v4 files applied by the mysql client, their names
# recorded in schema_migrations exactly as the runner records them.
v4_db() {
        local f
        ft_sql_root "DROP DATABASE IF EXISTS \`$FT_DB\`; CREATE DATABASE \`$FT_DB\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci" ||
                ft_die "re-create $FT_DB"
        ft_sql "CREATE TABLE schema_migrations (name VARCHAR(128) NOT NULL PRIMARY KEY,
                applied_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4" ||
                ft_die "schema_migrations"
        for f in $(ls "$SRC"/ddl/000[1-7]_*.sql | sort); do
                ft_sql "$(cat "$f")" || ft_die "apply $f"
                ft_sql "INSERT INTO schema_migrations (name) VALUES ('$(basename "$f" .sql)')"
        done
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM schema_migrations")" "$NV4" "v4 database: $NV4 migrations recorded"
        ft_sql "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, buckets, begin_time, end_time, status)
                VALUES (9001, 10, 1, NOW(3) - INTERVAL 1 HOUR, NOW(3) + INTERVAL 1 HOUR, 4)" || ft_die "voucher"
}
# order ID USER STATUS [DEADLINE_SQL]: one v4 order row.
order() {
        ft_sql "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, bucket, status, pay_deadline)
                VALUES ($1, $2, 9001, $1 + 7, 0, $3, ${4:-NULL})" || ft_fail "insert order $1"
}
v5_state() {    # what 0008 changes: recorded, tb_payment, the order's amount column
        printf '%s %s %s' \
                "$(ft_sql "SELECT COUNT(*) FROM schema_migrations WHERE name = '0008_payments'")" \
                "$(ft_sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_payment'")" \
                "$(ft_sql "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_voucher_order' AND COLUMN_NAME = 'amount_minor'")"
}
migrate() { timeout 120 "$ADMIN" db migrate "$@" >"$FT_WORK/m.out" 2>"$FT_WORK/m.err"; }

# --- refused while an order is UNPAID ------------------------------------------------
v4_db
order 101 1 1 "NOW(3) + INTERVAL 10 MINUTE"     # UNPAID
order 102 2 2                                   # PAID (v4 created it paid)
order 103 3 4 "NOW(3) - INTERVAL 1 HOUR"        # CLOSED
for i in 1 2; do
        migrate
        ft_eq "$?" 2 "db migrate with an UNPAID order: exit 2 (run $i)"
        ft_eq "$(wc -l <"$FT_WORK/m.err")" 1 "one error line (run $i)"
        grep -q "refused: 1 order(s) UNPAID" "$FT_WORK/m.err" && grep -q -- "--allow-unpaid" "$FT_WORK/m.err" &&
                ft_ok "the line names the count and --allow-unpaid" ||
                ft_fail "refusal line: $(cat "$FT_WORK/m.err")"
        ft_eq "$(v5_state)" "0 0 0" "nothing of 0008 applied (run $i)"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM schema_migrations")" "$NV4" "no migration recorded (run $i)"
done
ft_eq "$(ft_sql "SELECT status FROM tb_voucher_order WHERE id = 101")" 1 "the order is still UNPAID"

# --- the v4 front saw it paid: now it migrates ---------------------------------------
ft_sql "UPDATE tb_voucher_order SET status = 2, paid_at = NOW(3) WHERE id = 101"
migrate
ft_eq "$?" 0 "no order UNPAID: db migrate exit 0"
ft_eq "$(v5_state)" "1 1 1" "0008 applied and recorded"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE amount_minor = 0 AND currency = 'CNY'")" 3 \
        "pre-v5 orders: amount 0 in the default currency"

# --- --allow-unpaid ---------------------------------------------------------------------
v4_db
order 201 1 1 "NOW(3) + INTERVAL 10 MINUTE"     # UNPAID
order 202 2 1 "NOW(3) + INTERVAL 20 MINUTE"     # UNPAID
order 203 3 4 "NOW(3) - INTERVAL 1 HOUR"        # CLOSED
SECKILL_CURRENCY=usd migrate --allow-unpaid
ft_eq "$?" 2 "--allow-unpaid with SECKILL_CURRENCY=usd: exit 2"
ft_eq "$(v5_state)" "0 0 0" "invalid currency: nothing applied"
SECKILL_CURRENCY=USD migrate --allow-unpaid
ft_eq "$?" 0 "--allow-unpaid: exit 0"
grep -q "2 UNPAID order(s) left at amount 0, currency USD" "$FT_WORK/m.err" &&
        ft_ok "--allow-unpaid says how many it left" || ft_fail "--allow-unpaid stderr: $(cat "$FT_WORK/m.err")"
ft_eq "$(v5_state)" "1 1 1" "--allow-unpaid: 0008 applied and recorded"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(CONCAT(id, ':', status, ':', amount_minor, ':', currency) ORDER BY id)
        FROM tb_voucher_order")" "201:1:0:USD,202:1:0:USD,203:4:0:CNY" \
        "the UNPAID orders stay UNPAID at amount 0, currency SECKILL_CURRENCY"
migrate
ft_eq "$?" 0 "a later plain db migrate: exit 0 (0008 recorded, no guard)"
ft_eq "$(cat "$FT_WORK/m.out")" "applied 0 migration(s)" "a later plain db migrate applies nothing"

"$ADMIN" payment refunds --allow-unpaid >/dev/null 2>&1
ft_eq "$?" 2 "--allow-unpaid given to another command: exit 2"
ft_finish
