/* producer/http.c: the libmicrohttpd side of seckill-front (DESIGN.md 3): routing, id
 * validation, admission checks that answer 503 before any Redis call (in-flight cap,
 * producer health, worker lease), suspension of purchases and lookups, and queueing the
 * single answer once the pipeline resumed the connection. Bodies: only the payment
 * callback takes one (at most FR_PAY_BODY_MAX bytes, kept raw for its signature,
 * payment.c); any other declared body is 413.
 * What it does not do: talk to Redis, Kafka or the DB (deduct.c, publish.c, lookup.c);
 * the HTTP threads never block on those.
 * Past 600 lines on purpose: the routes and the handler's call-by-call state machine
 * (headers, body, answer) read as one sequence; the routes' own work lives elsewhere. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "breaker.h"
#include "dbonly.h"
#include "degrade.h"
#include "vflight.h"
#include "sk/dswitch.h"
#include "deduct.h"
#include "framing.h"
#include "front.h"
#include "health.h"
#include "http.h"
#include "identity.h"
#include "kprod.h"
#include "listen.h"
#include "lookup.h"
#include "metrics.h"
#include "page.h"
#include "payment.h"
#include "req.h"
#include "room_routes.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/num.h"
#include "soldout.h"
#include "strict.h"
#include "unknown.h"
#include "xsite.h"

static sk_idgen_t *idgen; /* borrowed from main.c */
static struct MHD_Daemon *mhd;
/* The 409/10005 of a sold-out cache hit, most answers of a sale: built once and queued on
 * every such request (libmicrohttpd counts a response's users under its own lock), so a
 * hit formats, allocates and frees no answer. NULL (out of memory at start) = per request. */
static struct MHD_Response *soldout_resp;

/* ---------------------------------------------------------------- answers ---- */

static enum MHD_Result queue_answer(struct MHD_Connection *conn, fr_req_t *req)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;
        char ra[16];
        size_t len;
        char *body = fr_req_take_body(req, &len); /* MHD owns it now (MHD_RESPMEM_MUST_FREE) */
        int soldout = req->soldout && req->status == 409;

        if (soldout && soldout_resp && !req->close) {
                free(body);
                ret = MHD_queue_response(conn, 409, soldout_resp);
                sk_metric_add(fr_m.req_by_code[fr_code_idx(409)], 1);
                return ret;
        }
        if (!body) {
                body = soldout ? fr_json_err(SK_CODE_SOLD_OUT, "sold out") : strdup("");
                len = body ? strlen(body) : 0;
        }
        if (!body)
                return MHD_NO;
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
        if (req->www_auth)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, req->www_auth);
        if (req->page) { /* DESIGN.md 18: the buyer page and its assets */
                MHD_add_response_header(resp, "Content-Security-Policy", FR_PAGE_CSP);
                MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        }
        if (req->close) /* libmicrohttpd closes after a response that says so */
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        ret = MHD_queue_response(conn, (unsigned int)req->status, resp);
        MHD_destroy_response(resp);
        sk_metric_add(fr_m.req_by_code[fr_code_idx(req->status)], 1);
        return ret;
}

/* Hand @p req to its asynchronous pipeline (suspended first: fr_req_suspend, which at
 * the end of a shutdown answers 503 at once instead; kind is QUICK then). */
static void go_async(fr_req_t *req, struct MHD_Connection *conn)
{
        if (fr_req_suspend(req, conn) != 0)
                return;
        if (req->kind == FR_KIND_PURCHASE)
                fr_deduct_submit(req);
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

/* The buyer (DESIGN.md 15, identity.c): 0 with req->user_id, or -1 answered 400/10001
 * (trusted-header: X-User-Id missing, repeated or not canonical) or 401/10007 with
 * WWW-Authenticate: Bearer (no or bad token, untrusted peer), before any Redis or DB work. */
static int buyer(struct MHD_Connection *conn, fr_req_t *req)
{
        const char *why = "";

        switch (fr_identity_user(conn, &req->user_id, &why)) {
        case FR_ID_OK:
                sk_id_format(req->user_id, req->su);
                return 0;
        case FR_ID_BAD_INPUT:
                fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, why));
                return -1;
        case FR_ID_LIMITED:
                sk_metric_add(fr_m.jwt_limited, 1);
                fr_quick(req, 429, fr_json_err(SK_CODE_PAUSED, why));
                return -1;
        case FR_ID_UNAUTHORIZED:
                break;
        }
        req->www_auth = "Bearer";
        sk_metric_add(fr_m.id_refused, 1);
        fr_quick(req, 401, fr_json_err(SK_CODE_BAD_IDENTITY, why));
        return -1;
}

/* Mint the purchase's orderId and traceId (in-flight slot first). @returns 0, or -1
 * answered 503 (overload, lease). */
static int mint_purchase(fr_req_t *req)
{
        char errstr[256];

        if (fr_inflight_acquire(req, g_fr.conf.max_inflight) != 0) {
                fr_quick_503(req, "overload", "too many purchases in flight");
                return -1;
        }
        if (sk_idgen_next(idgen, &req->order_id, errstr, sizeof(errstr)) != SK_OK ||
            sk_idgen_next(idgen, &req->trace_id, errstr, sizeof(errstr)) != SK_OK) {
                fr_inflight_release(req);
                req->order_id = req->trace_id = 0;
                /* Lease loss is logged once by the lease callback (main.c); the
                 * per-request line is debug only (DESIGN.md 2). */
                SK_LOG(SK_DEBUG, "idgen_unavailable", "reason=\"%s\"", errstr);
                fr_quick_503(req, "lease", "id generator unavailable");
                return -1;
        }
        sk_id_format(req->order_id, req->so);
        sk_id_format(req->trace_id, req->st);
        req->kind = FR_KIND_PURCHASE;
        return 0;
}

/* DESIGN.md 12, state db: the DB-only purchase on its own pool (bounded queue: 503
 * beyond it); nothing goes to Redis or Kafka. Ids come from the DB-leased worker id. */
static void route_db_only(fr_req_t *req, struct MHD_Connection *conn, int64_t epoch)
{
        if (fr_dbonly_full()) {
                fr_quick_503(req, "overload", "DB-only queue full");
                return;
        }
        if (mint_purchase(req) != 0)
                return;
        if (fr_req_suspend(req, conn) != 0)
                return;
        if (fr_dbonly_submit(req, epoch) != 0) {
                fr_answer_503(req, "shutdown", NULL, "shutting down");
                fr_req_done(req);
        }
}

/* DESIGN.md 12: the voucher's degrade state as this front follows it. @returns 1 if
 * the request was handled here (503 or the DB-only path), 0 for the Redis path. */
static int route_degraded(fr_req_t *req, struct MHD_Connection *conn)
{
        int64_t epoch = 0;
        int mode = SK_DSW_AUTO;
        int state = fr_degrade_state(req->voucher_id, &epoch, &mode);

        if (state == SK_DSW_REDIS) {
                /* DESIGN.md 12 a: rows not read for SECKILL_SWITCH_STALE_MS -> nothing to
                 * Redis (another front may be draining this voucher). */
                if (!fr_degrade_fresh()) {
                        fr_quick_503(req, "degrade", "degrade switch rows not read recently");
                        return 1;
                }
                return 0;
        }
        if (state == SK_DSW_DB && mode != SK_DSW_REDIS_ONLY)
                route_db_only(req, conn, epoch);
        else
                fr_quick_503(req, "degrade", state == SK_DSW_REBUILDING ? "rebuilding Redis from the DB"
                                                                        : "draining to the DB-only path");
        return 1;
}

/* The routing of a purchase once it counts in vflight.c (route_purchase). */
static void route_purchase_counted(fr_req_t *req, struct MHD_Connection *conn)
{
        if (route_degraded(req, conn))
                return;
        /* DESIGN.md 8: overloaded or producer unusable -> 503 before deduct.lua. */
        if (!fr_kprod_usable()) {
                fr_quick_503(req, "kafka", "kafka unavailable");
                return;
        }
        /* DESIGN.md 12: no purchase is queued for a Redis the breaker knows is down. */
        if (!fr_breaker_allow()) {
                fr_quick_503(req, "redis", "redis unavailable");
                return;
        }
        if (mint_purchase(req) != 0)
                return;
        go_async(req, conn); /* may answer 503 at once (shutdown): kind is QUICK then */
}

static void route_purchase(fr_req_t *req, struct MHD_Connection *conn)
{

        if (buyer(conn, req) != 0)
                return;
        if (fr_stopping()) {
                fr_quick_503(req, "shutdown", "shutting down");
                return;
        }
        /* DESIGN.md 18: a queued voucher needs a valid admission for this caller
         * (403 10014, no I/O); a purchase carrying one bypasses the sold-out cache. */
        if (fr_room_purchase_check(req, conn) != 0)
                return;
        /* DESIGN.md 3, 4: every bucket recently answered sold out -> 10005 without Redis
         * (no id, no in-flight slot, no queue slot). */
        if (req->q_pos == 0 && fr_soldout_hit(req)) {
                /* the body is the shared response's (queue_answer); set on this thread
                 * before the handler queues the answer */
                if (fr_quick(req, 409, NULL))
                        req->soldout = 1;
                return;
        }
        /* DESIGN.md 15: a voucher the DB did not know moments ago -> 10004 without Redis
         * or the DB (unknown.c). */
        if (fr_unknown_hit(req)) {
                fr_quick(req, 404, fr_json_err(SK_CODE_NOT_FOUND, "unknown voucher"));
                return;
        }
        /* DESIGN.md 12 b: counted before the degrade state is read, so the follower
         * either sees this purchase or this purchase sees the state it published. */
        fr_vflight_enter(req->voucher_id, &req->vflight);
        route_purchase_counted(req, conn);
        if (req->kind != FR_KIND_PURCHASE)     /* answered here: it never reaches Redis */
                fr_vflight_leave(req->voucher_id, &req->vflight);
}

/* The lookups (orders/me, orders/{id}, cancel) once their path ids are valid: the
 * buyer (buyer(): 400 or 401), then the lookup pool, unless the front is past the
 * point of suspending connections (shutdown). */
static void route_lookup(fr_req_t *req, struct MHD_Connection *conn, fr_kind_t kind,
                         fr_lookup_t lookup)
{
        if (buyer(conn, req) != 0)
                return;
        if (fr_stopping() > 1) {
                fr_quick_503(req, "shutdown", "shutting down");
                return;
        }
        req->kind = kind;
        req->lookup = lookup;
        go_async(req, conn);
}

/* GET /api/v1/vouchers/{id} (no identity) and POST|GET …/queue (the buyer first):
 * @p slash is NULL for the first, "/queue" for the others. */
static void route_room(fr_req_t *req, struct MHD_Connection *conn, const char *id,
                       const char *slash, int is_get, int is_post)
{
        size_t idlen = slash ? (size_t)(slash - id) : strlen(id);

        if (slash ? !is_get && !is_post : !is_get) {
                req->allow = slash ? "GET, POST" : "GET";
                fr_quick(req, 405, fr_json_err(SK_CODE_BAD_INPUT, "method not allowed"));
                return;
        }
        if (parse_id_seg(id, idlen, &req->voucher_id) != 0) {
                fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, "invalid voucher id"));
                return;
        }
        sk_id_format(req->voucher_id, req->sv);
        if (!slash) {
                fr_room_route(req, conn, FR_ROOM_OP_VOUCHER);
                return;
        }
        if (buyer(conn, req) != 0)
                return;
        fr_room_route(req, conn, is_post ? FR_ROOM_OP_JOIN : FR_ROOM_OP_POLL);
}

static void route(fr_req_t *req, struct MHD_Connection *conn, const char *url, const char *method)
{
        static const char vpfx[] = "/api/v1/vouchers/";
        static const char opfx[] = "/api/v1/orders/";
        int is_get = !strcmp(method, "GET"), is_post = !strcmp(method, "POST");

        /* /healthz, /readyz and /metrics are served on SECKILL_OPS_ADDR only (ops.c,
         * DESIGN.md 15): here they are unknown routes (404). */
        if (!strncmp(url, vpfx, sizeof(vpfx) - 1)) {
                const char *id = url + sizeof(vpfx) - 1;
                const char *slash = strchr(id, '/');
                const char *rest;

                if (!slash || !strcmp(slash, "/queue")) {
                        /* the waiting room (DESIGN.md 3, 18; room_routes.c) */
                        route_room(req, conn, id, slash, is_get, is_post);
                        return;
                }
                rest = slash;
                if (strcmp(rest, "/seckill") && strcmp(rest, "/orders/me"))
                        goto not_found;
                if (!strcmp(rest, "/seckill") ? !is_post : !is_get) {
                        req->allow = !strcmp(rest, "/seckill") ? "POST" : "GET";
                        fr_quick(req, 405, fr_json_err(SK_CODE_BAD_INPUT, "method not allowed"));
                        return;
                }
                if (parse_id_seg(id, (size_t)(slash - id), &req->voucher_id) != 0) {
                        fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, "invalid voucher id"));
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
        /* DESIGN.md 3, 15: the payment provider's signed callback; 404 without a keys
         * file. No buyer identity: the signature is the caller's identity. */
        if (!strcmp(url, FR_PAY_PATH)) {
                if (!fr_payment_enabled())
                        goto not_found;
                if (!is_post) {
                        req->allow = "POST";
                        fr_quick(req, 405, fr_json_err(SK_CODE_BAD_INPUT, "method not allowed"));
                        return;
                }
                if (req->in_over) {
                        fr_quick(req, 413, fr_json_err(SK_CODE_BAD_INPUT, "request body too large"));
                        return;
                }
                fr_payment_route(req, conn, idgen);
                return;
        }
        if (!strncmp(url, opfx, sizeof(opfx) - 1)) {
                const char *id = url + sizeof(opfx) - 1;
                const char *slash = strchr(id, '/');

                if (slash) { /* /cancel (DESIGN.md 3, 13): no buyer-facing /pay */
                        if (strcmp(slash, "/cancel"))
                                goto not_found;
                        if (!is_post) {
                                req->allow = "POST";
                                fr_quick(req, 405, fr_json_err(SK_CODE_BAD_INPUT, "method not allowed"));
                                return;
                        }
                        if (parse_id_seg(id, (size_t)(slash - id), &req->order_id) != 0) {
                                fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, "invalid order id"));
                                return;
                        }
                        sk_id_format(req->order_id, req->so);
                        route_lookup(req, conn, FR_KIND_ORDER_ACTION, FR_LOOKUP_CANCEL);
                        return;
                }
                if (!is_get) {
                        req->allow = "GET";
                        fr_quick(req, 405, fr_json_err(SK_CODE_BAD_INPUT, "method not allowed"));
                        return;
                }
                if (parse_id_seg(id, strlen(id), &req->order_id) != 0) {
                        fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, "invalid order id"));
                        return;
                }
                sk_id_format(req->order_id, req->so);
                route_lookup(req, conn, FR_KIND_ORDER_GET, FR_LOOKUP_ORDER_GET);
                return;
        }
        if (!strncmp(url, FR_PAGE_PREFIX, sizeof(FR_PAGE_PREFIX) - 1)) {
                fr_page_route(req, url, method, g_fr.page_fragment_token);
                return;
        }
not_found:
        fr_quick(req, 404, fr_json_err(SK_CODE_BAD_INPUT, "no such route"));
}

/* The one route that takes a body (DESIGN.md 15): a POST to the payment callback while
 * it is served. Its declared length is checked before the body is read. */
static int takes_body(const char *url, const char *method)
{
        return !strcmp(url, FR_PAY_PATH) && !strcmp(method, "POST") && fr_payment_enabled();
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

/* DESIGN.md 15 "Hardening rules", whatever the route: a request framed ambiguously
 * (framing.c) or with a NUL, control or non-ASCII byte in its request line or in a
 * header the front reads (strict.c) gets one 400/10001 and its connection closed,
 * before a body is read. @returns 1 if @p req was answered so. */
static int refuse_framing_bytes(fr_req_t *req, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version)
{
        const char *why = fr_framing_check(conn);

        if (!why)
                why = fr_strict_request(conn, method, url, version, req->uri_cstr_len);
        if (!why)
                return 0;
        req->close = 1;
        sk_metric_add(fr_m.bad_framing, 1);
        fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, why));
        return 1;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
        fr_req_t *req = *con_cls;
        const char *why;

        (void)cls;
        if (!req)
                return MHD_NO; /* out of memory in uri_seen(): close */
        if (!req->conn) {
                /* First call: headers only. Answer nothing yet unless the request is
                 * refused whatever its route: a response queued now is an "early
                 * response" for libmicrohttpd, which then closes the connection (no
                 * keep-alive). */
                req->conn = conn;
                if (refuse_framing_bytes(req, conn, url, method, version))
                        return queue_answer(conn, req);
                if (takes_body(url, method)) {
                        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
                        long n = 0;

                        if (cl && (sk_parse_long(cl, 0, FR_PAY_BODY_MAX, &n) != 0)) {
                                fr_quick(req, 413, fr_json_err(SK_CODE_BAD_INPUT,
                                                            "request body too large"));
                                return queue_answer(conn, req);
                        }
                        req->in_cap = FR_PAY_BODY_MAX;
                        return MHD_YES;
                }
                if (has_body(conn) && !strcmp(url, FR_PAY_PATH)) {
                        /* No keys file: the route does not exist (DESIGN.md 15). */
                        fr_quick(req, 404, fr_json_err(SK_CODE_BAD_INPUT, "no such route"));
                        return queue_answer(conn, req);
                }
                if (has_body(conn)) {
                        /* DESIGN.md 3: no other endpoint takes a body. Answered before reading it;
                         * libmicrohttpd then closes the connection. */
                        fr_quick(req, 413, fr_json_err(SK_CODE_BAD_INPUT, "request body not allowed"));
                        return queue_answer(conn, req);
                }
                return MHD_YES;
        }
        if (*upload_data_size) {
                if (req->in_cap && !req->in_over) {
                        /* The callback's body, kept as sent (its signature covers the
                         * raw bytes); beyond in_cap it is 413. */
                        if (req->in_len + *upload_data_size > req->in_cap) {
                                req->in_over = 1;
                        } else if (!req->in_body && !(req->in_body = malloc(req->in_cap + 1))) {
                                req->in_over = 1; /* out of memory: refused like oversize */
                        } else {
                                memcpy(req->in_body + req->in_len, upload_data, *upload_data_size);
                                req->in_len += *upload_data_size;
                                req->in_body[req->in_len] = '\0';
                        }
                } else if (!req->in_cap) {
                        req->body_seen = 1;
                }
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (!req->routed) {
                /* The final call of the request: route it. */
                req->routed = 1;
                if (req->body_seen) {
                        fr_quick(req, 413, fr_json_err(SK_CODE_BAD_INPUT, "request body not allowed"));
                        return queue_answer(conn, req);
                }
                /* DESIGN.md 15 "Cross-site requests": every POST, whatever its route,
                 * before it is routed (xsite.c). */
                if ((why = fr_xsite_refused(conn, method))) {
                        fr_quick(req, 403, fr_json_err(SK_CODE_BAD_INPUT, why));
                        return queue_answer(conn, req);
                }
                route(req, conn, url, method);
                if (req->kind == FR_KIND_QUICK)
                        return queue_answer(conn, req);
                return MHD_YES; /* suspended; resumed by fr_answer() */
        }
        /* Called again after fr_answer() resumed the connection. */
        if (fr_req_answer_ready(req))
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

/* The URI log callback: the request object is born when the request line is parsed,
 * so the URI's length up to its first NUL is taken while libmicrohttpd has changed
 * nothing in it yet (strict.c compares it with the length it keeps). NULL (out of
 * memory) makes the handler close the connection. */
static void *uri_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
        fr_req_t *req = fr_req_new();

        (void)cls;
        (void)conn;
        if (req)
                req->uri_cstr_len = uri ? strlen(uri) : 0;
        return req;
}

/* Keep the URL exactly as sent: ids are digits only, so "%201" or "1%00" must stay a
 * 400 instead of being decoded into something sk_id_parse might see differently. */
static size_t unescape_none(void *cls, struct MHD_Connection *conn, char *s)
{
        (void)cls;
        (void)conn;
        return strlen(s);
}

/* The MHD options both listeners share, then @p first (and its value) ... : one
 * place for the limits and callbacks. */
#define FR_MHD_COMMON_OPTIONS                                                                   \
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)g_fr.http_threads,                           \
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(g_fr.conf.max_inflight + 1024),             \
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60 /* s, idle keep-alive */,               \
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,                                      \
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,                                           \
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,                                      \
        MHD_OPTION_URI_LOG_CALLBACK, uri_seen, NULL

/* SECKILL_HTTP_ADDR=unix:PATH (DESIGN.md 15): the socket made by listen.c, served by the
 * same daemon settings as TCP. */
static int start_unix(char *errstr, size_t errstr_size)
{
        int fd = fr_listen_unix(g_fr.conf.http_addr, 1024, errstr, errstr_size);

        if (fd < 0)
                return -1;
        mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                               MHD_USE_ITC, 0, NULL, NULL, handler, NULL,
                               MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                               FR_MHD_COMMON_OPTIONS, MHD_OPTION_END);
        if (!mhd) {
                close(fd);
                fr_listen_unix_remove(g_fr.conf.http_addr);
                sk_seterr(errstr, errstr_size, "cannot serve on %s", g_fr.conf.http_addr);
                return -1;
        }
        return 0;
}

int fr_http_start(sk_idgen_t *gen, char *errstr, size_t errstr_size)
{
        struct sockaddr_storage ss;
        char host[256];
        int port;
        unsigned int flags;
        struct addrinfo hints, *ai = NULL;
        char portstr[16];

        idgen = gen;
        if (!soldout_resp) {
                char *b = fr_json_err(SK_CODE_SOLD_OUT, "sold out");

                if (b && !(soldout_resp = MHD_create_response_from_buffer(strlen(b), b,
                                                                          MHD_RESPMEM_MUST_FREE)))
                        free(b);
                if (soldout_resp)
                        MHD_add_response_header(soldout_resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                                "application/json");
        }
        if (fr_listen_is_unix(g_fr.conf.http_addr))
                return start_unix(errstr, errstr_size);
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
        mhd = MHD_start_daemon(
                flags, (uint16_t)port, NULL, NULL, handler, NULL,
                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
                FR_MHD_COMMON_OPTIONS, MHD_OPTION_END);
        if (!mhd) {
                sk_seterr(errstr, errstr_size, "cannot listen on %s", g_fr.conf.http_addr);
                return -1;
        }
        return 0;
}

void fr_http_quiesce(void)
{
        MHD_socket fd;

        if (!mhd)
                return;
        fd = MHD_quiesce_daemon(mhd);
        if (fd != MHD_INVALID_SOCKET)
                close(fd);
        fr_listen_unix_remove(g_fr.conf.http_addr); /* no new connection can come now */
}

void fr_http_stop(void)
{
        if (mhd)
                MHD_stop_daemon(mhd);
        mhd = NULL;
        if (soldout_resp)
                MHD_destroy_response(soldout_resp);
        soldout_resp = NULL;
        fr_listen_unix_remove(g_fr.conf.http_addr);
}
