#!/usr/bin/env bash
# bench/consumer_stmts.sh: what each statement of one consumer batch, and one closer
# round, costs the database, counted by MariaDB itself (docs/SCALING.md "What one batch
# costs the database").
#
# A fresh database migrated by this build's seckill-admin, holding ORDERS (100,000) UNPAID
# orders of 8 vouchers not yet due (outcome, order, router and reconcile-log rows, as the
# consumer writes them), then ONE session replays:
#   - one batch of N (500) orders of one voucher, statement by statement, as
#     consumer/apply.c and consumer/group.c send them (the pre-check, the price read, the
#     five writes, COMMIT), plus the order INSERT of the earlier shape (price and currency
#     as two sub-queries per row, ROLLED BACK) for comparison;
#   - the closer's round (common/sale/order.c: SELECT ... FOR UPDATE SKIP LOCKED of the due
#     orders, the overdue gauge's MIN) as it is now (a range of (status, pay_deadline)) and
#     in the earlier shape (pay_deadline + INTERVAL ? SECOND <= NOW(3)).
# Around each statement it reads the session's Handler_* counters
# (information_schema.SESSION_STATUS: reading them costs none of these), and for each read
# it prints the plan of ANALYZE FORMAT=JSON (access type, key, rows read). Counts, not
# times: valid at any load. The SQL is the statements' text with literal values (the
# consumer binds them): the counters are the same. tests/integration/0312 checks the
# consumer's own calls against the per-transaction bounds.
# Usage: bench/consumer_stmts.sh [N]   Env: SK_BIN (build/bin), BENCH_ORDERS (100000),
#        BENCH_MYSQL (127.0.0.1:3306, root without a password).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SK_BIN=${SK_BIN:-$here/../build/bin}
N=${1:-500}
ORDERS=${BENCH_ORDERS:-100000}
hp=${BENCH_MYSQL:-127.0.0.1:3306}
. "$here/lib.sh"
bench_require bench/consumer_stmts.sh mysql python3
[ -x "$SK_BIN/seckill-admin" ] || { echo "bench/consumer_stmts.sh: no $SK_BIN/seckill-admin" >&2; exit 2; }
db=bench_stmts_$$_$RANDOM
my="mysql -uroot -h${hp%:*} -P${hp##*:} --protocol=TCP -N -B"
trap '$my -e "DROP DATABASE IF EXISTS \`$db\`" 2>/dev/null || true' EXIT

SECKILL_MYSQL_URL="mysql://root@$hp/$db" "$SK_BIN/seckill-admin" db migrate >/dev/null
$my "$db" -e "
INSERT INTO tb_seckill_voucher (voucher_id, init_stock, buckets, begin_time, end_time, status)
  SELECT 1000 + seq, 10000000, 1, NOW(3), NOW(3) + INTERVAL 1 DAY, 1 FROM seq_1_to_8;
INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)
  SELECT voucher_id, 0, init_stock, init_stock - $ORDERS DIV 8 FROM tb_seckill_voucher;
INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id, bucket, outcome)
  SELECT 5000000000 + seq, 6000000000 + seq, 7000000000 + seq, 1001 + seq % 8, 0, 1 FROM seq_1_to_$ORDERS;
INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, bucket, amount_minor, currency, status, pay_deadline)
  SELECT 6000000000 + seq, 7000000000 + seq, 1001 + seq % 8, 5000000000 + seq, 0, 0, 'CNY', 1,
         NOW(3) + INTERVAL 900 SECOND FROM seq_1_to_$ORDERS;
INSERT INTO tb_voucher_order_router (order_id, user_id, voucher_id)
  SELECT 6000000000 + seq, 7000000000 + seq, 1001 + seq % 8 FROM seq_1_to_$ORDERS;
INSERT INTO tb_voucher_reconcile_log (order_id, user_id, voucher_id, message_id, trace_id, log_type, business_type)
  SELECT 6000000000 + seq, 7000000000 + seq, 1001 + seq % 8, 5000000000 + seq, 5000000000 + seq, -1, 1
  FROM seq_1_to_$ORDERS;
ANALYZE TABLE tb_seckill_outcome, tb_voucher_order, tb_voucher_order_router, tb_voucher_reconcile_log;" >/dev/null

echo "machine: $(uptime | sed 's/.*load/load/'); $($my -e 'SELECT VERSION()'); database $db with $ORDERS UNPAID orders, batch N=$N"
N=$N ORDERS=$ORDERS DB=$db MY="$my" python3 - <<'EOF'
import json, os, subprocess, sys
n, orders, db, my = int(os.environ['N']), int(os.environ['ORDERS']), os.environ['DB'], os.environ['MY'].split()
VARS = ['HANDLER_READ_KEY', 'HANDLER_READ_NEXT', 'HANDLER_READ_RND_NEXT', 'HANDLER_WRITE', 'HANDLER_UPDATE']
stat = ("SELECT CONCAT('@@', VARIABLE_NAME, '=', VARIABLE_VALUE) FROM information_schema.SESSION_STATUS "
        "WHERE VARIABLE_NAME IN (%s);" % ",".join("'%s'" % v for v in VARS))
vid, base = 1001, 9 * 10**9
rows = [(base + i, base + 10**6 + i, vid, base + 2 * 10**6 + i) for i in range(n)]  # order, user, voucher, trace
traces = ",".join(str(r[3]) for r in rows)
order_head = ("INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, bucket, amount_minor, currency, "
              "status, pay_deadline, paid_at) VALUES ")
known = ("SELECT trace_id, order_id, user_id, voucher_id, outcome, COALESCE(reason, '') FROM tb_seckill_outcome "
         "WHERE trace_id IN (%s)" % traces)
price = "SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = %d" % vid
close_now = ("SELECT id FROM tb_voucher_order WHERE status = 1 AND pay_deadline <= NOW(3) - INTERVAL 120 SECOND "
             "ORDER BY pay_deadline LIMIT 500")
close_old = ("SELECT id FROM tb_voucher_order WHERE status = 1 AND pay_deadline + INTERVAL 120 SECOND <= NOW(3) "
             "ORDER BY pay_deadline LIMIT 500")
gauge_now = ("SELECT TIMESTAMPDIFF(SECOND, MIN(pay_deadline) + INTERVAL 120 SECOND, NOW(3)) FROM tb_voucher_order "
             "WHERE status = 1 AND pay_deadline <= NOW(3) - INTERVAL 120 SECOND")
gauge_old = ("SELECT TIMESTAMPDIFF(SECOND, MIN(pay_deadline) + INTERVAL 120 SECOND, NOW(3)) FROM tb_voucher_order "
             "WHERE status = 1 AND pay_deadline + INTERVAL 120 SECOND <= NOW(3)")
# (label, SQL, per: 'order' = divide by N, 'round' = per closer round, plan: ANALYZE it)
steps = [
    ('batch: pre-check SELECT ... IN (N traceIds) [only while duplicates are seen]', known, 'order', True),
    ('batch: BEGIN', 'BEGIN', 'order', False),
    ('batch: SELECT price_minor, currency (once per transaction)', price, 'order', True),
    ('batch: INSERT tb_seckill_outcome x N',
     "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id, bucket, outcome) VALUES " +
     ",".join("(%d,%d,%d,%d,0,1)" % (r[3], r[0], r[1], r[2]) for r in rows), 'order', False),
    ('batch: UPDATE tb_seckill_stock (merged decrement)', "UPDATE tb_seckill_stock SET stock = stock - %d "
     "WHERE voucher_id = %d AND bucket = 0 AND stock >= %d" % (n, vid, n), 'order', False),
    ('batch: SAVEPOINT', 'SAVEPOINT before_old_shape', 'order', False),
    ('earlier shape: INSERT tb_voucher_order x N, price by 2 sub-queries per row (rolled back)',
     order_head + ",".join("(%d,%d,%d,%d,0,(SELECT price_minor FROM tb_seckill_voucher WHERE voucher_id = %d),"
                           "(SELECT currency FROM tb_seckill_voucher WHERE voucher_id = %d),1,"
                           "NOW(3) + INTERVAL 900 SECOND,NULL)" % (r + (vid, vid)) for r in rows), 'order', False),
    ('batch: ROLLBACK TO SAVEPOINT', 'ROLLBACK TO SAVEPOINT before_old_shape', 'order', False),
    ('batch: INSERT tb_voucher_order x N, price and currency bound',
     order_head + ",".join("(%d,%d,%d,%d,0,0,'CNY',1,NOW(3) + INTERVAL 900 SECOND,NULL)" % r for r in rows),
     'order', False),
    ('batch: INSERT tb_voucher_order_router x N', "INSERT INTO tb_voucher_order_router (order_id, user_id, "
     "voucher_id) VALUES " + ",".join("(%d,%d,%d)" % r[:3] for r in rows), 'order', False),
    ('batch: INSERT tb_voucher_reconcile_log x N ... ON DUPLICATE KEY UPDATE',
     "INSERT INTO tb_voucher_reconcile_log (order_id, user_id, voucher_id, message_id, before_qty, change_qty, "
     "after_qty, trace_id, log_type, business_type, reconciliation_status, detail) VALUES " +
     ",".join("(%d,%d,%d,'%d',0,1,0,%d,-1,1,1,'order created')" % (r[0], r[1], r[2], r[3], r[3]) for r in rows) +
     " ON DUPLICATE KEY UPDATE id = id", 'order', False),
    ('batch: COMMIT', 'COMMIT', 'order', False),
    ('closer round: SELECT due orders, range (now)', close_now, 'round', True),
    ('closer round: SELECT due orders, expression (earlier shape)', close_old, 'round', True),
    ('closer round: overdue gauge MIN, range (now)', gauge_now, 'round', True),
    ('closer round: overdue gauge MIN, expression (earlier shape)', gauge_old, 'round', True),
]
sql = [stat, stat]
for label, s, per, plan in steps:
    sql += ["SELECT '@@step';", s + ";", stat]
out = subprocess.run(my + [db], input="\n".join(sql), capture_output=True, text=True)
if out.returncode:
    sys.exit("bench/consumer_stmts.sh: FAILED: " + out.stderr.strip())
snaps, cur = [], {}
for line in out.stdout.splitlines():
    if line.startswith('@@') and '=' in line:
        k, v = line[2:].split('=')
        cur[k] = int(v)
        if len(cur) == len(VARS):
            snaps.append(cur)
            cur = {}
over = {k: snaps[1][k] - snaps[0][k] for k in VARS}     # what one status read costs
def plan_of(s):
    r = subprocess.run(my + ['-r', db], input="ANALYZE FORMAT=JSON " + s + ";", capture_output=True, text=True)
    if r.returncode:
        return '?'
    found = []
    def walk(o):
        if isinstance(o, dict):
            if 'table_name' in o and 'access_type' in o:
                found.append('%s %s %s rows=%s' % (o['table_name'], o['access_type'], o.get('key', '-'),
                                                   o.get('r_rows')))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    j = json.loads(r.stdout)
    walk(j)
    msg = j.get('query_block', {}).get('table', {}).get('message')
    return '; '.join(found) or (msg or '-')
print('%-96s %9s %9s %9s %7s %7s  %s' % ('statement', 'read_key', 'read_next', 'rnd_next', 'write', 'update',
                                         'plan (ANALYZE FORMAT=JSON)'))
tot = {k: 0 for k in VARS}
pre = {k: 0 for k in VARS}
for i, (label, s, per, plan) in enumerate(steps):
    d = {k: snaps[i + 2][k] - snaps[i + 1][k] - over[k] for k in VARS}
    div = n if per == 'order' else 1
    if label.startswith('batch:'):
        for k in VARS:
            tot[k] += d[k]
            if 'pre-check' in label:
                pre[k] += d[k]
    unit = '/order' if per == 'order' else '/round'
    print('%-96s %9.3f %9.3f %9.3f %7.3f %7.3f  %s' % (label + ' ' + unit, d['HANDLER_READ_KEY'] / div,
          d['HANDLER_READ_NEXT'] / div, d['HANDLER_READ_RND_NEXT'] / div, d['HANDLER_WRITE'] / div,
          d['HANDLER_UPDATE'] / div, plan_of(s) if plan else ''))
for label, t in (('batch total now, no pre-check (no duplicate seen lately) /order',
                  {k: tot[k] - pre[k] for k in VARS}),
                 ('batch total now, with the pre-check /order', tot)):
    print('%-96s %9.3f %9.3f %9.3f %7.3f %7.3f' % (label, t['HANDLER_READ_KEY'] / n,
          t['HANDLER_READ_NEXT'] / n, t['HANDLER_READ_RND_NEXT'] / n, t['HANDLER_WRITE'] / n,
          t['HANDLER_UPDATE'] / n))
EOF
