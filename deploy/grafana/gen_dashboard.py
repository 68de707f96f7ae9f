#!/usr/bin/env python3
"""deploy/grafana/gen_dashboard.py: writes seckill-sale.json, the Grafana dashboard of a sale
(admissions, answers by code, latency, 503 causes, consumer lag, orders, DLQ, drift).
Edit the panels here and run `python3 deploy/grafana/gen_dashboard.py > deploy/grafana/seckill-sale.json`;
tests/unit/ops_deploy.sh checks that the JSON is this script's output and that every metric
it names exists. Import in Grafana with a Prometheus data source (input DS_PROMETHEUS).
"""
import json
DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
panels = []
y = 0
def ts(title, targets, x, w=12, h=8, unit="short", desc="", stack=False):
    pid = len(panels) + 1
    p = {"id": pid, "type": "timeseries", "title": title, "description": desc,
         "datasource": DS, "gridPos": {"x": x, "y": y, "w": w, "h": h},
         "fieldConfig": {"defaults": {"unit": unit, "custom": {
             "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
             "stacking": {"mode": "normal" if stack else "none", "group": "A"}}},
             "overrides": []},
         "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["max", "lastNotNull"]},
                     "tooltip": {"mode": "multi", "sort": "desc"}},
         "targets": [{"refId": chr(65 + i), "datasource": DS, "expr": e, "legendFormat": l}
                     for i, (e, l) in enumerate(targets)]}
    panels.append(p)
def stat(title, expr, x, w=4, h=4, unit="short", desc="", thresholds=None):
    pid = len(panels) + 1
    steps = thresholds or [{"color": "green", "value": None}]
    panels.append({"id": pid, "type": "stat", "title": title, "description": desc, "datasource": DS,
                   "gridPos": {"x": x, "y": y, "w": w, "h": h},
                   "fieldConfig": {"defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}},
                                   "overrides": []},
                   "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                               "colorMode": "background", "graphMode": "area", "textMode": "auto"},
                   "targets": [{"refId": "A", "datasource": DS, "expr": expr}]})
def row(title):
    global y
    panels.append({"id": len(panels) + 1, "type": "row", "title": title, "collapsed": False,
                   "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []})
    y += 1
RI = "$__rate_interval"
F = 'job="seckill-front", instance=~"$front"'
red = lambda v: [{"color": "green", "value": None}, {"color": "red", "value": v}]

row("Sale")
stat("Admitted (202) in range", f'sum(increase(seckill_front_requests_total{{{F}, code="202"}}[$__range]))', 0,
     desc="Purchases the fronts admitted over the dashboard's time range")
stat("Orders created in range", f'sum(increase(seckill_consumer_orders_applied_total{{job="seckill-consumer"}}[$__range]))', 4,
     desc="Order rows the consumers committed over the time range")
stat("Consumer lag", 'sum(seckill_consumer_lag_messages{job="seckill-consumer"})', 8,
     desc="Messages between the group's positions and the high watermarks", thresholds=red(10000))
stat("DLQ in range", 'sum(increase(seckill_consumer_dlq_total{job="seckill-consumer"}[$__range])) + sum(increase(seckill_consumer_db_error_dlq_total{job="seckill-consumer"}[$__range]))', 12,
     desc="Messages sent to <topic>.dlq: each one needs an operator", thresholds=red(1))
stat("Vouchers drifting (Redis != DB)", 'max(seckill_reconciler_drift_vouchers{job="seckill-reconciler"})', 16,
     desc="From the last reconciliation pass (reconciler-textfile.sh)", thresholds=red(1))
stat("Reconciler last exit", 'max(seckill_reconciler_last_exit{job="seckill-reconciler"})', 20,
     desc="0 consistent, 1 repaired, 2 unresolved",
     thresholds=[{"color": "green", "value": None}, {"color": "yellow", "value": 1}, {"color": "red", "value": 2}])
y += 4
ts("Admissions/s (202)", [(f'sum by (instance) (rate(seckill_front_requests_total{{{F}, code="202"}}[{RI}]))', "{{instance}}")],
   0, unit="reqps", desc="Purchases admitted by deduct.lua and persisted in Kafka")
ts("Answers/s by HTTP code", [(f'sum by (code) (rate(seckill_front_requests_total{{{F}}}[{RI}]))', "{{code}}")],
   12, unit="reqps", stack=True, desc="202 admitted, 409 sold out / already bought, 503 try again, 4xx bad requests")
y += 8
ts("Purchase latency (front)", [
    (f'histogram_quantile(0.5, sum by (le) (rate(seckill_front_purchase_seconds_bucket{{{F}}}[{RI}])))', "p50"),
    (f'histogram_quantile(0.99, sum by (le) (rate(seckill_front_purchase_seconds_bucket{{{F}}}[{RI}])))', "p99"),
    (f'histogram_quantile(0.99, sum by (le) (rate(seckill_front_deduct_seconds_bucket{{{F}}}[{RI}])))', "deduct p99"),
    (f'histogram_quantile(0.99, sum by (le) (rate(seckill_front_delivery_seconds_bucket{{{F}}}[{RI}])))', "Kafka delivery p99")],
   0, unit="s")
ts("503 by cause", [(f'sum by (cause) (rate(seckill_front_unavailable_total{{{F}}}[{RI}]))', "{{cause}}")],
   12, unit="reqps", stack=True, desc="overload, kafka, redis, lease, paused, pending, failed, shutdown, db, meta_missing")
y += 8
row("Orders")
ts("Consumer lag (messages)", [('sum by (instance) (seckill_consumer_lag_messages{job="seckill-consumer"})', "{{instance}}")], 0)
ts("Orders/s", [
    (f'sum(rate(seckill_consumer_orders_applied_total{{job="seckill-consumer"}}[{RI}]))', "orders created"),
    (f'sum(rate(seckill_consumer_rolled_back_total{{job="seckill-consumer"}}[{RI}]))', "rolled back (FAILED)"),
    (f'sum(rate(seckill_consumer_duplicates_total{{job="seckill-consumer"}}[{RI}]))', "duplicates"),
    (f'sum(rate(seckill_consumer_messages_consumed_total{{job="seckill-consumer"}}[{RI}]))', "consumed")],
   12, unit="ops")
y += 8
ts("Order transaction latency", [
    (f'histogram_quantile(0.5, sum by (le) (rate(seckill_consumer_txn_seconds_bucket{{job="seckill-consumer"}}[{RI}])))', "p50"),
    (f'histogram_quantile(0.99, sum by (le) (rate(seckill_consumer_txn_seconds_bucket{{job="seckill-consumer"}}[{RI}])))', "p99")],
   0, unit="s")
ts("Errors and dead letters", [
    (f'sum(increase(seckill_consumer_dlq_total{{job="seckill-consumer"}}[{RI}]))', "DLQ (poison)"),
    (f'sum(increase(seckill_consumer_db_error_dlq_total{{job="seckill-consumer"}}[{RI}]))', "DLQ (DB error)"),
    (f'sum(increase(seckill_consumer_db_transient_errors_total{{job="seckill-consumer"}}[{RI}]))', "DB transient errors"),
    (f'sum(increase(seckill_consumer_id_collisions_total{{job="seckill-consumer"}}[{RI}]))', "id collisions"),
    (f'sum(seckill_consumer_paused_workers{{job="seckill-consumer"}})', "paused workers")],
   12)
y += 8
row("Consistency")
ts("Reconciler: vouchers by verdict", [('sum by (result) (seckill_reconciler_vouchers{job="seckill-reconciler"})', "{{result}}")], 0)
ts("Drift and in-flight", [
    ('max(seckill_reconciler_drift_vouchers{job="seckill-reconciler"})', "vouchers drifting"),
    (f'sum(seckill_front_inflight{{{F}}})', "front in-flight purchases")],
   12)
y += 8
ts("Redis breaker, worker lease, deduct queue (once the fronts export them)", [
    (f'max by (instance) (seckill_front_redis_breaker_open{{{F}}})', "breaker open {{instance}}"),
    (f'min by (instance) (seckill_worker_lease_held{{{F}}})', "lease held {{instance}}"),
    (f'max by (instance) (seckill_front_deduct_queue_depth{{{F}}})', "deduct queue {{instance}}")],
   0, desc="DESIGN.md 2 and 12; names as in the rules' seckill-pending group")
ts("Unpaid orders past their deadline (once exported)", [
    ('max(seckill_orders_unpaid_overdue_oldest_seconds)', "oldest overdue UNPAID order")],
   12, unit="s", desc="DESIGN.md 13: the closer should release them within SECKILL_CLOSE_INTERVAL_MS")
y += 8

dash = {
    "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
                  "pluginId": "prometheus", "pluginName": "Prometheus"}],
    "title": "seckill: flash sale", "uid": "seckill-sale", "tags": ["seckill"],
    "description": "One flash sale: admissions, answers by code, latency, consumer lag, orders, drift. "
                   "Metrics: docs/OPERATIONS.md 'Metrics and logs'; alerts: deploy/prometheus/seckill.rules.yml.",
    "editable": True, "schemaVersion": 38, "version": 1, "refresh": "5s",
    "time": {"from": "now-30m", "to": "now"}, "timezone": "utc", "graphTooltip": 1,
    "templating": {"list": [{
        "name": "front", "label": "front", "type": "query", "datasource": DS,
        "query": {"query": 'label_values(seckill_front_requests_total, instance)', "refId": "front"},
        "definition": 'label_values(seckill_front_requests_total, instance)',
        "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}]},
    "annotations": {"list": []},
    "panels": panels,
}
print(json.dumps(dash, indent=2))
