#!/usr/bin/env bash
# tests/unit/ops_demo_figures.sh: the demo report's figures (scripts/demo/figures.py),
# no stack needed.
#   - the reconciler line counts vouchers and traces from the JSON (a run where every
#     voucher is consistent reads "3 consistent, 0 repaired, 0 unresolved"), and run.sh
#     prints that line, not a legend of the exit codes
#   - accept -> DB lag is read on one clock: created_at minus the traceId's snowflake
#     timestamp (never the client's receive time)
#   - the timeline: answers/s per 100 ms bin by code, orders cumulative
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
PY
