#!/usr/bin/env bash
# scripts/demo/selftest.sh: the demo's crowd (sale.lua) against a stand-in front
# (mock_front.py), no stack needed, ~10 s. Checks what the demo relies on:
#   - every buyer asked, every ask answered (none lost to wrk's verification call);
#   - every 202 logged once, with 19-digit ids intact, and the log agrees with the
#     stand-in's own record (same traceIds per voucher, nothing missing or extra);
#   - accepted per voucher = its stock (enough buyers), no user accepted twice;
#   - 503s were retried; wrk.json parses and its counts add up.
# Exit 0 iff all hold. Usage: scripts/demo/selftest.sh [BUYERS] [CONNECTIONS]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
buyers=${1:-3000}
conns=${2:-16}
work=$(mktemp -d /tmp/demo-selftest.XXXXXX)
mock_pid=
cleanup() {
        [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null || true
        rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
vh=1990653204235288577 v1=1990653204235288578 v2=1990653204235288579
python3 "$here/mock_front.py" "$port" "$vh=300" "$v1=60" "$v2=60" > "$work/mock.json" &
mock_pid=$!
for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
mkdir "$work/sale"
SK_DEMO_OUT=$work/sale SK_DEMO_VOUCHERS=$vh,$v1,$v2 SK_DEMO_BUYERS=$buyers SK_DEMO_THREADS=$conns \
        wrk -t"$conns" -c"$conns" -d60s --timeout 10s -s "$here/sale.lua" "http://127.0.0.1:$port/" \
        > "$work/wrk.txt" 2>&1 &
wrk_pid=$!
for _ in $(seq 1 600); do
        (( $(find "$work/sale" -name 'done-*' | wc -l) >= conns )) && break
        sleep 0.1
done
kill -INT "$wrk_pid"
wait "$wrk_pid"
kill "$mock_pid"
wait "$mock_pid" || true
mock_pid=
cat "$work"/sale/accepted-*.tsv > "$work/accepted.tsv"
python3 - "$work" "$buyers" "$vh" "$v1" "$v2" <<'PY'
import json, sys, collections
work, buyers, vh, v1, v2 = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
w = json.load(open(f"{work}/sale/wrk.json"))
mock = json.load(open(f"{work}/mock.json"))
s = w["sale"]
lines = [l.rstrip("\n").split("\t") for l in open(f"{work}/accepted.tsv")]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
check(w["threads_done"] == w["threads"], f"every wrk thread finished ({w['threads_done']}/{w['threads']})")
check(s["buyers"] == buyers, f"buyers planned = {buyers} ({s['buyers']})")
check(s["asks"] == s["answers"], f"every ask answered (asks {s['asks']}, answers {s['answers']})")
check(s.get("lost", 0) == 0, f"no ask lost ({s.get('lost')})")
expected_asks = buyers + s["second_asks"] + s["retries_503"] + s["retries_soldout"]
check(s["asks"] == expected_asks, f"asks = buyers + second asks + retries ({s['asks']} vs {expected_asks})")
check(s["retries_503"] > 0, f"503s were retried ({s['retries_503']})")
check(sum(s["planned"].values()) == buyers, "planned buyers per voucher add up")
check(all(len(l) == 6 for l in lines), "every 202 line has 6 fields")
check(all(len(l[0]) == 19 and len(l[1]) == 19 and len(l[3]) == 19 for l in lines), "19-digit ids intact")
by_v = collections.defaultdict(set)
for l in lines:
    by_v[l[2]].add(l[1])
mock_v = {v: set(t) for v, t in mock["accepted"].items()}
check(by_v == mock_v, "the 202 log equals the stand-in's record (traceIds per voucher)")
check(len(lines) == sum(len(t) for t in by_v.values()), "no 202 logged twice")
check({v: len(t) for v, t in by_v.items()} == {vh: 300, v1: 60, v2: 60}, "accepted = stock per voucher")
pairs = collections.Counter((l[2], l[3]) for l in lines)
check(max(pairs.values(), default=1) == 1, "no user accepted twice for a voucher")
check(int(s["status"].get("202", 0)) == len(lines), "status 202 count = lines logged")
check(s["code"].get("10006", 0) > 0 and s["code"].get("10005", 0) > 0, "both 10005 and 10006 seen")
check(w["wrk"]["latency_us"]["p99"] > 0, "wrk latency percentiles present")
print("selftest:", "PASS" if not fails else f"FAIL ({len(fails)})")
sys.exit(1 if fails else 0)
PY
