#!/usr/bin/env python3
"""queue_report.py CROWD_JSON STOCK [QUEUE_TXT]: the figures of `scripts/demo.sh --queue`
(DESIGN.md 18 "Demo") from queue_crowd.py's output: time from begin to sold out, the
purchases, when the members beyond the stock learned sold out (p50/p99 after the last unit
was taken), polls per second, and the fairness of the pre-queue: Spearman's rho between
join time and position and between userId and position (|rho| <= 0.05 with 20,000
members). QUEUE_TXT: `seckill-admin voucher queue ID` (admissions issued/used/expired),
printed as it is. Prints the report and writes it as JSON next to CROWD_JSON
(queue-report.json). Exit 0 iff the fairness and sold-out bounds of §18 hold."""
import json
import os
import shutil
import subprocess
import sys


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1
        i = j + 1
    return r


def spearman(xs, ys):
    if len(xs) < 3:
        return None
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / (vx * vy) ** 0.5 if vx and vy else None


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def plot(ms, begin, out_dir):
    """queue-timeline.dat (per 0.5 s from the first join: waiting, admitted so far, told
    sold out so far) and queue.png through queue.gp, when gnuplot is installed."""
    joins = [m["join_ms"] for m in ms if "join_ms" in m]
    if not joins:
        return
    end = max([t for m in ms for t in (m.get("admitted_ms"), m.get("sold_out_ms"), m.get("join_ms")) if t] + [begin])
    dat = os.path.join(out_dir, "queue-timeline.dat")
    with open(dat, "w") as f:
        t = min(joins)
        while t <= end + 1000:
            joined = sum(1 for m in ms if m.get("join_ms", 1e18) <= t)
            admitted = sum(1 for m in ms if m.get("admitted_ms", 1e18) <= t)
            told = sum(1 for m in ms if m.get("sold_out_ms", 1e18) <= t and "admitted_ms" not in m)
            f.write(f"{(t - begin) / 1000.0:.1f} {joined - admitted - told} {admitted} {told}\n")
            t += 500
    gp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queue.gp")
    png = os.path.join(out_dir, "queue.png")
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", "-e", f"datafile='{dat}'", "-e", f"outfile='{png}'",
                        "-e", f"title_text='waiting room: {len(ms)} members'", gp], check=False)
        print(f"plot: {png}")


def main():
    crowd = json.load(open(sys.argv[1]))
    stock = int(sys.argv[2])
    queue_txt = open(sys.argv[3]).read() if len(sys.argv) > 3 else ""
    ms = crowd["members"]
    begin = crowd["beginMs"]
    bought = sorted(m["bought_ms"] for m in ms if "bought_ms" in m)
    last = bought[-1] if len(bought) >= stock else None
    told = [m["sold_out_ms"] - last for m in ms if last and "sold_out_ms" in m and "bought_ms" not in m]
    pre = [m for m in ms if m.get("prequeue") and "position" in m]
    span_s = ((crowd["lastPollMs"] or 0) - (crowd["firstPollMs"] or 0)) / 1000.0
    rep = {
        "members": len(ms),
        "joined": sum(1 for m in ms if "join_ms" in m),
        "stock": stock,
        "bought": len(bought),
        "paid": sum(1 for m in ms if "paid_ms" in m),
        "beginToSoldOutS": round((last - begin) / 1000.0, 3) if last else None,
        "soldOutToldAfterLastUnitMs": {"n": len(told), "p50": pct(told, 50), "p99": pct(told, 99)},
        "closedTold": sum(1 for m in ms if "closed_ms" in m),
        "polls": crowd["polls"],
        "pollsPerS": round(crowd["polls"] / span_s, 1) if span_s > 0 else None,
        "prequeueMembers": len(pre),
        "rhoJoinTimePosition": spearman([m["join_ms"] for m in pre], [m["position"] for m in pre]),
        "rhoUserIdPosition": spearman([m["user"] for m in pre], [m["position"] for m in pre]),
        "buyAnswers": {},
    }
    for m in ms:
        if "buy_status" in m:
            k = f'{m["buy_status"]}/{m.get("buy_code")}'
            rep["buyAnswers"][k] = rep["buyAnswers"].get(k, 0) + 1
    print(json.dumps(rep, indent=2))
    if queue_txt:
        print("seckill-admin voucher queue:\n" + queue_txt.strip())
    with open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "queue-report.json"), "w") as f:
        json.dump(dict(rep, queue=queue_txt), f, indent=2)
    plot(ms, begin, os.path.dirname(os.path.abspath(sys.argv[1])))
    ok = True
    fair = 0.05 if len(pre) >= 20000 else 3.0 / max(1, len(pre) - 1) ** 0.5  # about 3 sigma
    for k in ("rhoJoinTimePosition", "rhoUserIdPosition"):
        if rep[k] is None or abs(rep[k]) > fair:
            print(f"FAIL: |{k}| = {rep[k]} > {fair:.3f}")
            ok = False
    if rep["bought"] != stock:
        print(f"FAIL: {rep['bought']} bought, stock {stock}")
        ok = False
    p99 = rep["soldOutToldAfterLastUnitMs"]["p99"]
    if p99 is None or p99 > 40000:
        print(f"FAIL: sold-out told p99 {p99} ms > 40 s")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
