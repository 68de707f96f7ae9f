#!/usr/bin/env python3
"""scripts/demo/report.py: the demo's checks and report (DESIGN.md 9).

  report.py load-sql ACCEPTED_TSV CLIENT_DB   SQL that (re)creates CLIENT_DB.accepted
                                              from the wrk 202 log (stdout)
  report.py report --run DIR --out DIR ...    check, print, write report.json,
                                              latency.png and timeline.png

The checks use only the client's record (every 202 wrk saw), the database, Redis and
the exit codes/output of seckill-reconciler and seckill-admin verify. The database is
read with the mysql client and Redis with redis-cli (no Python drivers needed); the
connection comes from DEMO_MYSQL_HOST/PORT/USER (+ MYSQL_PWD) and DEMO_REDIS_HOST/
PORT/DB (+ REDISCLI_AUTH), set by run.sh.

Ids stay strings (DESIGN.md 2): they are compared as text and bound in SQL only after
a canonical-decimal check. Exit 0 iff every invariant holds, 1 otherwise.
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import buckets
import figures
import lifecycle
import dbkill
import outage

ID_RE = re.compile(r"^[1-9][0-9]{0,18}$")
TSV_COLS = ("order_id", "trace_id", "voucher_id", "user_id", "accept_ms", "attempt")


def is_id(s):
    return bool(ID_RE.match(s or "")) and int(s) <= 2**63 - 1


# --------------------------------------------------------------------------- load-sql
def read_accepted(path):
    rows, bad = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(TSV_COLS) or not all(is_id(p) for p in parts[:4]) \
                    or not parts[4].isdigit():
                bad.append((n, line.rstrip("\n")))
                continue
            rows.append(dict(zip(TSV_COLS, parts)))
    return rows, bad


def cmd_load_sql(tsv, client_db):
    if not re.match(r"^[A-Za-z0-9_]{1,64}$", client_db):
        sys.exit("bad database name")
    rows, _ = read_accepted(tsv)
    out = sys.stdout
    out.write(f"DROP DATABASE IF EXISTS `{client_db}`;\n")
    out.write(f"CREATE DATABASE `{client_db}` CHARACTER SET utf8mb4;\n")
    out.write(f"CREATE TABLE `{client_db}`.accepted (\n"
              "  seq BIGINT NOT NULL PRIMARY KEY,\n"
              "  order_id BIGINT NOT NULL, trace_id BIGINT NOT NULL,\n"
              "  voucher_id BIGINT NOT NULL, user_id BIGINT NOT NULL,\n"
              "  accept_ms BIGINT NOT NULL, attempt INT NOT NULL,\n"
              "  KEY (trace_id), KEY (order_id)) ENGINE=InnoDB;\n")
    for i in range(0, len(rows), 500):
        chunk = rows[i:i + 500]
        vals = ",".join(f"({i + j + 1},{r['order_id']},{r['trace_id']},{r['voucher_id']},"
                        f"{r['user_id']},{r['accept_ms']},{int(r['attempt'])})"
                        for j, r in enumerate(chunk))
        out.write(f"INSERT INTO `{client_db}`.accepted VALUES {vals};\n")


# --------------------------------------------------------------------------- helpers
def sql(query):
    """Rows of a query (tab-separated mysql -N -B output), session in UTC like the
    binaries (db.c sets time_zone '+00:00': DATETIME(3) columns hold UTC)."""
    env = dict(os.environ)
    first = (env.get("DEMO_MYSQL_HOST", "127.0.0.1"), env.get("DEMO_MYSQL_PORT", "3306"))
    # A multi-host URL (--db galera): the other nodes when the first does not answer
    # (error 2002/2003/2013: no connection; an SQL error is not retried elsewhere).
    nodes = [first] + [tuple(hp.rsplit(":", 1)) for hp in env.get("DEMO_MYSQL_HOSTS", "").split(",")
                       if ":" in hp and tuple(hp.rsplit(":", 1)) != first]
    for host, port in nodes:
        cmd = [env.get("DEMO_MYSQL_CLI", "mysql"), "-h", host, "-P", port,
               "-u", env.get("DEMO_MYSQL_USER", "root"), "--protocol=TCP", "--connect-timeout=3",
               "-N", "-B", "-e", "SET time_zone = '+00:00'; " + query]
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if res.returncode == 0:
            return [line.split("\t") for line in res.stdout.splitlines() if line != ""]
        if not re.search(r"ERROR 20(02|03|13)", res.stderr):
            break
    raise RuntimeError(f"mysql: {res.stderr.strip()} (query: {query[:200]})")


def rcli(*args):
    env = dict(os.environ)
    cmd = ["redis-cli", "-h", env.get("DEMO_REDIS_HOST", "127.0.0.1"),
           "-p", env.get("DEMO_REDIS_PORT", "6379"), "-n", env.get("DEMO_REDIS_DB", "0")]
    if env.get("DEMO_REDIS_TOPO") == "cluster":
        cmd.insert(1, "-c")  # follow MOVED to the key's master (DESIGN.md 4b)
    res = subprocess.run(cmd + list(args), capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"redis-cli {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout.splitlines()


def pct(sorted_vals, p):
    """Nearest-rank percentile of an already sorted list (None when empty)."""
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, int(-(-p * len(sorted_vals) // 100)) - 1))
    return sorted_vals[k]


def read_json(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        # a tool that printed log lines around its JSON: take the last JSON object line
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except ValueError:
                    pass
        return {"unparsed": text[-2000:]}


def read_int(path, default=None):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return default


def read_phases(path):
    """run.sh's phase marks: "name seconds-since-start" per line."""
    return figures.read_marks(path)


def fmt_ms(v):
    return "n/a" if v is None else f"{v:,.1f} ms" if isinstance(v, float) else f"{v:,} ms"


def http_json(req, timeout=5):
    """(status, JSON body) of one request; (None, {"error": ...}) without an answer."""
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read().decode() or "{}")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read().decode() or "{}")
        except ValueError:
            return e.code, {}
    except (OSError, ValueError) as e:
        return None, {"error": str(e)}


def _b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def buyer_headers(user):
    """The header that says who the buyer @p user (a decimal id string) is (DESIGN.md 15):
    with DEMO_JWKS (run.sh --auth jwt, auth.sh) an HS256 token signed with the key set's
    secret "hs1" for the demo's issuer and audience (DEMO_JWT_ISS, DEMO_JWT_AUD), else
    X-User-Id (--auth trusted-header)."""
    path = os.environ.get("DEMO_JWKS")
    if not path:
        return {"X-User-Id": user}
    with open(path) as f:
        key = next(k for k in json.load(f)["keys"] if k.get("kid") == "hs1")
    secret = base64.urlsafe_b64decode(key["k"] + "=" * (-len(key["k"]) % 4))
    now = int(time.time())
    head = _b64url(b'{"alg":"HS256","typ":"JWT","kid":"hs1"}')
    body = _b64url(json.dumps({"sub": user, "iat": now, "exp": now + 3600,
                               "iss": os.environ.get("DEMO_JWT_ISS", ""),
                               "aud": os.environ.get("DEMO_JWT_AUD", "")},
                              separators=(",", ":")).encode())
    sig = _b64url(hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return {"Authorization": f"Bearer {head}.{body}.{sig}"}


def orders_me(front, voucher, user):
    return http_json(urllib.request.Request(f"{front}/api/v1/vouchers/{voucher}/orders/me",
                                            headers=buyer_headers(user)))


# --------------------------------------------------------------------------- report
def cmd_report(a):
    run, out = a.run, a.out
    db, cdb = a.db, a.client_db
    vouchers = a.vouchers.split(",")
    stocks = [int(x) for x in a.stocks.split(",")]
    wrk = read_json(os.path.join(run, "sale", "wrk.json")) or {}
    sale = wrk.get("sale", {})
    accepted, bad_lines = read_accepted(os.path.join(run, "accepted.tsv"))
    checks = []          # (name, ok: True/False/None for n/a, detail)

    def check(name, ok, detail):
        checks.append({"name": name, "result": "PASS" if ok is True else
                       "FAIL" if ok is False else "N/A", "detail": detail})

    # ---- per accepted purchase: outcome, order row, RESTORE row (invariant 4)
    rows = sql(f"""
        SELECT a.trace_id, a.order_id, a.voucher_id, a.user_id, a.accept_ms,
               COALESCE(o.outcome, 0), COALESCE(o.reason, ''),
               COALESCE(o.order_id, 0), COALESCE(o.user_id, 0), COALESCE(o.voucher_id, 0),
               COALESCE(CAST(ROUND(UNIX_TIMESTAMP(o.created_at) * 1000) AS SIGNED), 0),
               (SELECT COUNT(*) FROM `{db}`.tb_voucher_order vo
                 WHERE vo.id = a.order_id AND vo.trace_id = a.trace_id
                   AND vo.user_id = a.user_id AND vo.voucher_id = a.voucher_id),
               (SELECT COUNT(*) FROM `{db}`.tb_voucher_order vo WHERE vo.trace_id = a.trace_id),
               (SELECT COUNT(*) FROM `{db}`.tb_voucher_reconcile_log l
                 WHERE l.trace_id = a.trace_id AND l.log_type = 1
                   AND l.business_type NOT IN (4, 5))
        FROM `{cdb}`.accepted a
        LEFT JOIN `{db}`.tb_seckill_outcome o ON o.trace_id = a.trace_id
        ORDER BY a.seq""")
    i4 = {"accepted": len(rows), "created_ok": 0, "failed_ok": 0, "vanished": 0,
          "both": 0, "id_mismatch": 0, "created_without_order": 0,
          "failed_without_restore": 0, "orders_me_wrong": 0, "malformed_202_lines": len(bad_lines)}
    i4_examples = []
    lags, failed_rows = [], []
    seen_traces = {}
    for (trace, order, voucher, user, acc_ms, outcome, reason, o_order, o_user, o_voucher,
         created_ms, order_ok, order_by_trace, restores) in rows:
        outcome, order_ok, order_by_trace, restores = int(outcome), int(order_ok), \
            int(order_by_trace), int(restores)
        seen_traces[trace] = seen_traces.get(trace, 0) + 1
        problem = None
        if outcome == 0:
            i4["vanished"] += 1
            problem = "no outcome row"
        elif (o_order, o_user, o_voucher) != (order, user, voucher):
            i4["id_mismatch"] += 1
            problem = f"outcome ids differ: order {o_order} user {o_user} voucher {o_voucher}"
        elif outcome == 1:
            if restores > 0:
                i4["both"] += 1
                problem = "CREATED and a RESTORE log row"
            elif order_ok != 1:
                i4["created_without_order"] += 1
                problem = "CREATED without its order row"
            else:
                i4["created_ok"] += 1
        elif outcome == 2:
            if order_by_trace > 0:
                i4["both"] += 1
                problem = "FAILED and an order row"
            elif restores < 1:
                i4["failed_without_restore"] += 1
                problem = "FAILED without a RESTORE log row"
            else:
                i4["failed_ok"] += 1
                failed_rows.append((trace, order, voucher, user, reason))
        if outcome != 0 and int(created_ms) > 0 and voucher != a.warmup_voucher:
            lags.append(figures.accept_to_db_lag(trace, created_ms) + (voucher, outcome))
        if problem and len(i4_examples) < 20:
            i4_examples.append({"traceId": trace, "orderId": order, "voucherId": voucher,
                                "userId": user, "problem": problem})
    dup_traces = sum(1 for n in seen_traces.values() if n > 1)
    # orders/me for the FAILED ones (DESIGN.md 9.4): FAILED, or CREATED with the user's
    # other order when the reason is has_order. Bounded: at most 200 HTTP calls.
    me_checked = 0
    for trace, order, voucher, user, reason in failed_rows[:200]:
        status, body = orders_me(a.front, voucher, user)
        me_checked += 1
        state = body.get("state")
        ok = state == "FAILED" or (reason == "has_order" and state == "CREATED"
                                   and str(body.get("orderId")) != order)
        if not ok:
            i4["orders_me_wrong"] += 1
            if len(i4_examples) < 20:
                i4_examples.append({"traceId": trace, "orderId": order, "voucherId": voucher,
                                    "userId": user, "problem":
                                    f"orders/me answered {status} {json.dumps(body)[:200]}"})
    i4["orders_me_checked"] = me_checked
    i4["duplicate_trace_ids_in_log"] = dup_traces
    i4_ok = (len(rows) == len(accepted) and i4["vanished"] == 0 and i4["both"] == 0
             and i4["id_mismatch"] == 0 and i4["created_without_order"] == 0
             and i4["failed_without_restore"] == 0 and i4["orders_me_wrong"] == 0
             and not bad_lines and dup_traces == 0)
    check("I4 every 202 decided exactly once", i4_ok,
          f"{len(rows)} accepted{' (incl. the warm-up purchase)' if a.warmup_voucher else ''}: "
          f"{i4['created_ok']} CREATED with their order row, "
          f"{i4['failed_ok']} FAILED with a RESTORE row (orders/me checked {me_checked}); "
          f"{i4['vanished']} vanished, {i4['both']} both, {i4['id_mismatch']} id mismatches, "
          f"{i4['created_without_order']} CREATED without order, "
          f"{i4['failed_without_restore']} FAILED without RESTORE, "
          f"{len(bad_lines)} unparseable 202 bodies, {dup_traces} repeated traceIds")

    # ---- per voucher: DB, Redis, verify
    per_voucher = []
    for idx, (v, init_given) in enumerate(zip(vouchers, stocks)):
        r = sql(f"SELECT v.init_stock, (SELECT COALESCE(SUM(s.stock), 0) FROM `{db}`.tb_seckill_stock s "
                f"WHERE s.voucher_id = v.voucher_id), v.status, v.buckets "
                f"FROM `{db}`.tb_seckill_voucher v WHERE v.voucher_id = {v}")
        init_db, stock_db, status_db, nbuckets = (int(x) for x in r[0]) if r else (None, None, None, 1)
        active = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order WHERE voucher_id = {v} AND status IN (1, 2)")[0][0])
        dup_users = int(sql(f"SELECT COUNT(*) FROM (SELECT user_id FROM `{db}`.tb_voucher_order "
                            f"WHERE voucher_id = {v} AND status IN (1, 2) GROUP BY user_id HAVING COUNT(*) > 1) d")[0][0])
        buyers_db = {x[0] for x in sql(f"SELECT DISTINCT user_id FROM `{db}`.tb_voucher_order "
                                       f"WHERE voucher_id = {v} AND status IN (1, 2)")}
        outc = sql(f"SELECT outcome, COALESCE(reason, ''), COUNT(*) FROM `{db}`.tb_seckill_outcome "
                   f"WHERE voucher_id = {v} GROUP BY outcome, reason")
        outcomes = {("CREATED" if o == "1" else "FAILED" if o == "2" else o) + (f"/{rs}" if rs else ""): int(n)
                    for o, rs, n in outc}
        redis_stock, users_hash = 0, set()
        for b in range(nbuckets):  # DESIGN.md 4: one set of keys per bucket
            key = f"{a.prefix}:{{v:{v}:{b}}}"
            rstock = rcli("GET", f"{key}:stock")
            if redis_stock is not None and rstock and re.match(r"^-?\d+$", rstock[0]):
                redis_stock += int(rstock[0])
            else:
                redis_stock = None
            users_hash |= set(x for x in rcli("HKEYS", f"{key}:users") if x and x != "_")
        vrc = read_int(os.path.join(run, f"verify-{v}.rc"))
        vjson = read_json(os.path.join(run, f"verify-{v}.json"))
        sjson = read_json(os.path.join(run, f"show-{v}.json"))
        planned = int(sale.get("planned", {}).get(v, 0))
        acc_v = sum(1 for x in accepted if x["voucher_id"] == v)
        per_voucher.append({
            "voucherId": v,
            "role": "warm-up" if v == a.warmup_voucher else "hot" if idx == 0 else "ordinary",
            "init_stock": init_db if init_db is not None else init_given, "db_stock": stock_db,
            "db_status": status_db, "redis_stock": redis_stock, "active_orders": active,
            "users_in_hash": len(users_hash), "users_with_active_order": len(buyers_db),
            "users_hash_equals_buyers": users_hash == buyers_db,
            "users_hash_minus_buyers": len(users_hash - buyers_db),
            "buyers_minus_users_hash": len(buyers_db - users_hash),
            "duplicate_users": dup_users, "outcomes": outcomes,
            "accepted_202": acc_v, "planned_buyers": planned,
            "verify_exit": vrc, "verify": vjson,
            "buckets": buckets.bucket_rows(vjson, sjson),  # DESIGN.md 14, buckets.py
        })

    def all_v(pred):
        return all(pred(p) for p in per_voucher)

    check("I1 DB: init_stock - stock = active orders", all_v(
        lambda p: p["db_stock"] is not None and p["init_stock"] - p["db_stock"] == p["active_orders"]),
        "; ".join(f"{p['voucherId']}: {p['init_stock']} - {p['db_stock']} vs {p['active_orders']}"
                  for p in per_voucher))
    check("I2 at most one active order per user and voucher", all_v(lambda p: p["duplicate_users"] == 0),
          "users with 2+ active orders: " + ", ".join(str(p["duplicate_users"]) for p in per_voucher))
    check("I3 Redis = DB after reconciler --repair (stock and users)", all_v(
        lambda p: p["redis_stock"] == p["db_stock"] and p["users_hash_equals_buyers"]),
        "; ".join(f"{p['voucherId']}: redis {p['redis_stock']} db {p['db_stock']}, users hash "
                  f"{p['users_in_hash']} vs buyers {p['users_with_active_order']}" for p in per_voucher))
    (b1_ok, b1), (b3_ok, b3) = buckets.bucket_checks(per_voucher)
    check("I1 per bucket: init_stock - stock = active orders (seckill-admin verify)", b1_ok, b1)
    check("I3 per bucket: Redis stock = DB stock (seckill-admin voucher show)", b3_ok, b3)
    check("I5 zero oversell: active orders <= init_stock", all_v(
        lambda p: p["active_orders"] <= p["init_stock"]),
        "; ".join(f"{p['voucherId']}: {p['active_orders']}/{p['init_stock']}" for p in per_voucher))
    applicable = [p for p in per_voucher if p["planned_buyers"] >= 2 * p["init_stock"]]
    if applicable:
        check("I5 zero undersell: active orders = init_stock", all(
            p["active_orders"] == p["init_stock"] for p in applicable),
            f"{len(applicable)}/{len(per_voucher)} vouchers had >= 2x stock in distinct buyers: "
            + "; ".join(f"{p['voucherId']}: {p['active_orders']}/{p['init_stock']}" for p in applicable))
    else:
        check("I5 zero undersell: active orders = init_stock", None,
              "no voucher had >= 2x its stock in distinct buyers")
    check("seckill-admin verify --quiesced (I1, I2, I3, I4, I6, active <= init) exits 0", all_v(lambda p: p["verify_exit"] == 0),
          "exit codes: " + ", ".join(f"{p['voucherId']}={p['verify_exit']}" for p in per_voucher))

    # ---- order lifecycle: pay, close, release, sold again (lifecycle.py)
    lc = lifecycle.lifecycle(sql, rcli, check, db, a.prefix, vouchers, a.warmup_voucher, run,
                             a.unpaid_pct)

    # ---- --kill-redis: the outage's timeline and DB-only purchases (outage.py)
    outage_fig = None
    if a.outage:
        outage_fig = outage.outage(sql, check, db, run, vouchers[0], vouchers,
                                   int(wrk.get("sale_first_ms", 0) or 0),
                                   int(sale.get("status", {}).get("200", 0)))

    # ---- --db galera --kill-db: the writer's death and the switch-over (dbkill.py)
    dbkill_fig = None
    if a.dbkill:
        dbkill_fig = dbkill.dbkill(check, run, int(wrk.get("sale_first_ms", 0) or 0))

    # ---- orders the client never saw accepted (lost answers): information only
    unseen = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order vo WHERE NOT EXISTS "
                     f"(SELECT 1 FROM `{cdb}`.accepted a WHERE a.trace_id = vo.trace_id)")[0][0])
    orders_total = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order WHERE status IN (1, 2)")[0][0])

    # ---- reconciler
    rec_rc = read_int(os.path.join(run, "reconciler.rc"))
    rec_json = read_json(os.path.join(run, "reconciler.json"))

    # ---- front figures (wrk)
    w = wrk.get("wrk", {})
    lat = w.get("latency_us", {})
    window_ms = max(1, int(wrk.get("sale_last_ms", 0)) - int(wrk.get("sale_first_ms", 0)))
    answers = int(sale.get("answers", 0))
    front = {
        "purchase_answers": answers,
        "wrk_requests": w.get("requests"),
        "sale_window_s": round(window_ms / 1000.0, 3),
        "req_per_s": round(answers * 1000.0 / window_ms, 1) if answers else 0.0,
        "wrk_req_per_s": round(w["requests"] * 1e6 / w["duration_us"], 1) if w.get("duration_us") else None,
        "latency_ms": {k: round(v / 1000.0, 2) for k, v in lat.items()},
        "wrk_errors": w.get("errors"),
        "connections": a.concurrency,
    }

    # ---- accept -> DB lag
    lag_vals = sorted(x[1] for x in lags)
    lag = {"n": len(lag_vals), "p50_ms": pct(lag_vals, 50), "p90_ms": pct(lag_vals, 90),
           "p99_ms": pct(lag_vals, 99), "max_ms": lag_vals[-1] if lag_vals else None,
           "min_ms": lag_vals[0] if lag_vals else None,
           "note": "outcome row created_at (MariaDB's clock, ms) minus the traceId's "
                   "snowflake timestamp (the front's clock when the request arrived); one host, "
                   "one clock in the demo (figures.accept_to_db_lag)"}

    codes = sale.get("code", {})
    statuses = sale.get("status", {})
    other_codes = {k: v for k, v in codes.items() if k not in ("0", "10005", "10006")}
    results = [c["result"] for c in checks]
    ok = "FAIL" not in results
    report = {
        "run": os.path.basename(run), "result": "PASS" if ok else "FAIL",
        "config": {"buyers": a.buyers, "hot_pct": a.hot_pct, "concurrency": a.concurrency,
                   "vouchers": vouchers, "stocks": stocks, "database": db,
                   "redis_prefix": a.prefix, "topic": a.topic},
        "requests": {
            "purchases_sent": sale.get("asks"), "purchase_answers": answers,
            "distinct_buyers": sale.get("buyers"), "second_asks": sale.get("second_asks"),
            "retries_after_503": sale.get("retries_503"),
            "retries_after_sold_out": sale.get("retries_soldout"),
            "lost_answers": sale.get("lost"),
            "by_status": statuses, "by_code": codes,
            "accepted_202": int(statuses.get("202", 0)),
            "created_200_db_only": int(statuses.get("200", 0)),
            "sold_out_10005": int(codes.get("10005", 0)),
            "duplicate_10006": int(codes.get("10006", 0)),
            "other_codes": other_codes,
        },
        "orders_in_db": orders_total,
        "lifecycle": lc,
        "outage": outage_fig,
        "database": {"topology": a.db_topo, "writer_kill": dbkill_fig},
        "orders_without_logged_202": unseen,
        "vouchers": per_voucher,
        "invariant4": dict(i4, examples=i4_examples),
        "invariants": checks,
        "reconciler": {"exit": rec_rc, "summary": figures.rec_summary(rec_json, rec_rc),
                       "output": rec_json},
        "front": front,
        "accept_to_db_lag": lag,
        "drained": a.drained == 1,
        "elapsed_s": a.elapsed_s,
        "phases_s": read_phases(os.path.join(run, "phases.txt")),
        "redis": figures.redis_masters(run, os.environ.get("DEMO_REDIS_TOPO", "standalone"),
                                       len(accepted)),
    }

    # ---- plot
    plot = None
    if lags and subprocess.run(["sh", "-c", "command -v gnuplot"], capture_output=True).returncode == 0:
        t0 = min(x[0] for x in lags)
        vidx = {v: i for i, v in enumerate(vouchers)}
        datf = os.path.join(run, "lag.dat")
        with open(datf, "w") as f:
            f.write("# admitted_s_since_first lag_ms voucher_index outcome(1 CREATED, 2 FAILED)\n")
            for acc, lg, v, oc in sorted(lags):
                f.write(f"{(acc - t0) / 1000.0:.3f} {lg} {vidx.get(v, 0)} {oc}\n")
        png = os.path.join(out, "latency.png")
        title = (f"accept-to-DB lag: p50 {lag['p50_ms']} ms, p99 {lag['p99_ms']} ms "
                 f"(n={lag['n']}); front p50 {front['latency_ms'].get('p50')} ms p99 "
                 f"{front['latency_ms'].get('p99')} ms at {front['req_per_s']} req/s")
        gp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "latency.gp")
        res = subprocess.run(["gnuplot", "-e", f"datafile='{datf}'; outfile='{png}'; "
                              f"title_text='{title}'", gp], capture_output=True, text=True)
        if res.returncode == 0 and os.path.exists(png):
            plot = png
            subprocess.run(["cp", png, os.path.join(run, "latency.png")])
        else:
            sys.stderr.write(f"demo: gnuplot failed: {res.stderr.strip()[-500:]}\n")
    report["plot"] = plot
    report["timeline_plot"] = timeline_plot(a, run, out, wrk, vouchers, front)

    for path in (os.path.join(out, "report.json"), os.path.join(run, "report.json")):
        with open(path, "w") as f:
            json.dump(report, f, indent=2, sort_keys=False)
            f.write("\n")

    print_report(report, out)
    return 0 if ok else 1


def timeline_plot(a, run, out, wrk, vouchers, front):
    """out/timeline.png: answers/s by code (sale.lua's 100 ms counters) and the orders of
    the sale's vouchers in the DB over time (their create_time). None without gnuplot."""
    t0 = int(wrk.get("sale_first_ms", 0) or 0)
    tl = (wrk.get("sale") or {}).get("tl") or {}
    if not t0 or not tl or subprocess.run(["sh", "-c", "command -v gnuplot"],
                                          capture_output=True).returncode != 0:
        return None
    ids = ",".join(v for v in vouchers if is_id(v) and v != a.warmup_voucher)
    if not ids:
        return None
    try:
        rows = sql(f"""SELECT FLOOR(UNIX_TIMESTAMP(create_time) * 1000 / {figures.TIMELINE_BIN_MS}),
                              COUNT(*) FROM `{a.db}`.tb_voucher_order
                        WHERE voucher_id IN ({ids}) GROUP BY 1""")
    except RuntimeError as e:
        sys.stderr.write(f"demo: no timeline plot: {e}\n")
        return None
    order_bins = {int(b): int(n) for b, n in rows}
    series, codes = figures.timeline(tl, order_bins, t0)
    if not series:
        return None
    png = os.path.join(out, "timeline.png")
    title = (f"answers/s by code and orders in the DB: {front['purchase_answers']:,} answers "
             f"at {front['req_per_s']:,} req/s over {front['connections']} connections")
    res = figures.plot_timeline(series, codes, os.path.join(run, "timeline.dat"), png, title)
    if res:
        subprocess.run(["cp", png, os.path.join(run, "timeline.png")])
    return res


def print_report(r, out):
    q = r["requests"]
    f = r["front"]
    lag = r["accept_to_db_lag"]
    line = "=" * 78
    print(line)
    print(f" seckill demo report — run {r['run']}")
    print(line)
    print(f" requests      {q['purchases_sent']:,} purchase requests from {q['distinct_buyers']:,} "
          f"distinct buyers ({q['second_asks']:,} second asks, {q['retries_after_503'] or 0:,} "
          f"retries after 503, {q['retries_after_sold_out'] or 0:,} after sold out)")
    print(f" answers       {q['purchase_answers']:,} in {f['sale_window_s']} s; no answer: "
          f"{(q['purchases_sent'] or 0) - q['purchase_answers']} (connection errors re-asked: "
          f"{q['lost_answers'] or 0})")
    print(f" accepted      {q['accepted_202']:,} (202)" + (
        f" + {q['created_200_db_only']:,} created on the DB-only path (200)" if r.get("outage") else ""))
    print(f" rejected      sold out (10005) {q['sold_out_10005']:,} · duplicate (10006) "
          f"{q['duplicate_10006']:,} · other: " +
          (", ".join(f"{k}={v}" for k, v in sorted(q["other_codes"].items())) or "none"))
    print(f" by status     " + ", ".join(f"{k}={v:,}" for k, v in sorted(q["by_status"].items())))
    print(f" orders in DB  {r['orders_in_db']:,} active ({r['orders_without_logged_202']} without a "
          f"202 the client saw)")
    lifecycle.print_lifecycle(r["lifecycle"])
    if r.get("outage"):
        print("\n".join(outage.outage_lines(r["outage"])))
    if (r.get("database") or {}).get("writer_kill"):
        print("\n".join(dbkill.dbkill_lines(r["database"]["writer_kill"])))
    lm = f["latency_ms"]
    print(f" front         {f['req_per_s']:,} req/s over {f['connections']} connections; "
          f"p50 {lm.get('p50')} ms, p99 {lm.get('p99')} ms, max {lm.get('max')} ms (wrk)")
    we = f.get("wrk_errors") or {}
    if any(we.get(k) for k in ("connect", "read", "write", "timeout")):
        print(f" wrk errors    connect {we.get('connect')}, read {we.get('read')}, write "
              f"{we.get('write')}, timeout {we.get('timeout')}")
    print(f" accept→DB     p50 {fmt_ms(lag['p50_ms'])}, p99 {fmt_ms(lag['p99_ms'])}, "
          f"max {fmt_ms(lag['max_ms'])} (n={lag['n']})")
    if r.get("redis"):
        print(figures.redis_masters_line(r["redis"]))
    print()
    print(f" {'voucher':<21}{'role':<9}{'init':>6}{'DB stock':>10}{'Redis':>7}{'orders':>8}"
          f"{'202s':>6}{'buyers':>8}{'hash':>6}  verify")
    for p in r["vouchers"]:
        print(f" {p['voucherId']:<21}{p['role']:<9}{p['init_stock']:>6}{str(p['db_stock']):>10}"
              f"{str(p['redis_stock']):>7}{p['active_orders']:>8}{p['accepted_202']:>6}"
              f"{p['planned_buyers']:>8}{p['users_in_hash']:>6}  exit {p['verify_exit']}")
    for p in r["vouchers"]:
        if len(p.get("buckets") or []) > 1:
            print()
            print("\n".join(buckets.bucket_lines(p)))
    print()
    rec = r["reconciler"]["exit"]
    print(f" {'WARN ' if rec not in (0, 1) else ''}{r['reconciler']['summary']}"
          + ("; see reconciler.json / reconciler.log in the run directory" if rec not in (0, 1) else ""))
    print(" invariants:")
    for c in r["invariants"]:
        print(f"   {c['result']:<5} {c['name']}")
        print(f"         {c['detail']}")
    for ex in r["invariant4"]["examples"][:5]:
        print(f"   example: {ex}")
    ph = r.get("phases_s", {})
    if ph:
        print(" timeline: " + ", ".join(f"{k} at {v} s" for k, v in ph.items()))
    print(line)
    print(f" RESULT: {r['result']}   report: {os.path.join(out, 'report.json')}"
          f"   plots: {r['plot'] or 'none'}, {r.get('timeline_plot') or 'none'}"
          f"   ({r['elapsed_s']} s in all)")
    print(line)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "load-sql":
        if len(sys.argv) != 4:
            sys.exit("usage: report.py load-sql ACCEPTED_TSV CLIENT_DB")
        cmd_load_sql(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(prog="report.py report")
    ap.add_argument("cmd", choices=["report"])
    ap.add_argument("--run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--client-db", required=True)
    ap.add_argument("--vouchers", required=True)
    ap.add_argument("--stocks", required=True)
    ap.add_argument("--buyers", type=int, required=True)
    ap.add_argument("--hot-pct", type=int, default=70)
    ap.add_argument("--concurrency", type=int, required=True)
    ap.add_argument("--front", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--topic", default="")
    ap.add_argument("--warmup-voucher", default="")
    ap.add_argument("--drained", type=int, default=1)
    ap.add_argument("--elapsed-s", type=int, default=0)
    ap.add_argument("--unpaid-pct", type=int, default=0)
    ap.add_argument("--outage", type=int, default=0)
    ap.add_argument("--dbkill", type=int, default=0)
    ap.add_argument("--db-topo", default="standalone")
    a = ap.parse_args()
    for name in ("db", "client_db"):
        if not re.match(r"^[A-Za-z0-9_]{1,64}$", getattr(a, name)):
            sys.exit(f"bad --{name}")
    if not all(is_id(v) for v in a.vouchers.split(",")):
        sys.exit("bad --vouchers")
    try:
        return cmd_report(a)
    except RuntimeError as e:
        sys.stderr.write(f"demo: report failed: {e}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
