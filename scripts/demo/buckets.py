"""scripts/demo/buckets.py: the per-bucket part of the demo report (DESIGN.md 9
invariants 1 and 3 per bucket, 14), from what seckill-admin already prints:

  verify VOUCHER --json       "bucketRows": bucket, initStock, dbStock, activeOrders
                              (read under one shared lock: invariant 1 per bucket)
  voucher show VOUCHER --json "buckets": bucket, dbInitStock, dbStock, redisStock
                              (a string, or null when the key is missing), redisUsers

  bucket_rows(verify, show)   one row per bucket, with its two checks
  bucket_checks(per_voucher)  (ok, detail) of "init - stock = active" and "Redis = DB",
                              every bucket of every voucher
  bucket_lines(p)             the report's table of one voucher's buckets

No stack needed (unit-tested by tests/unit/ops_demo_figures.sh); report.py reads the
JSON files run.sh wrote and calls these.
"""
import re

INT_RE = re.compile(r"^-?[0-9]{1,19}$")


def _int(v):
    """An int from a JSON number or a decimal string; None otherwise."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and INT_RE.match(v):
        return int(v)
    return None


def bucket_rows(verify, show):
    """Rows {bucket, init_stock, db_stock, active_orders, redis_stock, redis_users,
    sold_out, inv1, redis_eq_db} of one voucher, bucket order. init/DB stock/active come
    from verify (one consistent read); the Redis stock and its comparison with the DB
    from show, which read both sides in one call. A figure a tool did not print is None,
    and a check on it is False (never a silent PASS)."""
    vr, sr = {}, {}
    for b in (verify or {}).get("bucketRows") or []:
        if _int(b.get("bucket")) is not None:
            vr[_int(b["bucket"])] = b
    for b in (show or {}).get("buckets") or []:
        if _int(b.get("bucket")) is not None:
            sr[_int(b["bucket"])] = b
    rows = []
    for b in sorted(set(vr) | set(sr)):
        v, s = vr.get(b, {}), sr.get(b, {})
        init, stock, active = _int(v.get("initStock")), _int(v.get("dbStock")), _int(v.get("activeOrders"))
        redis, show_db = _int(s.get("redisStock")), _int(s.get("dbStock"))
        if show_db is None:
            show_db = stock
        rows.append({
            "bucket": b, "init_stock": init, "db_stock": stock, "active_orders": active,
            "redis_stock": redis, "redis_users": _int(s.get("redisUsers")),
            "sold_out": None if stock is None else stock == 0,
            "inv1": None not in (init, stock, active) and init - stock == active,
            "redis_eq_db": redis is not None and show_db is not None and redis == show_db,
        })
    return rows


def _fmt(p, r, what):
    return f"{p['voucherId']} b{r['bucket']}: {what}"


def bucket_checks(per_voucher):
    """((ok, detail) for invariant 1 per bucket, (ok, detail) for Redis = DB per bucket)
    over every voucher's "buckets" rows. The details name every bucket of a voucher with
    more than one and every failing bucket; a voucher without rows fails both."""
    ok1 = ok3 = True
    d1, d3 = [], []
    for p in per_voucher:
        rows = p.get("buckets") or []
        if not rows:
            ok1 = ok3 = False
            d1.append(f"{p['voucherId']}: no bucket rows from verify/show")
            d3.append(f"{p['voucherId']}: no bucket rows from verify/show")
            continue
        for r in rows:
            ok1 &= r["inv1"]
            ok3 &= r["redis_eq_db"]
            if len(rows) > 1 or not r["inv1"]:
                d1.append(_fmt(p, r, f"{r['init_stock']} - {r['db_stock']} = "
                                     f"{None if None in (r['init_stock'], r['db_stock']) else r['init_stock'] - r['db_stock']}"
                                     f" vs {r['active_orders']} active" + ("" if r["inv1"] else " FAIL")))
            if len(rows) > 1 or not r["redis_eq_db"]:
                d3.append(_fmt(p, r, f"redis {r['redis_stock']} db {r['db_stock']}"
                                     + ("" if r["redis_eq_db"] else " FAIL")))
    n = sum(len(p.get("buckets") or []) for p in per_voucher)
    head = f"{n} buckets of {len(per_voucher)} vouchers"
    return ((ok1, head + ("; " + "; ".join(d1) if d1 else "")),
            (ok3, head + ("; " + "; ".join(d3) if d3 else "")))


def bucket_lines(p):
    """The report lines of voucher @p p's buckets (a header and one line each)."""
    rows = p.get("buckets") or []
    out = [f" {p['role']} voucher {p['voucherId']}: {len(rows)} bucket(s)",
           f"   {'bucket':<8}{'init':>6}{'DB stock':>10}{'orders':>8}{'Redis':>7}  {'sold out':<9}"
           f"{'init-stock=orders':<19}Redis=DB"]
    for r in rows:
        so = "?" if r["sold_out"] is None else "yes" if r["sold_out"] else "no"
        out.append(f"   {r['bucket']:<8}{str(r['init_stock']):>6}{str(r['db_stock']):>10}"
                   f"{str(r['active_orders']):>8}{str(r['redis_stock']):>7}  {so:<9}"
                   f"{'PASS' if r['inv1'] else 'FAIL':<19}{'PASS' if r['redis_eq_db'] else 'FAIL'}")
    return out
