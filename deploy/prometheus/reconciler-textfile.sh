#!/bin/sh
# reconciler-textfile.sh: one seckill-reconciler pass, its result written as Prometheus
# metrics for node_exporter's textfile collector (the reconciler is a one-shot program
# with no listener). Use it in place of the plain command in the systemd unit or cron:
#
#   ExecStart=/opt/seckill/deploy/prometheus/reconciler-textfile.sh --repair
#
# Arguments go to seckill-reconciler (--json is added). The JSON document still goes
# to stdout (the journal/log), stderr is the reconciler's; the exit status is the
# reconciler's (0 consistent, 1 repaired, 2 unresolved).
# Environment: SECKILL_RECONCILER (default: seckill-reconciler on PATH),
#   SECKILL_TEXTFILE_DIR (default /var/lib/prometheus/node-exporter).
# Metrics (rules in seckill.rules.yml, group seckill-reconciler):
#   seckill_reconciler_last_exit                      exit status of the last pass
#   seckill_reconciler_last_run_timestamp_seconds     when it ended (unix s)
#   seckill_reconciler_vouchers{result}               vouchers by verdict
#   seckill_reconciler_drift_vouchers                 Redis stock/users differ from the
#                                                     DB and were not rebuilt
#   seckill_reconciler_traces{state}                  checked, consistent, redriven,
#                                                     rolled_back, inconsistent, waiting, dlq
#   seckill_reconciler_dlq_redrive_loop_traces        undecided traces an earlier pass
#                                                     re-drove that are back in the DLQ
#                                                     (stuck in the re-drive loop, DESIGN.md 8)
set -u
dir=${SECKILL_TEXTFILE_DIR:-/var/lib/prometheus/node-exporter}
bin=${SECKILL_RECONCILER:-seckill-reconciler}
json=$(mktemp) || exit 2
trap 'rm -f "$json"' EXIT
"$bin" --json "$@" >"$json"
rc=$?
cat "$json"
mkdir -p "$dir" || exit "$rc"
tmp="$dir/.seckill_reconciler.prom.$$"
python3 - "$json" "$rc" >"$tmp" <<'PY' && mv -f "$tmp" "$dir/seckill_reconciler.prom" || rm -f "$tmp"
import json, sys, time
rc = int(sys.argv[2])
try:
    with open(sys.argv[1]) as f:
        doc = json.load(f)
except (OSError, ValueError):
    doc = {"vouchers": []}
    rc = max(rc, 2)
vs = doc.get("vouchers") or []
res = {"consistent": 0, "repaired": 0, "unresolved": 0}
for v in vs:
    res[v.get("result", "unresolved")] = res.get(v.get("result", "unresolved"), 0) + 1
drift = sum(1 for v in vs if (v.get("stockDrift") or v.get("usersDrift")) and not v.get("rebuilt"))
tr = {k: sum(int(v.get(j, 0)) for v in vs) for k, j in (
    ("checked", "checked"), ("consistent", "consistent"), ("redriven", "redriven"),
    ("rolled_back", "rolledBack"), ("inconsistent", "inconsistent"),
    ("waiting", "waiting"), ("dlq", "dlq"))}
print("# HELP seckill_reconciler_last_exit Exit status of the last reconciliation pass")
print("# TYPE seckill_reconciler_last_exit gauge")
print(f"seckill_reconciler_last_exit {rc}")
print("# HELP seckill_reconciler_last_run_timestamp_seconds End of the last pass (unix seconds)")
print("# TYPE seckill_reconciler_last_run_timestamp_seconds gauge")
print(f"seckill_reconciler_last_run_timestamp_seconds {int(time.time())}")
print("# HELP seckill_reconciler_vouchers Vouchers of the last pass by verdict")
print("# TYPE seckill_reconciler_vouchers gauge")
for k in sorted(res):
    print(f'seckill_reconciler_vouchers{{result="{k}"}} {res[k]}')
print("# HELP seckill_reconciler_drift_vouchers Vouchers whose Redis state differs from the DB, not rebuilt")
print("# TYPE seckill_reconciler_drift_vouchers gauge")
print(f"seckill_reconciler_drift_vouchers {drift}")
loop = int(doc.get("dlqRedriveLoopTraces", sum(int(v.get("dlqRedriveLoop", 0)) for v in vs)))
print("# HELP seckill_reconciler_dlq_redrive_loop_traces Traces stuck in the DLQ re-drive loop (re-driven, back in the DLQ)")
print("# TYPE seckill_reconciler_dlq_redrive_loop_traces gauge")
print(f"seckill_reconciler_dlq_redrive_loop_traces {loop}")
print("# HELP seckill_reconciler_traces Traces of the last pass by state")
print("# TYPE seckill_reconciler_traces gauge")
for k in sorted(tr):
    print(f'seckill_reconciler_traces{{state="{k}"}} {tr[k]}')
PY
exit "$rc"
