"""scripts/demo/outage.py: the outage section of the demo report (`scripts/demo.sh
--kill-redis`, DESIGN.md 12), from what run.sh's outage.sh recorded and the database:

  read_marks(path)            outage.txt: "name value" lines (wall ms, counts, the port)
  read_states(path)           outage-states.tsv: a line per switch-row change seen
                              (seen_ms scope state epoch since_ms)
  outage_figures(...)         the timeline of the hot voucher (kill, draining, db, Redis
                              back, rebuilding, redis) in seconds since the sale's first
                              request, the DB-only purchases and the 202s after recovery
  outage_lines(o)             the report's lines
  outage(sql, check, ...)     the figures and their two checks (report.py calls it)

The state changes are timed by the switch row's `since` (the DB's clock, set by the
front that made the move); outage.sh polls every 200 ms, so a state that lasted less
than that (rebuilding, usually) may be missing: then its time is None.
"""
import os

import figures

STATES = ("draining", "db", "rebuilding", "redis")


def read_marks(path):
    """outage.txt as {name: int} (figures.read_marks)."""
    return figures.read_marks(path)


def read_states(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 5 and p[0].isdigit() and p[3].isdigit() and p[4].isdigit():
                    rows.append({"seen_ms": int(p[0]), "scope": p[1], "state": p[2],
                                 "epoch": int(p[3]), "since_ms": int(p[4])})
    except OSError:
        pass
    return rows


def outage_figures(marks, states, hot, t0_ms, db_only, db_only_client, after_202):
    """The outage as a dict: wall ms and seconds since t0_ms (the sale's first request)
    of the kill, of each state of voucher @p hot after it, of Redis back and of the
    outage's end; db_only: {voucherId: outcomes with path 'db'}; db_only_client: the
    200s the crowd saw; after_202: 202s admitted after the hot voucher was back."""
    kill = marks.get("kill_ms", 0)
    back = marks.get("back_ms", 0)
    at = {}
    for s in states:
        if s["scope"] != hot or not kill or s["seen_ms"] < kill:
            continue
        if s["state"] == "redis":
            if back and s["seen_ms"] >= back:
                at["redis"] = s["since_ms"]       # the last return to redis counts
        elif s["state"] in STATES and s["state"] not in at:
            at[s["state"]] = s["since_ms"]
    o = {"redis_port": marks.get("redis_port"), "kill_at_accepted": marks.get("kill_at"),
         "accepted_at_kill": marks.get("accepted_at_kill"), "down_s_planned": marks.get("down_s"),
         "killed_ms": kill or None, "redis_back_ms": back or None,
         "over_ms": marks.get("over_ms"), "hot_voucher": hot,
         "state_ms": {k: at.get(k) for k in STATES},
         "db_only_purchases": sum(db_only.values()), "db_only_by_voucher": db_only,
         "db_only_200_seen_by_client": db_only_client, "accepted_202_after_recovery": after_202}
    o["s_since_sale_start"] = {
        "killed": figures.rel_s(kill, t0_ms), "redis_back": figures.rel_s(back, t0_ms),
        **{k: figures.rel_s(at.get(k), t0_ms) for k in STATES}}
    o["outage_s"] = round((at["redis"] - kill) / 1000.0, 1) if kill and at.get("redis") else None
    o["redis_down_s"] = round((back - kill) / 1000.0, 1) if kill and back else None
    o["first_db_only_s_after_kill"] = None  # outage() reads it from the outcomes
    return o


def outage_lines(o):
    rel = o["s_since_sale_start"]
    st = o["state_ms"]

    at = figures.clock_at
    return [
        f" outage        Redis (private, port {o['redis_port']}) killed -9 at "
        f"{at(o['killed_ms'], rel['killed'])} of the sale, after {o['accepted_at_kill']} accepted",
        f"               hot voucher {o['hot_voucher']}: draining {at(st['draining'], rel['draining'])}, "
        f"db {at(st['db'], rel['db'])}",
        f"               DB-only purchases served: {o['db_only_purchases']:,} (outcomes path 'db'; "
        f"200 CREATED seen by the crowd: {o['db_only_200_seen_by_client']:,})",
        f"               first DB-only sale "
        f"{'not seen' if o['first_db_only_s_after_kill'] is None else str(o['first_db_only_s_after_kill']) + ' s'}"
        f" after the kill "
        f"(target 3 s, DESIGN.md 12 v5; bench/windows.sh measures it and the Sentinel window)",
        f"               Redis back (empty) {at(o['redis_back_ms'], rel['redis_back'])} after "
        f"{o['redis_down_s']} s down; rebuilding {at(st['rebuilding'], rel['rebuilding'])}, "
        f"redis {at(st['redis'], rel['redis'])}: {o['outage_s']} s from kill to redis",
        f"               202s after the recovery: {o['accepted_202_after_recovery']:,}",
    ]


def outage(sql, check, db, run, hot, vouchers, t0_ms, status_200):
    """Figures (outage_figures) and two checks: the DB-only path served purchases while
    Redis was down, and every voucher is back in state redis (so the Redis = DB checks
    judge a rebuilt Redis)."""
    marks = read_marks(os.path.join(run, "outage.txt"))
    states = read_states(os.path.join(run, "outage-states.tsv"))
    vlist = ",".join(vouchers) or "0"
    db_only = {v: int(n) for v, n in sql(
        f"SELECT voucher_id, COUNT(*) FROM `{db}`.tb_seckill_outcome WHERE path = 'db' "
        f"AND voucher_id IN ({vlist}) GROUP BY voucher_id")}
    o = outage_figures(marks, states, hot, t0_ms, db_only, status_200, 0)
    # The window of DESIGN.md 12 v5: from the kill to the first DB-only sale (the request
    # time of its traceId, the snowflake timestamp).
    first = sql(f"SELECT MIN((trace_id >> 22) + 1704067200000) FROM `{db}`.tb_seckill_outcome "
                f"WHERE path = 'db' AND voucher_id IN ({vlist})")[0][0]
    o["first_db_only_s_after_kill"] = (round((int(first) - o["killed_ms"]) / 1000.0, 1)
                                       if first and o["killed_ms"] else None)
    back = o["state_ms"]["redis"]
    if back:
        # admitted after the return: the traceId's snowflake timestamp (figures.py)
        o["accepted_202_after_recovery"] = int(sql(
            f"SELECT COUNT(*) FROM `{db}`.tb_seckill_outcome WHERE path = 'kafka' "
            f"AND voucher_id IN ({vlist}) AND (trace_id >> 22) + 1704067200000 > {int(back)}")[0][0])
    not_redis = sql(f"SELECT scope, state FROM `{db}`.tb_seckill_switch WHERE scope IN ({vlist}) "
                    f"AND state <> 'redis'")
    check("outage: the DB-only path served purchases while Redis was down (DESIGN.md 12)",
          bool(o["killed_ms"]) and o["state_ms"]["db"] is not None and o["db_only_purchases"] > 0,
          f"killed {'yes' if o['killed_ms'] else 'no'}, hot voucher in db "
          f"{'yes' if o['state_ms']['db'] else 'no'}, {o['db_only_purchases']} outcomes path 'db'")
    check("outage: every voucher back in state redis (rebuilt from the DB)",
          not not_redis and bool(o["redis_back_ms"]) and o["state_ms"]["redis"] is not None,
          "still elsewhere: " + (", ".join(f"{s} {st}" for s, st in not_redis) or "none")
          + f"; hot voucher back in redis {'yes' if o['state_ms']['redis'] else 'no'}")
    return o
