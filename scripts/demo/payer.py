#!/usr/bin/env python3
"""scripts/demo/payer.py: the buyers' side of the order lifecycle in the demo
(DESIGN.md 13): who pays (through a small payment "provider" that signs its callbacks,
DESIGN.md 15), and the late buyers who take the units released by the ones who never pay.

  payer.py pay --db DB --front URL --keys FILE --unpaid-pct P --grace-s G --stop FILE
               --out FILE
      Until FILE exists: every UNPAID order in DB is paid by the provider's signed
      callback (POST /api/v1/payments/callback, X-Payment-Signature: t=..,v1=hex
      HMAC-SHA256 of "t.body" with the first secret of --keys; txn id "demo-<orderId>";
      the order's own amount and currency) unless its buyer is a non-payer: userId mod
      100 < P (about P% of the winners, decided by the id so the report can tell them
      apart). One late payment too (DESIGN.md 13): the provider pays a non-payer's
      order with a callback signed just after its pay_deadline + G seconds (the front's
      SECKILL_PAY_GRACE_S; txn id "demo-late-<orderId>", its own amount and currency),
      which the front must answer 409 refund_due "late" (closing the order on the spot);
      should the closer close that order first (the answer is then "closed"), up to
      LATE_TRIES orders are tried. Writes the counts and the late payment to --out (JSON).
  payer.py resale --db DB --front URL --unpaid-pct P --vouchers V1,V2 --tsv FILE
                  [--accepted GLOB] --timeout-s S
      After the sale: new buyers (payers, fresh ids) buy what is free until no unit of a
      sale voucher is left in the DB, no order of theirs is UNPAID (a non-payer's order
      closes at its deadline and gives its unit back; a payer's is being paid), and every
      202 logged so far (the files of GLOB, the sale's accepted-*.tsv) has its outcome: one
      still in Kafka may yet become an order that closes unpaid. Every 202 (and 200 of
      the DB-only path) is appended to --tsv in the 202 log's format (orderId, traceId,
      voucherId, userId, accept_ms, attempt) so the report checks them like the sale's.
      Prints one summary line (JSON): what was tried and accepted, why it stopped
      ("sold_and_settled" or "timeout") and what was left then.

Ids stay strings; the mysql client is used as in report.py (no Python drivers).
"""
import argparse
import concurrent.futures
import glob
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.request

from report import ID_RE, buyer_headers, http_json, sql


def post(url, user):
    return http_json(urllib.request.Request(url, data=b"", method="POST",
                                            headers=buyer_headers(user)), timeout=10)


def read_secret(path):
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            line = line.rstrip(b"\r \t")
            if line and not line.startswith(b"#"):
                return line
    sys.exit("payer: no secret in the keys file")


LATE_TRIES = 5


def callback(front, secret, order, amount, currency, txn=None):
    """The provider's signed callback for one order; returns (HTTP status, JSON body)."""
    body = json.dumps({"orderId": order, "providerTxnId": txn or f"demo-{order}",
                       "amount": amount, "currency": currency}, separators=(",", ":")).encode()
    t = str(int(time.time()))
    sig = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    req = urllib.request.Request(f"{front}/api/v1/payments/callback", data=body, method="POST",
                                 headers={"Content-Type": "application/json",
                                          "X-Payment-Signature": f"t={t},v1={sig}"})
    return http_json(req, timeout=10)


def late_candidate(db, grace_s, unpaid_pct, tried):
    """(order, amount, currency, seconds until deadline + grace by the DB's clock) of the
    UNPAID non-payer order whose deadline + grace comes first but is at least 200 ms
    away, not tried yet; or None."""
    try:
        rows = sql(f"SELECT id, user_id, amount_minor, currency, TIMESTAMPDIFF(MICROSECOND, "
                   f"UTC_TIMESTAMP(3), pay_deadline + INTERVAL {int(grace_s)} SECOND) "
                   f"FROM `{db}`.tb_voucher_order WHERE status = 1 AND pay_deadline IS NOT NULL "
                   f"ORDER BY pay_deadline LIMIT 200")
    except RuntimeError:
        return None
    for order, user, amount, currency, us_left in rows:
        if order in tried or not ID_RE.match(order) or not ID_RE.match(user) or pays(user, unpaid_pct):
            continue
        # An order already past its deadline + grace may be closed by the closer before the
        # callback comes (then the answer is 409 `closed`, not `late`): only orders whose
        # deadline + grace is still at least 200 ms away.
        if int(us_left) < 200000:
            continue
        return order, amount, currency, int(us_left) / 1e6
    return None


def late_payment(front, secret, order, amount, currency, left_s):
    """Waits until just past the order's deadline + grace, then the provider signs and
    sends its callback: the answer, and how late it was signed (ms)."""
    time.sleep(max(0.0, left_s) + 0.005)
    late_ms = round(max(0.0, -left_s) * 1000 + 5)
    status, body = callback(front, secret, order, amount, currency, f"demo-late-{order}")
    return {"order": order, "txn": f"demo-late-{order}", "status": status,
            "reason": body.get("reason"), "refund": body.get("refund"), "code": body.get("code"),
            "signed_after_deadline_ms": late_ms}


def pays(user, unpaid_pct):
    return int(user[-2:]) % 100 >= unpaid_pct


def db_name(name):
    if not name.replace("_", "").isalnum():
        sys.exit("payer: bad database name")
    return name


def cmd_pay(a):
    db = db_name(a.db)
    secret = read_secret(a.keys)
    done, counts = set(), {"paid": 0, "late_409": 0, "errors": 0, "never_paid": 0}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8)
    late_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    late_tries, late_future = [], None
    skipped = set()
    while True:
        stop = os.path.exists(a.stop)
        # The late payment: one at a time, until one is answered "late".
        if late_future is not None and late_future.done():
            late_tries.append(late_future.result())
            late_future = None
        if (late_future is None and not stop and len(late_tries) < LATE_TRIES
                and not any(t["reason"] == "late" for t in late_tries)):
            cand = late_candidate(db, a.grace_s, a.unpaid_pct, {t["order"] for t in late_tries})
            if cand:
                late_future = late_pool.submit(late_payment, a.front, secret, *cand)
        try:
            rows = sql(f"SELECT id, user_id, amount_minor, currency FROM `{db}`.tb_voucher_order"
                       " WHERE status = 1")
        except RuntimeError:
            rows = []
        todo = []
        for order, user, amount, currency in rows:
            if order in done or not ID_RE.match(order) or not ID_RE.match(user):
                continue
            if not pays(user, a.unpaid_pct):
                if order not in skipped:
                    skipped.add(order)
                    counts["never_paid"] += 1
                continue
            todo.append((order, amount, currency))
        # Payments in parallel, as a payment provider's callbacks would come.
        results = pool.map(lambda oc: callback(a.front, secret, *oc)[0], todo)
        for (order, _, _), status in zip(todo, results):
            if status == 200:
                counts["paid"] += 1
                done.add(order)
            elif status == 409:
                counts["late_409"] += 1
                done.add(order)
            else:
                counts["errors"] += 1
        if stop:
            break
        time.sleep(0.2)
    pool.shutdown()
    if late_future is not None:
        late_tries.append(late_future.result())
    late_pool.shutdown()
    counts["late_payment"] = next((t for t in late_tries if t["reason"] == "late"),
                                  late_tries[-1] if late_tries else None)
    counts["late_tries"] = len(late_tries)
    counts["grace_s"] = a.grace_s
    with open(a.out, "w") as f:
        json.dump(counts, f)


def undecided(db, pattern):
    """How many traceIds logged in the files of pattern (the 202 log's format) have no
    outcome row yet."""
    traces = set()
    for path in glob.glob(pattern) if pattern else []:
        with open(path) as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) >= 2 and ID_RE.match(cols[1]):
                    traces.add(cols[1])
    known, ids = 0, sorted(traces)
    for i in range(0, len(ids), 500):
        known += int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_seckill_outcome "
                         f"WHERE trace_id IN ({','.join(ids[i:i + 500])})")[0][0])
    return len(ids) - known


def cmd_resale(a):
    db = db_name(a.db)
    vouchers = [v for v in a.vouchers.split(",") if ID_RE.match(v)]
    vlist = ",".join(vouchers)
    t0 = time.time()
    seq = 0
    tried = accepted = 0
    stopped, left = "timeout", {}
    with open(a.tsv, "a") as out:
        while time.time() - t0 < a.timeout_s:
            try:
                free = sql(f"SELECT voucher_id, SUM(stock) FROM `{db}`.tb_seckill_stock "
                           f"WHERE voucher_id IN ({vlist}) GROUP BY voucher_id HAVING SUM(stock) > 0")
                unpaid = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order "
                                 f"WHERE voucher_id IN ({vlist}) AND status = 1")[0][0])
                pending = undecided(db, a.accepted) if not free and not unpaid else None
            except RuntimeError as e:      # a database node gone for a moment: ask again
                print(f"payer: resale: {e}", file=sys.stderr)
                time.sleep(1)
                continue
            left = {"units_free": sum(int(n) for _, n in free), "orders_unpaid": unpaid,
                    "accepted_undecided": pending}
            if not free and not unpaid and pending == 0:
                stopped = "sold_and_settled"
                break
            for v, stock in free:
                for _ in range(int(stock)):
                    seq += 1
                    # 19-digit ids ending in 99: payers (see pays()), distinct from the crowd.
                    user = f"29{int(t0) % 10**9:09d}{seq:06d}99"
                    tried += 1
                    status, body = post(f"{a.front}/api/v1/vouchers/{v}/seckill", user)
                    # 202, or 200 CREATED while the voucher is on the DB-only path (DESIGN.md 12)
                    if status in (200, 202) and ID_RE.match(str(body.get("orderId", ""))) and \
                            ID_RE.match(str(body.get("traceId", ""))):
                        accepted += 1
                        out.write(f"{body['orderId']}\t{body['traceId']}\t{v}\t{user}\t"
                                  f"{int(time.time() * 1000)}\t1\n")
                        out.flush()
            time.sleep(1)
    print(json.dumps({"resale_tried": tried, "resale_accepted": accepted,
                      "seconds": round(time.time() - t0, 1), "stopped": stopped, "left": left}))


def main():
    p = argparse.ArgumentParser(prog="payer.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("pay")
    rp = sub.add_parser("resale")
    for q in (pp, rp):
        q.add_argument("--db", required=True)
        q.add_argument("--front", required=True)
        q.add_argument("--unpaid-pct", type=int, default=20)
    pp.add_argument("--keys", required=True, help="the payment keys file (SECKILL_PAYMENT_KEYS_FILE)")
    pp.add_argument("--grace-s", type=int, default=0, help="the front's SECKILL_PAY_GRACE_S")
    pp.add_argument("--stop", required=True)
    pp.add_argument("--out", required=True)
    rp.add_argument("--vouchers", required=True)
    rp.add_argument("--tsv", required=True)
    rp.add_argument("--accepted", default="", help="glob of the sale's 202 logs (accepted-*.tsv)")
    rp.add_argument("--timeout-s", type=int, default=60)
    a = p.parse_args()
    cmd_pay(a) if a.cmd == "pay" else cmd_resale(a)


if __name__ == "__main__":
    main()
