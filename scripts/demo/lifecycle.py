"""scripts/demo/lifecycle.py: the order-lifecycle part of the demo report (DESIGN.md 9
invariants 4 and 6 for cancelled/closed orders, 13): orders by status, the units the
closes released, how many times units were sold again, what the payer did, the late
payment (a callback signed after deadline + grace: refund_due "late"), and three checks. Used by report.py (which passes its sql/rcli helpers and its check function).
"""
import json
import os
import re

STATUS = {"1": "UNPAID", "2": "PAID", "3": "CANCELLED", "4": "CLOSED"}


def _load(path):
    """A JSON object from @path, {} when missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def late_payment(sql, check, db, payer):
    """The payer's late payment (DESIGN.md 13): its answer must be 409 refund_due "late"
    with "refund":true, its tb_payment row result 2 reason late, its order CLOSED (on the
    spot). N/A when the payer had no non-payer's order to pay late."""
    late = payer.get("late_payment")
    refund_due = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_payment WHERE result = 2")[0][0])
    name = "late payment (signed after deadline + grace): 409 refund_due late, order closed"
    if not late:
        check(name, None, "not run: no order of a non-payer reached its deadline")
        return {"late": None, "refund_due_rows": refund_due}
    if not re.match(r"^demo-late-[1-9][0-9]{0,18}$", str(late.get("txn", ""))):
        check(name, False, f"the payer's record is malformed: {late!r}")
        return {"late": late, "refund_due_rows": refund_due}
    row = sql(f"SELECT p.result, COALESCE(p.reason, ''), p.order_id, o.status FROM `{db}`.tb_payment p "
              f"LEFT JOIN `{db}`.tb_voucher_order o ON o.id = p.order_id "
              f"WHERE p.provider_txn_id = '{late['txn']}'")
    got = tuple(row[0]) if row else ()
    ok = (late.get("status") == 409 and late.get("reason") == "late" and late.get("refund") is True
          and got == ("2", "late", late["order"], "4"))
    check(name, ok, f"order {late['order']} signed {late.get('signed_after_deadline_ms')} ms after "
          f"deadline + {payer.get('grace_s', 0)} s: HTTP {late.get('status')} reason "
          f"{late.get('reason')} refund {late.get('refund')}; tb_payment result/reason/order status "
          f"{'/'.join(got[:2] + got[3:]) if got else 'no row'} (want 2/late/4); "
          f"{payer.get('late_tries', 0)} order(s) tried")
    return {"late": late, "refund_due_rows": refund_due, "row": list(got)}


def lifecycle(sql, rcli, check, db, prefix, vouchers, warmup, run, unpaid_pct):
    """Figures and checks for the sale's vouchers (the warm-up voucher left out)."""
    sale_v = [v for v in vouchers if v != warmup]
    vlist = ",".join(sale_v) or "0"
    by_status = {STATUS.get(s, s): int(n) for s, n in sql(
        f"SELECT status, COUNT(*) FROM `{db}`.tb_voucher_order WHERE voucher_id IN ({vlist}) "
        f"GROUP BY status")}
    released = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_voucher_reconcile_log WHERE voucher_id IN "
                       f"({vlist}) AND log_type = 1 AND business_type IN (4, 5)")[0][0])
    created = int(sql(f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order WHERE voucher_id IN ({vlist})")[0][0])
    init = int(sql(f"SELECT COALESCE(SUM(init_stock), 0) FROM `{db}`.tb_seckill_voucher "
                   f"WHERE voucher_id IN ({vlist})")[0][0])
    no_restore = int(sql(
        f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order o WHERE o.voucher_id IN ({vlist}) "
        f"AND o.status IN (3, 4) AND NOT EXISTS (SELECT 1 FROM `{db}`.tb_voucher_reconcile_log l "
        f"WHERE l.trace_id = o.trace_id AND l.log_type = 1 AND l.business_type IN (4, 5))")[0][0])
    no_release = 0
    for v in sale_v:
        rows = sql(f"SELECT trace_id, bucket FROM `{db}`.tb_voucher_order "
                   f"WHERE voucher_id = {v} AND status IN (3, 4)")
        for b in sorted({bk for (_, bk) in rows}):  # the release lives in the order's bucket
            traces = [t for (t, bk) in rows if bk == b]
            for i in range(0, len(traces), 200):
                chunk = traces[i:i + 200]
                vals = rcli("HMGET", f"{prefix}:{{v:{v}:{b}}}:trace", *[t + ":x" for t in chunk])
                no_release += sum(1 for x in vals if not x)
    paid_and_ended = int(sql(
        f"SELECT COUNT(*) FROM `{db}`.tb_voucher_order WHERE voucher_id IN ({vlist}) AND paid_at "
        f"IS NOT NULL AND (status IN (3, 4) OR (pay_deadline IS NOT NULL AND paid_at > pay_deadline))")[0][0])
    payer, resale = _load(os.path.join(run, "payer.json")), _load(os.path.join(run, "resale.json"))
    check("I4 every cancelled/closed order: its RESTORE row, its unit back, its Redis release (T:x)",
          no_restore == 0 and no_release == 0,
          f"{released} units released by {by_status.get('CLOSED', 0)} closes and "
          f"{by_status.get('CANCELLED', 0)} cancels; without a RESTORE row {no_restore}, "
          f"without a T:x release {no_release} (units back: I1)")
    check("I6 no order both paid and closed/cancelled, none paid after its deadline",
          paid_and_ended == 0, f"{paid_and_ended} such orders; {by_status.get('PAID', 0)} paid")
    late = late_payment(sql, check, db, payer)
    return {"late_payment": late,"unpaid_pct": unpaid_pct, "orders_by_status": by_status, "orders_created": created,
            "init_stock": init, "units_released": released,
            "units_sold_again": max(0, created - init), "payer": payer, "resale": resale,
            "released_without_T_x": no_release}


def print_lifecycle(lc):
    """Two report lines (report.py's print_report calls it)."""
    st = lc["orders_by_status"]
    print(f" lifecycle     {lc['orders_created']:,} orders for {lc['init_stock']:,} units: "
          f"paid {st.get('PAID', 0):,}, unpaid {st.get('UNPAID', 0):,}, closed unpaid "
          f"{st.get('CLOSED', 0):,}, cancelled {st.get('CANCELLED', 0):,} "
          f"(~{lc['unpaid_pct']}% of winners never pay)")
    print(f" released      {lc['units_released']:,} units back to stock, sold again "
          f"{lc['units_sold_again']:,} times (late buyers: "
          f"{lc['resale'].get('resale_accepted', 0)} accepted of {lc['resale'].get('resale_tried', 0)})")
    lp = lc.get("late_payment") or {}
    late = lp.get("late")
    if late:
        print(f" late payment  order {late['order']}: the provider signed it "
              f"{late.get('signed_after_deadline_ms')} ms after deadline + "
              f"{lc['payer'].get('grace_s', 0)} s grace -> HTTP {late.get('status')} "
              f"{'refund_due ' + str(late.get('reason')) if late.get('refund') else late.get('reason')}"
              f", order closed on the spot; refund_due rows {lp.get('refund_due_rows', 0)} "
              f"(seckill-admin payment refunds)")
    else:
        print(" late payment  not run (no order of a non-payer reached its deadline)")
