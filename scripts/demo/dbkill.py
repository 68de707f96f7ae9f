"""scripts/demo/dbkill.py: the database section of the demo report (`scripts/demo.sh --db
galera --kill-db`, DESIGN.md 16), from what run.sh's dbkill.sh recorded:

  read_marks(path)          dbkill.txt: "name value" lines (wall ms, counts, writers)
  dbkill_figures(m, t0_ms)  the writer's death and the switch-over, in seconds since the
                            sale's first request and since the kill
  dbkill_lines(d)           the report's lines
  dbkill(check, run, t0)    the figures and their check (report.py calls it)

Every other check of the report (invariants 1-6, the client's 202s and the lifecycle)
runs unchanged: they are what must survive the writer's death.
"""
import os

import figures


def read_marks(path):
    """dbkill.txt as {name: str}: the values are wall ms, counts or host:port names."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2:
                    out[p[0]] = p[1]
    except OSError:
        pass
    return out


def _ms(m, k):
    v = m.get(k, "")
    return int(v) if v.isdigit() else None


def dbkill_figures(m, t0_ms):
    kill, switch, back, synced = (_ms(m, k) for k in ("kill_ms", "switch_ms", "back_ms", "synced_ms"))
    wback = _ms(m, "writer_back_ms")
    return {
        "writer_before": m.get("writer_before"), "writer_during": m.get("writer_during"),
        "writer_after": m.get("writer_after"), "kill_at_accepted": _ms(m, "kill_at"),
        "accepted_at_kill": _ms(m, "accepted_at_kill"), "down_s_planned": _ms(m, "down_s"),
        "killed_ms": kill, "switch_ms": switch, "restart_ms": back, "synced_ms": synced,
        "s_since_sale_start": {"killed": figures.rel_s(kill, t0_ms), "switched": figures.rel_s(switch, t0_ms),
                               "restarted": figures.rel_s(back, t0_ms), "synced": figures.rel_s(synced, t0_ms)},
        "switch_s_after_kill": round((switch - kill) / 1000.0, 1) if kill and switch else None,
        "down_s": round((synced - kill) / 1000.0, 1) if kill and synced else None,
        "writer_back_s_after_synced": (round((wback - synced) / 1000.0, 1)
                                       if wback and synced and (m.get("writer_after") or "").endswith(":3311")
                                       else None),
    }


def dbkill_lines(d):
    rel = d["s_since_sale_start"]

    at = figures.clock_at
    return [
        f" database      Galera writer node1 ({d['writer_before']}) SIGKILLed at "
        f"{at(d['killed_ms'], rel['killed'])} of the sale, after {d['accepted_at_kill']} accepted",
        f"               the front wrote through {d['writer_during'] or 'no other node'} "
        f"{'' if d['switch_s_after_kill'] is None else str(d['switch_s_after_kill']) + ' s after the kill'}"
        f" (at its next transaction; commits on the others wait until Galera evicts the dead node, ~5 s)",
        f"               node1 restarted {at(d['restart_ms'], rel['restarted'])}, Synced "
        f"{at(d['synced_ms'], rel['synced'])}: {d['down_s']} s from kill to Synced; "
        f"the front's writer afterwards: {d['writer_after']}"
        + ("" if d.get("writer_back_s_after_synced") is None
           else f" ({d['writer_back_s_after_synced']} s after node1 was Synced)"),
    ]


def dbkill(check, run, t0_ms):
    """Figures (dbkill_figures) and one check: the writer died during the sale and every
    binary moved to another node (the front's /readyz named it) — the invariants above
    are what held through it."""
    d = dbkill_figures(read_marks(os.path.join(run, "dbkill.txt")), t0_ms)
    check("database: the writer node was killed mid-sale and the front moved to another node (DESIGN.md 16)",
          bool(d["killed_ms"]) and bool(d["writer_during"]) and d["writer_during"] != d["writer_before"]
          and bool(d["synced_ms"]),
          f"killed {'yes' if d['killed_ms'] else 'no'}, writer {d['writer_before']} -> "
          f"{d['writer_during']}, node1 Synced again {'yes' if d['synced_ms'] else 'no'}")
    return d
