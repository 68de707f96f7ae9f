"""scripts/demo/figures.py: figures of the demo report that need no stack (imported by
report.py, unit-tested by tests/unit/ops_demo_figures.sh):

  snowflake_ms(id)          the wall ms a snowflake id was minted at (DESIGN.md 2)
  accept_to_db_lag(...)     one accepted purchase's accept -> outcome-row lag, both ends
                            read on the server side (see the function)
  rec_summary(doc, rc)      the one-line summary of seckill-reconciler --json
  timeline(...)             answers per second by code and orders in the DB over time
  plot_timeline(...)        timeline.png through timeline.gp
  read_marks(path)          "name integer" lines as a dict (phases.txt, outage.txt)
  redis_masters(run, topo)  EVALSHA calls per Redis master during the run (run.sh's
                            cmdstats-before/after.txt: "host:port calls" a line)

Ids stay strings until here and are parsed as Python ints (exact, no floats).
"""
import os
import subprocess
import sys
import time

SNOWFLAKE_EPOCH_MS = 1704067200000  # SK_SNOWFLAKE_EPOCH_MS, 2024-01-01T00:00:00Z
SNOWFLAKE_TS_SHIFT = 22             # 10 bits of worker id + 12 bits of sequence
TIMELINE_BIN_MS = 100               # sale.lua's "tl.<ms / 100>.<code>" counters


def snowflake_ms(id_str):
    """Unix ms of a snowflake id's timestamp (41 bits of ms since the 2024 epoch)."""
    return (int(id_str) >> SNOWFLAKE_TS_SHIFT) + SNOWFLAKE_EPOCH_MS


def accept_to_db_lag(trace_id, created_ms):
    """(accept_ms, lag_ms) of one accepted purchase, on one clock.

    accept = the timestamp of its traceId: the front mints it when the request arrives,
    before deduct.lua, from the host's CLOCK_REALTIME. The other end is the outcome
    row's created_at (MariaDB's CURRENT_TIMESTAMP(3) at the consumer's insert). Both are
    server-side readings; in the demo the front and MariaDB share one host and so one
    clock, and the lag is never negative. The client's receive time is not used: the 202
    waits for Kafka's delivery report, so the consumer may commit before wrk sees it.
    """
    acc = snowflake_ms(trace_id)
    return acc, int(created_ms) - acc


def rec_summary(doc, rc):
    """One line from seckill-reconciler --json output (a dict, or None) and its exit code:
    the verdict, then vouchers counted by their own result and the traces by state."""
    verdicts = {0: "consistent", 1: "found and repaired", 2: "unresolved"}
    if not isinstance(doc, dict) or not isinstance(doc.get("vouchers"), list):
        return f"reconciler exit {rc} ({verdicts.get(rc, 'error')}): no JSON output"
    vs = doc["vouchers"]
    by = {"consistent": 0, "repaired": 0, "unresolved": 0}
    for v in vs:
        r = v.get("result", "unresolved")
        by[r] = by.get(r, 0) + 1
    tr = {k: sum(int(v.get(k, 0) or 0) for v in vs)
          for k in ("checked", "consistent", "redriven", "rolledBack", "inconsistent", "waiting")}
    drift = sum(1 for v in vs if (v.get("stockDrift") or v.get("usersDrift")))
    rebuilt = sum(1 for v in vs if v.get("rebuilt"))
    line = (f"reconciler exit {rc} ({verdicts.get(rc, 'error')}): {len(vs)} voucher(s): "
            f"{by['consistent']} consistent, {by['repaired']} repaired, "
            f"{by['unresolved']} unresolved; traces: {tr['checked']} checked, "
            f"{tr['consistent']} consistent, {tr['redriven']} re-driven, "
            f"{tr['rolledBack']} rolled back, {tr['inconsistent']} inconsistent, "
            f"{tr['waiting']} waiting")
    if drift or rebuilt:
        line += f"; drift in {drift} voucher(s), {rebuilt} rebuilt"
    if doc.get("note"):
        line += f"; {doc['note']}"
    return line


def code_label(code):
    """A sale.lua code key as shown: "0" is the 202, "http503" a body without a code."""
    return {"0": "202 accepted", "10005": "10005 sold out",
            "10006": "10006 already bought"}.get(code, code.replace("http", "HTTP "))


def timeline(tl, order_bins, t0_ms):
    """Rows (t_s, {code: answers/s}, orders_total) per TIMELINE_BIN_MS bin: t_s is the
    bin's start, orders_total counts the orders up to the bin's end.

    tl: sale.lua's {"<bin>.<code>": count} (bin = wall ms // TIMELINE_BIN_MS);
    order_bins: {bin: orders created in it} (create_time of the order rows);
    t0_ms: the sale's first request (wall ms). Bins before t0 (none in practice) and
    after the last bin of either series are left out; orders are cumulative.
    """
    ans = {}
    for key, n in (tl or {}).items():
        b, _, code = key.partition(".")
        if b.isdigit() and code:
            ans.setdefault(int(b), {})
            ans[int(b)][code] = ans[int(b)].get(code, 0) + int(n)
    bins = set(ans) | set(order_bins)
    if not bins:
        return [], []
    first = min(t0_ms // TIMELINE_BIN_MS, min(bins))
    last = max(bins)
    codes = sorted({c for per in ans.values() for c in per}, key=lambda c: (len(c), c))
    rows, total = [], 0
    per_s = 1000.0 / TIMELINE_BIN_MS
    for b in range(first, last + 1):
        total += order_bins.get(b, 0)
        rows.append(((b * TIMELINE_BIN_MS - t0_ms) / 1000.0,
                     {c: ans.get(b, {}).get(c, 0) * per_s for c in codes}, total))
    return rows, codes


def plot_timeline(rows, codes, datf, png, title):
    """Write the rows to datf and draw png with timeline.gp; returns png or None."""
    with open(datf, "w") as f:
        # the header row names the columns (gnuplot's columnheader, quoted strings)
        f.write('"t_s" ' + " ".join(f'"{code_label(c)}"' for c in codes) + ' "orders in the DB"\n')
        for t, per, total in rows:
            f.write(f"{t:.3f} " + " ".join(f"{per[c]:.0f}" for c in codes) + f" {total}\n")
    gp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "timeline.gp")
    res = subprocess.run(["gnuplot", "-e", f"datafile='{datf}'; outfile='{png}'; "
                          f"ncodes={len(codes)}; binw={TIMELINE_BIN_MS / 1000.0}; "
                          f"title_text='{title}'", gp],
                         capture_output=True, text=True)
    if res.returncode == 0 and os.path.exists(png):
        return png
    sys.stderr.write(f"demo: gnuplot (timeline) failed: {res.stderr.strip()[-500:]}\n")
    return None


def rel_s(ms, t0):
    """Seconds from wall ms @p t0 to @p ms, one decimal; None when either is unknown."""
    return None if not ms or not t0 else round((ms - t0) / 1000.0, 1)


def clock_at(ms, rel):
    """ "HH:MM:SS.mmmZ (+R s)" of wall ms @p ms, R = @p rel; "not seen" without @p ms."""
    if not ms:
        return "not seen"
    return time.strftime("%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z (+{rel} s)"


def read_marks(path):
    """{name: int} from "name integer" lines (run.sh's phases.txt, outage.sh's
    outage.txt); other lines are skipped, a missing file is {}."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                    out[parts[0]] = int(parts[1])
    except OSError:
        pass
    return out


def _read_cmdstats(path):
    """{node: (calls, usec)} of cmdstat_evalsha per master (redis_cmdstats in
    redis_topo.sh: "node calls usec" per line; usec 0 when absent)."""
    out = {}
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if parts:
                    nums = [int(x) if x.isdigit() else 0 for x in parts[1:3]] + [0, 0]
                    out[parts[0]] = (nums[0], nums[1])
    except OSError:
        pass
    return out


def redis_masters(run, topo, admitted=None):
    """{"topology", "masters": [{"node", "evalsha_calls", "evalsha_usec",
    "usec_per_call"}], "evalsha_usec_per_admission"}: cmdstat_evalsha of every master
    between the front being ready and the report (after - before; a master that appeared
    meanwhile, e.g. after a failover, counts from 0). usec is the time Redis spent inside
    EVALSHA, the script's commands included (INFO commandstats): the Redis CPU the sale's
    scripts cost (DESIGN.md 4 "Cost of an admission"). Per admission: every
    EVALSHA of the run (admissions, rejections, probes, the consumer's claims, rollbacks
    and releases) over @admitted (the 202s), so an upper bound of an admission's own
    cost; the Redis is shared with whatever else ran meanwhile."""
    before = _read_cmdstats(os.path.join(run, "cmdstats-before.txt"))
    after = _read_cmdstats(os.path.join(run, "cmdstats-after.txt"))
    masters = []
    for n, (c, u) in sorted(after.items()):
        c0, u0 = before.get(n, (0, 0))
        dc, du = max(0, c - c0), max(0, u - u0)
        masters.append({"node": n, "evalsha_calls": dc, "evalsha_usec": du,
                        "usec_per_call": round(du / dc, 2) if dc else None})
    usec = sum(m["evalsha_usec"] for m in masters)
    per_adm = round(usec / admitted, 2) if admitted else None
    return {"topology": topo, "masters": masters, "evalsha_usec_per_admission": per_adm}


def redis_masters_line(rm):
    """The report's lines of per-master EVALSHA calls and Redis CPU."""
    ms = rm.get("masters") or []
    if not ms:
        return f" redis         {rm.get('topology', '?')}: no per-master figures"
    line = (f" redis         {rm.get('topology')}, {len(ms)} master(s), EVALSHA calls: "
            + ", ".join(f"{m['node']} {m['evalsha_calls']:,}"
                        + (f" ({m['usec_per_call']} µs/call)" if m.get("usec_per_call") else "")
                        for m in ms))
    if rm.get("evalsha_usec_per_admission") is not None:
        line += (f"\n redis CPU     {rm['evalsha_usec_per_admission']} µs of EVALSHA per admitted "
                 f"purchase (every script of the run over the 202s; budget of deduct.lua alone "
                 f"≤ 12, DESIGN.md §4)")
    return line


if __name__ == "__main__":
    # report.py-free use by run.sh: figures.py rec-summary RECONCILER_JSON EXIT_CODE
    if len(sys.argv) == 4 and sys.argv[1] == "rec-summary":
        import json
        try:
            with open(sys.argv[2]) as fh:
                d = json.load(fh)
        except (OSError, ValueError):
            d = None
        print(rec_summary(d, int(sys.argv[3])))
        sys.exit(0)
    sys.exit("usage: figures.py rec-summary RECONCILER_JSON EXIT_CODE")
