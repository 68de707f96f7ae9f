#!/usr/bin/env bash
# tests/unit/ops_deploy.sh: the operations files in deploy/ are valid (no services needed).
#   1. promtool check config deploy/prometheus/prometheus.yml (and the rules it loads)
#   2. promtool check rules deploy/prometheus/seckill.rules.yml
#   3. promtool test rules deploy/prometheus/tests/*.yml (input series -> expected alerts)
#   4. the metrics the rules name outside their seckill-pending group exist;
#      deploy/grafana/*.json: valid JSON, a dashboard with panels, unique panel ids, a
#      PromQL expression on every target, and every seckill_ metric it names is one the
#      code registers (producer/, consumer/, reconciler-textfile.sh) or one the rules'
#      seckill-pending group lists; the JSON is deploy/grafana/gen_dashboard.py's output
#   5. reconciler-textfile.sh with a stand-in reconciler: its exit status and JSON pass
#      through, the metrics file is valid (promtool check metrics) and counts right
#   6. nginx -t on deploy/nginx/seckill-gateway.conf, when nginx is installed (optional)
#   8. the packaged env examples name jwt with its keys file, issuer and audience, and the
#      front's unix socket (DESIGN.md 15 "Defaults are the safe ones")
#   7. the systemd units (DESIGN.md 15, 17): the front reloads its keys on `systemctl
#      reload` (ExecReload=/bin/kill -HUP $MAINPID), the reconciler may write the textfile
#      exporter's directory under ProtectSystem=strict (ReadWritePaths); with
#      systemd-analyze installed, each unit (its @...@ filled in) passes `verify`
# promtool comes with Debian's `prometheus` package (scripts/test.sh installs it).
# Env: SK_SRC (source root; default: two levels up).
set -euo pipefail
SRC=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
D=$SRC/deploy
fail=0
step() { printf '== %s\n' "$*"; }

command -v promtool >/dev/null || {
        echo "promtool not found: apt-get install prometheus (scripts/test.sh installs it)" >&2
        exit 1
}
step "promtool check config"
promtool check config "$D/prometheus/prometheus.yml" || fail=1
step "promtool check rules"
promtool check rules "$D/prometheus/seckill.rules.yml" || fail=1
step "promtool test rules"
shopt -s nullglob
tests=("$D"/prometheus/tests/*.yml)
[[ ${#tests[@]} -gt 0 ]] || { echo "no rule tests in $D/prometheus/tests" >&2; fail=1; }
for t in "${tests[@]}"; do
        promtool test rules "$t" || fail=1
done

step "reconciler-textfile.sh (a stand-in reconciler: one drifting voucher, exit 2)"
tf=$(mktemp -d)
cat >"$tf/rec" <<'REC'
#!/bin/sh
[ "$1" = --json ] && [ "$2" = --repair ] || { echo "args: $*" >&2; exit 3; }
echo '{"exit":2,"result":"unresolved","dlqRedriveLoopTraces":2,"note":"","vouchers":[{"voucherId":"11","result":"unresolved","checked":5,"consistent":4,"inconsistent":1,"stockDrift":true,"usersDrift":false,"rebuilt":false},{"voucherId":"12","result":"consistent","checked":3,"consistent":3,"stockDrift":false,"usersDrift":true,"rebuilt":true}]}'
exit 2
REC
chmod +x "$tf/rec"
xrc=0
SECKILL_RECONCILER=$tf/rec SECKILL_TEXTFILE_DIR=$tf/out "$D/prometheus/reconciler-textfile.sh" --repair >"$tf/stdout" || xrc=$?
prom=$tf/out/seckill_reconciler.prom
if [[ $xrc -ne 2 || ! -s $prom ]] || ! grep -q '"voucherId":"11"' "$tf/stdout"; then
        echo "FAIL: exit $xrc (want 2), JSON passed through and $prom written"; fail=1
else
        promtool check metrics <"$prom" || fail=1
        for want in 'seckill_reconciler_last_exit 2' 'seckill_reconciler_drift_vouchers 1' \
                    'seckill_reconciler_vouchers{result="unresolved"} 1' \
                    'seckill_reconciler_vouchers{result="consistent"} 1' \
                    'seckill_reconciler_traces{state="checked"} 8' \
                    'seckill_reconciler_traces{state="inconsistent"} 1' \
                    'seckill_reconciler_dlq_redrive_loop_traces 2'; do
                grep -qxF "$want" "$prom" || { echo "FAIL: no line '$want' in:"; cat "$prom"; fail=1; }
        done
fi
rm -rf "$tf"

step "metric names; grafana dashboards"
python3 - "$SRC" "$D"/grafana/*.json <<'PY' || fail=1
import json, os, re, sys
src, files = sys.argv[1], sys.argv[2:]
if not files:
    sys.exit("no dashboards in deploy/grafana")
# Names the code registers: "seckill_front_x" in producer/ (rows C(handle, "name", ...)
# and G(...) of its metric table), "consumer_x" (prefixed by sk_metrics; by a call or a
# row of consumer/main.c's table) in consumer/, the textfile exporter's, and the rules'
# pending group.
known = set()
def scan(path, pat, prefix=""):
    with open(path, errors="replace") as f:
        for m in re.finditer(pat, f.read()):
            known.add(prefix + m.group(1))
for d, pre in (("producer", ""), ("consumer", "seckill_")):
    for root, _, names in os.walk(os.path.join(src, d)):
        for n in names:
            if n.endswith(".c"):
                scan(os.path.join(root, n),
                     r'(?:sk_metrics_(?:counter|gauge|hist)\([^,]*|\b[CG]\(\w+),\s*"([a-z_]+)"', pre)
                # consumer/main.c's table of metrics: { CM(field), 'c', "name", ... }
                scan(os.path.join(root, n), r"\{ CM\(\w+\), '[cgh]', \"([a-z_]+)\"", pre)
scan(os.path.join(src, "deploy/prometheus/reconciler-textfile.sh"), r'\b(seckill_reconciler_[a-z_]+)\b')
rules = open(os.path.join(src, "deploy/prometheus/seckill.rules.yml")).read()
scan_pending = rules[rules.find("name: seckill-pending"):]
known |= set(re.findall(r'\b(seckill_[a-z_]+)\b', scan_pending))
bad = 0
# The rules outside the pending group must name metrics that exist.
for name in set(re.findall(r'\b(seckill_[a-z_]+)', rules[:rules.find("name: seckill-pending")])):
    if name not in known and re.sub(r'_(bucket|sum|count)$', '', name) not in known:
        print(f"seckill.rules.yml: unknown metric {name} outside the seckill-pending group"); bad += 1
for path in files:
    try:
        with open(path) as f:
            dash = json.load(f)
    except ValueError as e:
        print(f"{path}: not valid JSON: {e}"); bad += 1; continue
    panels = dash.get("panels") or []
    if not dash.get("title") or not dash.get("uid") or not panels:
        print(f"{path}: needs title, uid and panels"); bad += 1
    ids = [p.get("id") for p in panels]
    if len(ids) != len(set(ids)):
        print(f"{path}: duplicate panel ids"); bad += 1
    for p in panels:
        if p.get("type") == "row":
            continue
        tg = p.get("targets") or []
        if not tg or any(not t.get("expr") for t in tg):
            print(f"{path}: panel {p.get('title')!r} has a target without expr"); bad += 1
        for t in tg:
            e = t.get("expr", "")
            if e.count("(") != e.count(")") or e.count("{") != e.count("}"):
                print(f"{path}: panel {p.get('title')!r}: unbalanced expression {e}"); bad += 1
            for name in re.findall(r'\b(seckill_[a-z_]+)', e):
                base = re.sub(r'_(bucket|sum|count)$', '', name)
                if name not in known and base not in known:
                    print(f"{path}: panel {p.get('title')!r}: unknown metric {name}"); bad += 1
    print(f"{os.path.basename(path)}: {len(panels)} panels, {len(known)} known metric names")
sys.exit(1 if bad else 0)
PY

step "seckill-sale.json is gen_dashboard.py's output"
python3 "$D/grafana/gen_dashboard.py" | cmp -s - "$D/grafana/seckill-sale.json" || {
        echo "FAIL: deploy/grafana/seckill-sale.json differs from gen_dashboard.py's output (regenerate it)"; fail=1; }

step "systemd units"
grep -qxF 'ExecReload=/bin/kill -HUP $MAINPID' "$D/systemd/seckill-front@.service.in" ||
        { echo "FAIL: seckill-front@.service has no ExecReload=/bin/kill -HUP \$MAINPID"; fail=1; }
grep -qxF 'ReadWritePaths=-/var/lib/prometheus/node-exporter' "$D/systemd/seckill-reconciler.service.in" ||
        { echo "FAIL: seckill-reconciler.service cannot write the textfile directory (ReadWritePaths)"; fail=1; }
grep -q '^ExecReload=' "$D/systemd/seckill-consumer.service.in" &&
        { echo "FAIL: seckill-consumer.service has an ExecReload, but the consumer has nothing to reload"; fail=1; }
if command -v systemd-analyze >/dev/null; then
        ud=$(mktemp -d)
        for f in "$D"/systemd/*; do
                n=$(basename "$f" .in)
                sed -e 's|@SK_BIN_DIR@|/usr/bin|g' -e 's|@SK_SHARE_DIR@|/usr/share/seckill|g' \
                    -e 's|@SK_DOC_DIR@|/usr/share/doc/seckill|g' "$f" >"$ud/$n"
        done
        for n in seckill-front@.service seckill-consumer.service seckill-reconciler.service; do
                u=$ud/$n
                [[ $n == *@* ]] && { cp "$u" "$ud/${n/@/@main}"; u=$ud/${n/@/@main}; }
                # /usr/bin/seckill-* need not exist here: only that complaint is tolerated.
                out=$(systemd-analyze verify "$u" 2>&1 | grep -v 'is not executable\|No such file' || true)
                [[ -z $out ]] || { echo "FAIL: systemd-analyze verify $n: $out"; fail=1; }
        done
        rm -rf "$ud"
else
        echo "systemd-analyze not installed: verify skipped"
fi

step "the env examples: jwt with its files, the unix socket"
for want in '^SECKILL_AUTH=jwt$' '^SECKILL_JWT_KEYS_FILE=/etc/seckill/' '^SECKILL_JWT_ISSUER=.' \
            '^SECKILL_JWT_AUDIENCE=.' '^SECKILL_HTTP_ADDR=unix:/run/seckill/'; do
        grep -q "$want" "$D/front-main.env.example" ||
                { echo "FAIL: deploy/front-main.env.example has no line $want"; fail=1; }
done
grep -q '^SECKILL_AUTH=trusted-header' "$D"/*.env.example &&
        { echo "FAIL: an env example sets trusted-header"; fail=1; }

if command -v nginx >/dev/null; then
        step "nginx -t"
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        mkdir -p "$tmp/logs"
        printf 'pid %s/nginx.pid;\nerror_log %s/error.log;\nevents {}\nhttp {\n    include %s;\n}\n' \
                "$tmp" "$tmp" "$D/nginx/seckill-gateway.conf" >"$tmp/nginx.conf"
        nginx -t -q -e "$tmp/error.log" -p "$tmp" -c "$tmp/nginx.conf" || { cat "$tmp/error.log"; fail=1; }
else
        step "nginx -t skipped: nginx not installed (optional)"
fi
[[ $fail -eq 0 ]] && echo "ops_deploy: PASS" || echo "ops_deploy: FAIL"
exit "$fail"
