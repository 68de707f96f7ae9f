/* sk/metrics.h: a small Prometheus text-format registry (names prefixed seckill_).
 * Counters, gauges and fixed-bucket histograms, updated with relaxed atomics from any
 * thread; registration is done at start-up (not thread-safe against render).
 * sk_metrics_http_start() serves GET /metrics and /healthz on its own libmicrohttpd
 * daemon (the consumer's SECKILL_METRICS_ADDR); the front renders into its own API. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"

typedef struct sk_metrics sk_metrics_t;
typedef struct sk_metric sk_metric_t;

sk_metrics_t *sk_metrics_new(void);
void sk_metrics_destroy(sk_metrics_t *m);

/** @brief Register (or find) a counter @p name with @p labels ("code=\"202\"" or NULL).
 *  Strings are copied. @returns a handle owned by @p m. */
sk_metric_t *sk_metrics_counter(sk_metrics_t *m, const char *name, const char *labels, const char *help);
sk_metric_t *sk_metrics_gauge(sk_metrics_t *m, const char *name, const char *labels, const char *help);
/** @brief Histogram with @p nbounds upper bounds (ascending, in the metric's unit,
 *  e.g. seconds as doubles printed; values observed as int64 micro-units, see below). */
sk_metric_t *sk_metrics_hist(sk_metrics_t *m, const char *name, const char *labels, const char *help,
                             const double *bounds, size_t nbounds);

/** @brief Remove the series @p c (a handle of @p m) and free it: it is no longer
 *  rendered, and a later registration of the same (name, labels) starts again from zero.
 *  The caller guarantees that no thread uses @p c any more (the handle is invalid once
 *  this returns). A handle not in @p m, or NULL, is a no-op. Thread-safe against render
 *  and registration. */
void sk_metrics_remove(sk_metrics_t *m, sk_metric_t *c);

void sk_metric_add(sk_metric_t *c, int64_t n);     /* counter or gauge */
void sk_metric_set(sk_metric_t *g, int64_t v);     /* gauge */
/** @brief Observe @p v (in the unit of the bounds, e.g. seconds). */
void sk_metric_observe(sk_metric_t *h, double v);
int64_t sk_metric_value(const sk_metric_t *c);
/** @brief Quantile estimate (0..1) from the buckets (upper bound of the bucket). */
double sk_metric_quantile(const sk_metric_t *h, double q);

/** @brief Render the Prometheus text exposition. @returns malloc'd string (free()). */
char *sk_metrics_render(sk_metrics_t *m);
