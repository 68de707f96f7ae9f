#!/usr/bin/env bash
# tests/unit/ops_demo_figures.sh: the demo report's figures (scripts/demo/figures.py),
# no stack needed.
#   - the reconciler line counts vouchers and traces from the JSON (a run where every
#     voucher is consistent reads "3 consistent, 0 repaired, 0 unresolved"), and run.sh
#     prints that line, not a legend of the exit codes
#   - accept -> DB lag is read on one clock: created_at minus the traceId's snowflake
#     timestamp (never the client's receive time)
#   - the timeline: answers/s per 100 ms bin by code, orders cumulative
#   - per bucket (buckets.py): verify's bucketRows joined with voucher show's buckets,
#     sold out, I1 and Redis = DB per bucket, a missing figure FAILs
#   - the outage (outage.py, --kill-redis): the hot voucher's states after the kill, the
#     return to redis only after Redis is back, seconds since the sale's start
#   - the late payment (lifecycle.py): PASS only for 409 refund_due "late", its tb_payment
#     row and the order CLOSED; N/A without one
# Env: SK_SRC (source root; default: two levels up).
set -euo pipefail
SRC=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
DEMO=$SRC/scripts/demo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run.sh's one-line summary comes from the JSON
grep -q 'figures.py" rec-summary' "$DEMO/run.sh" || { echo "FAIL: run.sh does not print figures.py rec-summary"; exit 1; }
if grep -q 'say "reconciler exit $rec_rc (0 consistent, 1 repaired, 2 unresolved)"' "$DEMO/run.sh"; then
        echo "FAIL: run.sh still prints the exit-code legend as its summary"; exit 1
fi
cat >"$tmp/rec.json" <<'JSON'
{"exit":0,"result":"consistent","note":"","vouchers":[
 {"voucherId":"1001","result":"consistent","checked":700,"consistent":700,"redriven":0,"rolledBack":0,"inconsistent":0,"waiting":0,"stockDrift":false,"usersDrift":false,"rebuilt":false},
 {"voucherId":"1002","result":"consistent","checked":150,"consistent":150,"redriven":0,"rolledBack":0,"inconsistent":0,"waiting":0,"stockDrift":false,"usersDrift":false,"rebuilt":false},
 {"voucherId":"1003","result":"consistent","checked":150,"consistent":150,"redriven":0,"rolledBack":0,"inconsistent":0,"waiting":0,"stockDrift":false,"usersDrift":false,"rebuilt":false}]}
JSON
line=$(python3 "$DEMO/figures.py" rec-summary "$tmp/rec.json" 0)
echo "$line"
want="reconciler exit 0 (consistent): 3 voucher(s): 3 consistent, 0 repaired, 0 unresolved; traces: 1000 checked, 1000 consistent, 0 re-driven, 0 rolled back, 0 inconsistent, 0 waiting"
[[ $line == "$want" ]] || { echo "FAIL: summary line"; echo "want: $want"; exit 1; }
line=$(python3 "$DEMO/figures.py" rec-summary "$tmp/missing.json" 2)
[[ $line == "reconciler exit 2 (unresolved): no JSON output" ]] || { echo "FAIL: no-JSON line: $line"; exit 1; }

PYTHONPATH=$DEMO python3 - <<'PY'
import figures as F
# a trace id minted at T by worker 37, sequence 5; its outcome row created 12 ms later
T = 1796091157123
tid = str(((T - 1704067200000) << 22) | (37 << 12) | 5)
assert F.snowflake_ms(tid) == T, (F.snowflake_ms(tid), T)
assert F.accept_to_db_lag(tid, T + 12) == (T, 12), F.accept_to_db_lag(tid, T + 12)
# a commit in the same ms as the admission is a lag of 0, never negative
assert F.accept_to_db_lag(tid, T)[1] == 0
# bins of 100 ms: 3 answers "0" and 1 "10005" in the first, 2 "10005" two bins later;
# orders: 2 in the first bin, 1 in the second
t0 = 1796091157000
tl = {"17960911570.0": 3, "17960911570.10005": 1, "17960911572.10005": 2}
rows, codes = F.timeline(tl, {17960911570: 2, 17960911571: 1}, t0)
assert codes == ["0", "10005"], codes
assert [r[0] for r in rows] == [0.0, 0.1, 0.2], rows
assert rows[0][1] == {"0": 30.0, "10005": 10.0}, rows[0]
assert rows[1][1] == {"0": 0.0, "10005": 0.0}, rows[1]
assert rows[2][1] == {"0": 0.0, "10005": 20.0}, rows[2]
assert [r[2] for r in rows] == [2, 3, 3], rows
assert F.timeline({}, {}, t0) == ([], [])
print("figures: PASS")

import buckets as B
verify = {"bucketRows": [{"bucket": 0, "initStock": 250, "dbStock": 0, "activeOrders": 250},
                         {"bucket": 1, "initStock": 250, "dbStock": 3, "activeOrders": 247},
                         {"bucket": 2, "initStock": 250, "dbStock": 5, "activeOrders": 244}]}
show = {"buckets": [{"bucket": 0, "dbStock": 0, "redisStock": "0", "redisUsers": 250},
                    {"bucket": 1, "dbStock": 3, "redisStock": "3", "redisUsers": 247},
                    {"bucket": 2, "dbStock": 5, "redisStock": None, "redisUsers": 0}]}
rows = B.bucket_rows(verify, show)
assert [r["bucket"] for r in rows] == [0, 1, 2], rows
assert rows[0] == {"bucket": 0, "init_stock": 250, "db_stock": 0, "active_orders": 250,
                   "redis_stock": 0, "redis_users": 250, "sold_out": True, "inv1": True,
                   "redis_eq_db": True}, rows[0]
assert rows[1]["sold_out"] is False and rows[1]["inv1"] and rows[1]["redis_eq_db"], rows[1]
# bucket 2: 250 - 5 != 244 active, and its Redis stock key is missing
assert rows[2]["inv1"] is False and rows[2]["redis_eq_db"] is False and rows[2]["redis_stock"] is None
(ok1, d1), (ok3, d3) = B.bucket_checks([{"voucherId": "7", "buckets": rows[:2]}])
assert ok1 and ok3, (d1, d3)
assert d1 == "2 buckets of 1 vouchers; 7 b0: 250 - 0 = 250 vs 250 active; 7 b1: 250 - 3 = 247 vs 247 active", d1
(ok1, d1), (ok3, d3) = B.bucket_checks([{"voucherId": "7", "buckets": rows}])
assert not ok1 and not ok3 and "7 b2: 250 - 5 = 245 vs 244 active FAIL" in d1 and "7 b2: redis None db 5 FAIL" in d3
(ok1, _), (ok3, _) = B.bucket_checks([{"voucherId": "8", "buckets": B.bucket_rows(None, None)}])
assert not ok1 and not ok3   # no rows from the tools is a FAIL, never a silent PASS
lines = B.bucket_lines({"voucherId": "7", "role": "hot", "buckets": rows})
assert lines[0] == " hot voucher 7: 3 bucket(s)", lines
assert lines[2].split() == ["0", "250", "0", "250", "0", "yes", "PASS", "PASS"], lines[2]
assert lines[4].split() == ["2", "250", "5", "244", "None", "no", "FAIL", "FAIL"], lines[4]
print("buckets: PASS")

import outage as O
t0 = 1796091157000
marks = {"redis_port": 40001, "kill_at": 200, "accepted_at_kill": 242, "down_s": 5,
         "kill_ms": t0 + 1400, "back_ms": t0 + 18500, "over_ms": t0 + 22500}
H = "386095121583570944"
states = [  # seen_ms scope state epoch since_ms
    {"seen_ms": t0 - 5000, "scope": H, "state": "redis", "epoch": 0, "since_ms": t0 - 9000},
    {"seen_ms": t0 + 2800, "scope": H, "state": "draining", "epoch": 1, "since_ms": t0 + 2700},
    {"seen_ms": t0 + 2800, "scope": "99", "state": "draining", "epoch": 1, "since_ms": t0 + 2750},
    {"seen_ms": t0 + 11100, "scope": H, "state": "db", "epoch": 2, "since_ms": t0 + 11000},
    {"seen_ms": t0 + 22200, "scope": H, "state": "redis", "epoch": 4, "since_ms": t0 + 22100}]
o = O.outage_figures(marks, states, H, t0, {H: 900, "99": 244}, 1144, 13)
assert o["db_only_purchases"] == 1144 and o["db_only_200_seen_by_client"] == 1144
assert o["state_ms"] == {"draining": t0 + 2700, "db": t0 + 11000, "rebuilding": None,
                         "redis": t0 + 22100}, o["state_ms"]
assert o["s_since_sale_start"] == {"killed": 1.4, "redis_back": 18.5, "draining": 2.7,
                                   "db": 11.0, "rebuilding": None, "redis": 22.1}, o["s_since_sale_start"]
assert o["outage_s"] == 20.7 and o["redis_down_s"] == 17.1, o
# a return to redis seen before Redis was back does not end the outage
early = states[:4] + [{"seen_ms": t0 + 12000, "scope": H, "state": "redis", "epoch": 3, "since_ms": t0 + 11900}]
assert O.outage_figures(marks, early, H, t0, {}, 0, 0)["state_ms"]["redis"] is None
# no kill: no states, no timeline
assert O.outage_figures({}, states, H, t0, {}, 0, 0)["s_since_sale_start"]["draining"] is None
lines = O.outage_lines(o)
assert "killed -9 at " in lines[0] and "(+1.4 s)" in lines[0] and "after 242 accepted" in lines[0], lines[0]
assert "db " in lines[1] and "(+11.0 s)" in lines[1], lines[1]
assert "DB-only purchases served: 1,144" in lines[2], lines[2]
assert "first DB-only sale not seen after the kill" in lines[3], lines[3]
assert "rebuilding not seen" in lines[4] and "20.7 s from kill to redis" in lines[4], lines[4]
o["first_db_only_s_after_kill"] = 2.2
assert "first DB-only sale 2.2 s after the kill" in O.outage_lines(o)[3], O.outage_lines(o)[3]
print("outage: PASS")
PY

# the late payment (lifecycle.py, DESIGN.md 13): PASS only for 409 refund_due "late" with
# its tb_payment row (2, late) and the order CLOSED; N/A without one; FAIL for "closed"
PYTHONPATH=$DEMO python3 - <<'PY'
import lifecycle as L
late = {"order": "386095121583570944", "txn": "demo-late-386095121583570944", "status": 409,
        "reason": "late", "refund": True, "code": 10021, "signed_after_deadline_ms": 5}
def run(payer, row):
    checks = []
    def sql(q):
        if "COUNT(*)" in q:
            return [["3"]]
        assert "demo-late-386095121583570944" in q, q
        return [row] if row else []
    out = L.late_payment(sql, lambda n, ok, d: checks.append((ok, d)), "db", payer)
    return checks[0], out
(ok, d), out = run({"late_payment": late, "late_tries": 1, "grace_s": 0}, ["2", "late", late["order"], "4"])
assert ok is True and out["refund_due_rows"] == 3, (ok, d)
assert "signed 5 ms after deadline + 0 s" in d and "2/late/4" in d, d
(ok, d), _ = run({"late_payment": dict(late, reason="closed"), "late_tries": 5}, ["2", "closed", late["order"], "4"])
assert ok is False, d
(ok, d), _ = run({"late_payment": late}, ["1", "", late["order"], "2"])
assert ok is False, d
(ok, d), _ = run({"late_payment": late}, None)
assert ok is False and "no row" in d, d
(ok, d), out = run({}, None)
assert ok is None and out["late"] is None, d
(ok, d), _ = run({"late_payment": dict(late, txn="x'; DROP TABLE t; --")}, None)
assert ok is False and "malformed" in d, d
print("late payment: PASS")
PY
