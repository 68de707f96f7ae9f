/* sk/metrics_http.h: serve an sk_metrics_t registry over HTTP (GET /metrics in the
 * Prometheus text format, GET /healthz "ok"; other paths 404, other methods 405) on
 * its own libmicrohttpd daemon. Library sk_http (common/http/), linked only by
 * the binaries that serve HTTP, so that the layers below do not need libmicrohttpd. */
#pragma once
#include <stddef.h>
#include "sk/metrics.h"

#define SK_OPS_IDLE_S 2         /* s without a byte (headers included) before a close */
#define SK_OPS_PER_ADDR 16      /* connections one client address may hold at once */
#define SK_OPS_CONNS 512        /* connections at once, all addresses */

/* What an operations listener serves (DESIGN.md 15 "Operations listener"): GET /metrics
 * (render(ctx) if set, else the registry m), GET /healthz ("ok"), GET /readyz (ready(ctx)
 * if set, else 404). Callbacks run on the listener's thread and must be thread-safe. */
typedef struct sk_ops_http {
        sk_metrics_t *m;                        /* borrowed; used when render is NULL */
        char *(*render)(void *ctx);             /* /metrics body, malloc'd; NULL = ENOMEM */
        int (*ready)(void *ctx, char **body);   /* HTTP status; *body malloc'd JSON */
        void *ctx;
} sk_ops_http_t;

/** @brief Serve @p ops (copied; what it points to is borrowed and must outlive the
 *  server) on @p addr ("host:port") until sk_metrics_http_stop, with the limits and
 *  errors of sk_metrics_http_start. Call from one thread (start/stop). */
void *sk_ops_http_start(const sk_ops_http_t *ops, const char *addr, char *errstr, size_t errstr_size);
/** @brief Serve @p m (borrowed; must outlive the server) on @p addr ("host:port",
 *  IPv4 or IPv6) until sk_metrics_http_stop (DESIGN.md 15 "Ops listener"): a connection
 *  silent for SK_OPS_IDLE_S is closed (a slow header too), one address holds at most
 *  SK_OPS_PER_ADDR connections, all together SK_OPS_CONNS, so 500 idle sockets of one
 *  address leave /healthz and /readyz answering the others. @returns an owned, opaque server handle, or NULL with the reason in
 *  errstr (bad address, cannot listen: address in use, out of memory); nothing is
 *  retried. Call from one thread (start/stop). */
void *sk_metrics_http_start(sk_metrics_t *m, const char *addr, char *errstr, size_t errstr_size);
/** @brief Stop serving (waits for the daemon's thread) and free @p srv. NULL ok. */
void sk_metrics_http_stop(void *srv);
