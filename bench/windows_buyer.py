#!/usr/bin/env python3
"""bench/windows_buyer.py: the buyers and the arithmetic of bench/windows.sh (DESIGN.md
4b, 12, 16).

  windows_buyer.py buy ADDR VOUCHER FIRST_USER OUT STOPFILE [PAUSE_MS [RESULTS]]
      One purchase after another (a fresh user id each, X-User-Id, one keep-alive
      connection, PAUSE_MS apart, default 20) until STOPFILE exists; every answer as a
      line "send_ms recv_ms status cause user" in OUT (epoch ms; status 000 = no answer
      within 10 s or the connection failed; cause = the body's "cause", else its
      "code", else -). With RESULTS, also "user status body" there (the body on one
      line: the fault harness's results.txt format, tests/support/ft.sh).
  windows_buyer.py split OUT NBUCKETS BUCKETS IN_FILE REST_FILE
      The lines of OUT whose user's home bucket (CRC-16/XMODEM of the decimal id mod
      NBUCKETS, DESIGN.md 4) is one of BUCKETS (comma-separated) go to IN_FILE, the
      others to REST_FILE: the buyers of a dead master's buckets apart from the rest.
  windows_buyer.py window OUT FROM_MS HORIZON_MS
      The 503 window seen by this buyer after FROM_MS: among the purchases sent in
      [FROM_MS, FROM_MS + HORIZON_MS], a bad answer is any but 200/202/409 (503, 000,
      ...): a 409 (sold out, already bought) is a true decision, not unavailability, and a
      bucket that sells out inside the horizon must not read as a window that never closed.
      Prints "window_ms=W bad=N lease=L other=O non202=X max_latency_ms=M ok_after_ms=A":
      W = from the sending of the first bad one to the answer of the first good one sent
      after the last bad one (0 with no bad answer; HORIZON_MS when none came back),
      L = bad answers whose cause is "lease", O = the other bad ones, X = the answers
      other than 202 (a 200 of the DB-only path counts here, not as bad), M = the slowest
      answer in the range, A = from FROM_MS to that first good answer (-1: none).
  windows_buyer.py first OUT FROM_MS STATUS
      Epoch ms of the first answer STATUS to a purchase sent at or after FROM_MS, or
      nothing.

What it deliberately does not do: judge a figure (bench/windows.sh prints the budgets).
"""
import binascii
import http.client
import json
import os
import sys
import time


def now_ms():
    return int(time.time() * 1000)


def buy(addr, voucher, user, out, stop, pause_ms, results=None):
    host, port = addr.rsplit(":", 1)
    conn = None
    res = open(results, "a", buffering=1) if results else None
    with open(out, "a", buffering=1) as f:
        while not os.path.exists(stop):
            t0 = now_ms()
            status, cause, text = "000", "-", ""
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(host, int(port), timeout=10)
                conn.request("POST", f"/api/v1/vouchers/{voucher}/seckill", body=b"",
                             headers={"X-User-Id": str(user), "Content-Length": "0"})
                resp = conn.getresponse()
                body = resp.read()
                status = str(resp.status)
                text = body.decode(errors="replace").replace("\n", "")
                try:
                    doc = json.loads(body.decode() or "{}")
                    cause = str(doc.get("cause") or doc.get("code") or "-")
                except ValueError:
                    pass
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
            f.write(f"{t0} {now_ms()} {status} {cause.replace(' ', '_')} {user}\n")
            if res:
                res.write(f"{user} {status} {text}\n")
            user += 1
            time.sleep(pause_ms / 1000.0)


def answers(path):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[0].isdigit() and p[1].isdigit():
                rows.append((int(p[0]), int(p[1]), p[2], p[3] if len(p) > 3 else "-"))
    rows.sort()
    return rows


def window(path, t_from, horizon):
    rows = [r for r in answers(path) if t_from <= r[0] <= t_from + horizon]
    good = ("200", "202", "409")
    bad = [r for r in rows if r[2] not in good]
    lease = sum(1 for r in bad if r[3] == "lease")
    non202 = sum(1 for r in rows if r[2] != "202")
    lat = max((r[1] - r[0] for r in rows), default=0)
    if not bad:
        first_ok = next((r for r in rows if r[2] in good), None)
        ok_after = first_ok[1] - t_from if first_ok else -1
        w = 0
    else:
        last_bad = bad[-1][0]
        rec = next((r for r in rows if r[0] > last_bad and r[2] in good), None)
        w = rec[1] - bad[0][0] if rec else horizon
        ok_after = rec[1] - t_from if rec else -1
    print(f"window_ms={w} bad={len(bad)} lease={lease} other={len(bad) - lease} non202={non202} "
          f"max_latency_ms={lat} ok_after_ms={ok_after}")


def split(path, nbuckets, buckets, in_path, rest_path):
    want = {int(b) for b in buckets.split(",") if b}
    with open(path) as f, open(in_path, "w") as fin, open(rest_path, "w") as frest:
        for line in f:
            p = line.split()
            if len(p) < 5 or not p[4].isdigit():
                continue
            home = binascii.crc_hqx(p[4].encode(), 0) % nbuckets
            (fin if home in want else frest).write(line)


def first(path, t_from, status):
    for r in answers(path):
        if r[0] >= t_from and r[2] == status:
            print(r[1])
            return


def main():
    a = sys.argv[1:]
    if len(a) >= 6 and a[0] == "buy":
        buy(a[1], a[2], int(a[3]), a[4], a[5], int(a[6]) if len(a) > 6 else 20,
            a[7] if len(a) > 7 else None)
    elif len(a) == 6 and a[0] == "split":
        split(a[1], int(a[2]), a[3], a[4], a[5])
    elif len(a) == 4 and a[0] == "window":
        window(a[1], int(a[2]), int(a[3]))
    elif len(a) == 4 and a[0] == "first":
        first(a[1], int(a[2]), a[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
