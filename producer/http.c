/* producer/http.c: the libmicrohttpd side of seckill-front (DESIGN.md 3): routing, id
 * validation, admission checks that answer 503 before any Redis call (in-flight cap,
 * producer health, worker lease), suspension of purchases and lookups, and queueing the
 * single answer once the pipeline resumed the connection.
 * What it does not do: talk to Redis, Kafka or the DB (pipeline.c, lookup.c); the HTTP
 * threads never block on those. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front.h"
#include "sk/clock.h"
#include "sk/log.h"

static const int code_list[] = { 200, 202, 400, 403, 404, 405, 409, 413, 500, 503, 0 };

int fr_code_idx(int status)
{
        int i;

        for (i = 0; code_list[i]; i++)
                if (code_list[i] == status)
                        return i;
        return i; /* "other" */
}

void fr_metrics_init(void)
{
        static const double lat_bounds[] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                             0.25, 0.5, 1, 2.5, 5, 10, 30 };
        fr_metrics_t *m = &g_fr.m;
        char lbl[64];
        int i;

        m->reg = sk_metrics_new();
        for (i = 0; code_list[i]; i++) {
                snprintf(lbl, sizeof(lbl), "code=\"%d\"", code_list[i]);
                m->req_by_code[i] = sk_metrics_counter(m->reg, "seckill_front_requests_total", lbl,
                                                       "HTTP answers by status code");
        }
        m->req_by_code[i] = sk_metrics_counter(m->reg, "seckill_front_requests_total",
                                               "code=\"other\"", "HTTP answers by status code");
        m->latency = sk_metrics_hist(m->reg, "seckill_front_purchase_seconds", NULL,
                                     "purchase latency from request to answer",
                                     lat_bounds, sizeof(lat_bounds) / sizeof(lat_bounds[0]));
        m->deduct_lat = sk_metrics_hist(m->reg, "seckill_front_deduct_seconds", NULL,
                                        "from request to the deduct.lua reply",
                                        lat_bounds, sizeof(lat_bounds) / sizeof(lat_bounds[0]));
        m->deliv_lat = sk_metrics_hist(m->reg, "seckill_front_delivery_seconds", NULL,
                                       "from produce to its delivery report",
                                       lat_bounds, sizeof(lat_bounds) / sizeof(lat_bounds[0]));
#define DELIV(f, s) m->f = sk_metrics_counter(m->reg, "seckill_front_deliveries_total", \
                                              "status=\"" s "\"", "Kafka delivery reports by status")
        DELIV(deliv_persisted, "persisted");
        DELIV(deliv_not, "not_persisted");
        DELIV(deliv_possibly, "possibly_persisted");
#define RB(f, s) m->f = sk_metrics_counter(m->reg, "seckill_front_rollbacks_total", \
                                           "result=\"" s "\"", "rollback.lua mode front by result")
        RB(rb_ok, "ok");
        RB(rb_already, "already");
        RB(rb_claimed, "claimed");
        RB(rb_error, "error");
        m->inflight = sk_metrics_gauge(m->reg, "seckill_front_inflight", NULL,
                                       "purchases between admission and their final delivery report");
#define U(f, s) m->f = sk_metrics_counter(m->reg, "seckill_front_unavailable_total", \
                                          "cause=\"" s "\"", "503 answers by cause")
        U(u_overload, "overload");
        U(u_kafka, "kafka");
        U(u_redis, "redis");
        U(u_lease, "lease");
        U(u_paused, "paused");
        U(u_pending, "pending");
        U(u_failed, "failed");
        U(u_shutdown, "shutdown");
        U(u_db, "db");
        U(u_meta, "meta_missing");
        m->reproduce = sk_metrics_counter(m->reg, "seckill_front_reproduce_total", NULL,
                                          "identical re-produce after POSSIBLY_PERSISTED");
        m->producer_replaced = sk_metrics_counter(m->reg, "seckill_front_producer_replaced_total",
                                                  NULL, "producers replaced after a fatal error");
        m->deduct_retry = sk_metrics_counter(m->reg, "seckill_front_deduct_unknown_total", NULL,
                                             "deduct attempts with an unknown outcome");
}

/* ---------------------------------------------------------------- answers ---- */

static enum MHD_Result queue_answer(struct MHD_Connection *conn, fr_req_t *req)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;
        char ra[16];
        char *body;
        size_t len;

        pthread_mutex_lock(&g_fr.pend_mu);
        body = req->body;
        len = req->body_len;
        req->body = NULL; /* MHD owns it now (MHD_RESPMEM_MUST_FREE) */
        req->queued = 1;
        pthread_mutex_unlock(&g_fr.pend_mu);
        if (!body) {
                body = strdup("");
                len = 0;
        }
        resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                req->ctype ? req->ctype : "application/json");
        if (req->retry_after_s > 0) {
                snprintf(ra, sizeof(ra), "%d", req->retry_after_s);
                MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
        }
        if (req->allow)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, req->allow);
        ret = MHD_queue_response(conn, (unsigned int)req->status, resp);
        MHD_destroy_response(resp);
        sk_metric_add(g_fr.m.req_by_code[fr_code_idx(req->status)], 1);
        return ret;
}

/* A synchronous answer (no pipeline): fr_answer on a request that is not suspended. */
static void quick(fr_req_t *req, int status, char *body)
{
        req->kind = FR_KIND_QUICK;
        fr_answer(req, status, body, status == 503 ? 1 : 0);
}

static void quick_503(fr_req_t *req, const char *cause, const char *msg)
{
        req->kind = FR_KIND_QUICK;
        fr_answer_503(req, cause, NULL, msg);
}

/* Hand @p req to an asynchronous pipeline: pending list (deadline), suspension and the
 * pipeline's reference, all before the pipeline can see it. Once the shutdown has
 * flushed the pending list for the last time (stopping >= 2, read under pend_mu, the
 * lock fr_pending_flush takes), nothing is suspended any more: the request is answered
 * 503 at once instead, so MHD_stop_daemon never finds a suspended connection (it
 * MHD_PANICs on one). */
static void go_async(fr_req_t *req, struct MHD_Connection *conn)
{
        pthread_mutex_lock(&g_fr.pend_mu);
        if (atomic_load(&g_fr.stopping) > 1) {
                pthread_mutex_unlock(&g_fr.pend_mu);
                if (req->inflight_counted) {
                        req->inflight_counted = 0;
                        atomic_fetch_sub(&g_fr.inflight, 1);
                }
                quick_503(req, "shutdown", "shutting down");
                return;
        }
        fr_req_ref(req); /* the pipeline's reference, dropped by fr_req_done() */
        fr_pending_add(req);
        req->suspended = 1;
        MHD_suspend_connection(conn);
        pthread_mutex_unlock(&g_fr.pend_mu);
        if (req->kind == FR_KIND_PURCHASE)
                fr_purchase_submit(req);
        else
                fr_lookup_submit(req);
}

/* ----------------------------------------------------------------- routes ---- */

/* Split "a/b/c" path segments after @p prefix. Segment text is exactly what was sent
 * (our unescape callback does not decode), so an id is digits only or it is a 400. */
static int parse_id_seg(const char *s, size_t len, int64_t *out)
{
        return sk_id_parse(s, len, out);
}

static enum MHD_Result count_user_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
        (void)kind;
        (void)value;
        if (key && !strcasecmp(key, "X-User-Id"))
                (*(int *)cls)++;
        return MHD_YES;
}

/* X-User-Id (DESIGN.md 3): exactly one, a canonical id. Two of them are ambiguous (which
 * one did the authenticating gateway set?): a 400, never the first one silently. */
static int user_header(struct MHD_Connection *conn, fr_req_t *req)
{
        const char *u = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-User-Id");
        int n = 0;

        MHD_get_connection_values(conn, MHD_HEADER_KIND, count_user_hdr, &n);
        if (!u || n != 1 || sk_id_parse_cstr(u, &req->user_id) != 0)
                return -1;
        sk_id_format(req->user_id, req->su);
        return 0;
}

static void route_purchase(fr_req_t *req, struct MHD_Connection *conn)
{
        char errstr[256];
        int n;

        if (user_header(conn, req) != 0) {
                quick(req, 400, fr_json_err(10001, "missing or invalid X-User-Id"));
                return;
        }
        if (atomic_load(&g_fr.stopping)) {
                quick_503(req, "shutdown", "shutting down");
                return;
        }
        /* DESIGN.md 8: overloaded or producer unusable -> 503 before deduct.lua. */
        if (!atomic_load(&g_fr.kafka_ok) || atomic_load(&g_fr.prod_fatal)) {
                quick_503(req, "kafka", "kafka unavailable");
                return;
        }
        n = atomic_fetch_add(&g_fr.inflight, 1);
        if (n >= g_fr.conf.max_inflight) {
                atomic_fetch_sub(&g_fr.inflight, 1);
                quick_503(req, "overload", "too many purchases in flight");
                return;
        }
        req->inflight_counted = 1;
        if (sk_idgen_next(g_fr.idgen, &req->order_id, errstr, sizeof(errstr)) != SK_OK ||
            sk_idgen_next(g_fr.idgen, &req->trace_id, errstr, sizeof(errstr)) != SK_OK) {
                req->inflight_counted = 0;
                atomic_fetch_sub(&g_fr.inflight, 1);
                req->order_id = req->trace_id = 0;
                /* Lease loss is logged once by the lease callback (main.c); the
                 * per-request line is debug only (DESIGN.md 2). */
                SK_LOG(SK_DEBUG, "idgen_unavailable", "reason=\"%s\"", errstr);
                quick_503(req, "lease", "id generator unavailable");
                return;
        }
        sk_id_format(req->order_id, req->so);
        sk_id_format(req->trace_id, req->st);
        req->kind = FR_KIND_PURCHASE;
        go_async(req, conn); /* may answer 503 at once (shutdown): kind is QUICK then */
}

static void route_readyz(fr_req_t *req)
{
        char buf[256];
        int redis = atomic_load(&g_fr.redis_ok), noev = atomic_load(&g_fr.noeviction_ok);
        int scripts = atomic_load(&g_fr.scripts_ok), kafka = atomic_load(&g_fr.kafka_ok);
        int lease = sk_idgen_usable(g_fr.idgen);
        int ready = redis && noev && scripts && kafka && lease && !atomic_load(&g_fr.stopping);

        snprintf(buf, sizeof(buf),
                 "{\"ready\":%s,\"redis\":%s,\"noeviction\":%s,\"scripts\":%s,\"kafka\":%s,"
                 "\"lease\":%s,\"workerId\":%d}",
                 ready ? "true" : "false", redis ? "true" : "false", noev ? "true" : "false",
                 scripts ? "true" : "false", kafka ? "true" : "false", lease ? "true" : "false",
                 sk_idgen_worker_id(g_fr.idgen));
        quick(req, ready ? 200 : 503, strdup(buf));
}

/* The two GET lookups (orders/me, orders/{id}) once their path ids are valid: the
 * buyer's X-User-Id (400/10001 if missing, invalid or repeated), then the lookup pool,
 * unless the front is past the point of suspending connections (shutdown). */
static void route_lookup(fr_req_t *req, struct MHD_Connection *conn, fr_kind_t kind,
                         fr_lookup_t lookup)
{
        if (user_header(conn, req) != 0) {
                quick(req, 400, fr_json_err(10001, "missing or invalid X-User-Id"));
                return;
        }
        if (atomic_load(&g_fr.stopping) > 1) {
                quick_503(req, "shutdown", "shutting down");
                return;
        }
        req->kind = kind;
        req->lookup = lookup;
        go_async(req, conn);
}

static void route(fr_req_t *req, struct MHD_Connection *conn, const char *url, const char *method)
{
        static const char vpfx[] = "/api/v1/vouchers/";
        static const char opfx[] = "/api/v1/orders/";
        int is_get = !strcmp(method, "GET"), is_post = !strcmp(method, "POST");

        if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/metrics")) {
                if (!is_get) {
                        req->allow = "GET";
                        quick(req, 405, fr_json_err(10001, "method not allowed"));
                        return;
                }
                if (url[1] == 'h') {
                        quick(req, 200, strdup("{\"status\":\"ok\"}"));
                } else if (url[1] == 'r') {
                        route_readyz(req);
                } else {
                        req->ctype = "text/plain; version=0.0.4";
                        quick(req, 200, sk_metrics_render(g_fr.m.reg));
                }
                return;
        }
        if (!strncmp(url, vpfx, sizeof(vpfx) - 1)) {
                const char *id = url + sizeof(vpfx) - 1;
                const char *slash = strchr(id, '/');
                const char *rest;

                if (!slash)
                        goto not_found;
                rest = slash;
                if (strcmp(rest, "/seckill") && strcmp(rest, "/orders/me"))
                        goto not_found;
                if (!strcmp(rest, "/seckill") ? !is_post : !is_get) {
                        req->allow = !strcmp(rest, "/seckill") ? "POST" : "GET";
                        quick(req, 405, fr_json_err(10001, "method not allowed"));
                        return;
                }
                if (parse_id_seg(id, (size_t)(slash - id), &req->voucher_id) != 0) {
                        quick(req, 400, fr_json_err(10001, "invalid voucher id"));
                        return;
                }
                sk_id_format(req->voucher_id, req->sv);
                if (!strcmp(rest, "/seckill")) {
                        route_purchase(req, conn);
                        return;
                }
                route_lookup(req, conn, FR_KIND_ORDERS_ME, FR_LOOKUP_ORDERS_ME);
                return;
        }
        if (!strncmp(url, opfx, sizeof(opfx) - 1)) {
                const char *id = url + sizeof(opfx) - 1;

                if (strchr(id, '/'))
                        goto not_found;
                if (!is_get) {
                        req->allow = "GET";
                        quick(req, 405, fr_json_err(10001, "method not allowed"));
                        return;
                }
                if (parse_id_seg(id, strlen(id), &req->order_id) != 0) {
                        quick(req, 400, fr_json_err(10001, "invalid order id"));
                        return;
                }
                sk_id_format(req->order_id, req->so);
                route_lookup(req, conn, FR_KIND_ORDER_GET, FR_LOOKUP_ORDER_GET);
                return;
        }
not_found:
        quick(req, 404, fr_json_err(10001, "no such route"));
}

static int has_body(struct MHD_Connection *conn)
{
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_TRANSFER_ENCODING);

        if (te)
                return 1;
        return cl && strcmp(cl, "0") != 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
        fr_req_t *req = *con_cls;
        int answered, queued;

        (void)cls;
        (void)version;
        (void)upload_data;
        if (!req) {
                /* First call: headers only. Answer nothing yet: a response queued now is
                 * an "early response" for libmicrohttpd, which then closes the
                 * connection (no keep-alive). Only a declared body is refused at once. */
                if (!(req = fr_req_new()))
                        return MHD_NO;
                req->conn = conn;
                *con_cls = req;
                if (has_body(conn)) {
                        /* DESIGN.md 3: no endpoint takes a body. Answered before reading it;
                         * libmicrohttpd then closes the connection. */
                        quick(req, 413, fr_json_err(10001, "request body not allowed"));
                        return queue_answer(conn, req);
                }
                return MHD_YES;
        }
        if (*upload_data_size) {
                req->body_seen = 1;
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (!req->routed) {
                /* The final call of the request: route it. */
                req->routed = 1;
                if (req->body_seen) {
                        quick(req, 413, fr_json_err(10001, "request body not allowed"));
                        return queue_answer(conn, req);
                }
                route(req, conn, url, method);
                if (req->kind == FR_KIND_QUICK)
                        return queue_answer(conn, req);
                return MHD_YES; /* suspended; resumed by fr_answer() */
        }
        /* Called again after fr_answer() resumed the connection. */
        pthread_mutex_lock(&g_fr.pend_mu);
        answered = req->answered;
        queued = req->queued;
        pthread_mutex_unlock(&g_fr.pend_mu);
        if (answered && !queued)
                return queue_answer(conn, req);
        return MHD_YES;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
        fr_req_t *req = *con_cls;

        (void)cls;
        (void)conn;
        (void)toe;
        *con_cls = NULL;
        fr_req_unref(req); /* the HTTP layer's reference */
}

/* Keep the URL exactly as sent: ids are digits only, so "%201" or "1%00" must stay a
 * 400 instead of being decoded into something sk_id_parse might see differently. */
static size_t unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
        (void)cls;
        (void)conn;
        return strlen(s);
}

int fr_http_start(char *errstr, size_t errstr_size)
{
        struct sockaddr_storage ss;
        char host[256];
        int port;
        unsigned int flags;
        struct addrinfo hints, *ai = NULL;
        char portstr[16];

        if (sk_hostport_parse(g_fr.conf.http_addr, host, sizeof(host), &port) != 0) {
                sk_seterr(errstr, errstr_size, "bad SECKILL_HTTP_ADDR %s", g_fr.conf.http_addr);
                return -1;
        }
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        snprintf(portstr, sizeof(portstr), "%d", port);
        if (getaddrinfo(host[0] ? host : NULL, portstr, &hints, &ai) != 0 || !ai) {
                sk_seterr(errstr, errstr_size, "cannot resolve %s", g_fr.conf.http_addr);
                return -1;
        }
        memset(&ss, 0, sizeof(ss));
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
        flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                MHD_USE_ITC;
        if (ai->ai_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        freeaddrinfo(ai);
        g_fr.mhd = MHD_start_daemon(
                flags, (uint16_t)port, NULL, NULL, handler, NULL,
                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)g_fr.http_threads,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(g_fr.conf.max_inflight + 1024),
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60 /* s, idle keep-alive */,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
                MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,
                MHD_OPTION_END);
        if (!g_fr.mhd) {
                sk_seterr(errstr, errstr_size, "cannot listen on %s", g_fr.conf.http_addr);
                return -1;
        }
        return 0;
}

void fr_http_quiesce(void)
{
        MHD_socket fd;

        if (!g_fr.mhd)
                return;
        fd = MHD_quiesce_daemon(g_fr.mhd);
        if (fd != MHD_INVALID_SOCKET)
                close(fd);
}

void fr_http_stop(void)
{
        if (g_fr.mhd)
                MHD_stop_daemon(g_fr.mhd);
        g_fr.mhd = NULL;
}
