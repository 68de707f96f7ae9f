/* fuzz_front_http.c: libFuzzer harness for seckill-front's request path and header
 * handling (DESIGN.md 3): the real producer/http.c (routing, id segments, X-User-Id,
 * body refusal, method checks) and producer/req.c's answer path, behind the real
 * libmicrohttpd, fed raw bytes over a loopback TCP connection. Built by bench/fuzz.sh,
 * not by CTest.
 *
 * producer/http.c keeps its parsers static (route(), parse_id_seg(), user_header()), so
 * they are reached through the daemon: each input is one connection's bytes (request
 * line, headers, maybe a body), the harness reads the answer until EOF or 2 s.
 * Only http.c, req.c, metrics.c and soldout.c (the sold-out cache stays off) of the
 * front are linked: fr_deduct_submit,
 * fr_lookup_submit, the health and queue-depth getters are defined here, and the
 * sk_idgen_* calls are replaced (bench/fuzz.sh weakens the originals), so no Redis,
 * Kafka or DB is needed: a purchase is answered 202 at once, a lookup 200.
 *
 * Oracles: AddressSanitizer/UBSan in every thread; an answer, when there is one, is
 * an HTTP/1.x status line; a 202 only for POST /api/v1/vouchers/<canonical id>/seckill
 * with a canonical X-User-Id; no 5xx other than the documented 503 (none is expected
 * here: Kafka is "ok" and nothing is in flight). */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "breaker.h"
#include "dbonly.h"
#include "deduct.h"
#include "degrade.h"
#include "front.h"
#include "health.h"
#include "http.h"
#include "page.h"
#include "room_routes.h"
#include "identity.h"
#include "kprod.h"
#include "lookup.h"
#include "metrics.h"
#include "payment.h"
#include "req.h"
#include "rollback.h"
#include "sk/dswitch.h"
#include "sk/ids.h"
#include "sk/log.h"

static uint16_t g_port;
static int64_t g_next_id = 1000;

/* ---- replacements (strong symbols; the originals are weak in this build) ---- */

sk_err_t sk_idgen_next(sk_idgen_t *g, int64_t *out, char *errstr, size_t errstr_size)
{
        (void)g;
        (void)errstr;
        (void)errstr_size;
        *out = __atomic_add_fetch(&g_next_id, 1, __ATOMIC_SEQ_CST);
        return SK_OK;
}

int sk_idgen_usable(sk_idgen_t *g)
{
        (void)g;
        return 1;
}

int sk_idgen_worker_id(const sk_idgen_t *g)
{
        (void)g;
        return 7;
}

void fr_deduct_submit(fr_req_t *req)
{
        char buf[256];

        snprintf(buf, sizeof(buf), "{\"code\":0,\"orderId\":\"%s\",\"traceId\":\"%s\",\"state\":\"PENDING\"}",
                 req->so, req->st);
        fr_answer(req, 202, strdup(buf), 0);
        fr_req_done(req);
}

void fr_lookup_submit(fr_req_t *req)
{
        fr_answer(req, 200, strdup("{\"code\":0,\"state\":\"NONE\"}"), 0);
        fr_req_done(req);
}

fr_config_t g_fr; /* main.c's, not linked */

/* The Redis path is always open here: no breaker, no degrade switch, no DB-only pool. */
int fr_breaker_allow(void) { return 1; }
int fr_degrade_fresh(void) { return 1; }
int fr_degrade_state(int64_t voucher_id, int64_t *epoch, int *mode)
{
        (void)voucher_id;
        if (epoch)
                *epoch = 0;
        if (mode)
                *mode = 0;
        return SK_DSW_REDIS;    /* the purchase goes to fr_deduct_submit */
}
int fr_dbonly_full(void) { return 0; }
int fr_dbonly_submit(fr_req_t *req, int64_t epoch)
{
        (void)epoch;
        fr_deduct_submit(req);
        return 0;
}

/* No payment keys file: the callback route answers 404 (payment.c is fuzzed by
 * fuzz_paysig and not linked here). */
int fr_payment_enabled(void) { return 0; }
void fr_payment_route(fr_req_t *req, struct MHD_Connection *conn, sk_idgen_t *gen)
{
        (void)conn;
        (void)gen;
        fr_answer(req, 404, strdup("{\"code\":10001,\"message\":\"not found\"}"), 0);
}

/* No queued voucher and no buyer page here (room_routes.c and page.c are not linked): a
 * purchase is never a queued one, the room's routes and /sale/ answer 404. */
int fr_room_purchase_check(fr_req_t *req, struct MHD_Connection *conn)
{
        (void)req;
        (void)conn;
        return 0;
}
void fr_room_route(fr_req_t *req, struct MHD_Connection *conn, fr_room_op_t op)
{
        (void)conn;
        (void)op;
        fr_answer(req, 404, strdup("{\"code\":10016,\"message\":\"no waiting room\"}"), 0);
}
void fr_page_route(fr_req_t *req, const char *url, const char *method, int fragment_token)
{
        (void)url;
        (void)method;
        (void)fragment_token;
        fr_answer(req, 404, strdup("{\"code\":10001,\"message\":\"not found\"}"), 0);
}

int fr_kprod_usable(void) { return 1; }
int fr_kprod_ok(void) { return 1; }
int fr_kprod_retired(void) { return 0; }
size_t fr_deduct_depth(void) { return 0; }
size_t fr_rollback_depth(void) { return 0; }
size_t fr_lookup_depth(void) { return 0; }
void fr_orders_metrics_init(void) {} /* orders.c's (pay/cancel), not linked */

void fr_health_redis(int *ok, int *noeviction, int *scripts, int *server)
{
        *ok = *noeviction = *scripts = *server = 1;
}

/* ---- harness ---- */

/* A free loopback port (SECKILL_HTTP_ADDR does not take port 0). */
static unsigned free_port(void)
{
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);
        unsigned port = 0;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
            getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
                port = ntohs(sa.sin_port);
        if (fd >= 0)
                close(fd);
        if (!port) {
                fprintf(stderr, "fuzz_front_http: no free port\n");
                exit(1);
        }
        return port;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        char errstr[256];
        struct rlimit rl;

        (void)argc;
        (void)argv;
        /* Half-closed connections linger in the daemon (see above): room for them. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        sk_log_level = SK_ERROR + 1;            /* quiet */
        sk_conf_defaults(&g_fr.conf);
        g_port = (uint16_t)free_port();
        snprintf(g_fr.conf.http_addr, sizeof(g_fr.conf.http_addr), "127.0.0.1:%u", g_port);
        g_fr.http_threads = 1;
        g_fr.deadline_ms = 5000;
        /* DESIGN.md 15: trusted-header from loopback (the fuzzer's own connections play the
         * gateway), named: the defaults are jwt and unix only. */
        snprintf(g_fr.auth_mode, sizeof(g_fr.auth_mode), "trusted-header");
        snprintf(g_fr.trusted_proxies, sizeof(g_fr.trusted_proxies), "127.0.0.1/32");
        fr_metrics_init();
        if (fr_identity_init(errstr, sizeof(errstr)) != 0) {
                fprintf(stderr, "fuzz_front_http: %s\n", errstr);
                exit(1);
        }
        if (fr_http_start(NULL, errstr, sizeof(errstr)) != 0) {
                fprintf(stderr, "fuzz_front_http: %s\n", errstr);
                exit(1);
        }
        return 0;
}

/* Does @p req (the raw bytes) start with a purchase that must be admitted? Only the
 * exact shape "POST /api/v1/vouchers/<id>/seckill HTTP/1.1\r\n" + "X-User-Id: <id>" in
 * the headers counts; anything else must not be a 202. */
static int may_be_202(const uint8_t *d, size_t n)
{
        static const char pfx[] = "POST /api/v1/vouchers/";

        while (n && (*d == '\r' || *d == '\n')) {      /* RFC 9112 2.2: leading CRLFs */
                d++;
                n--;
        }
        return n > sizeof(pfx) && memcmp(d, pfx, sizeof(pfx) - 1) == 0;
}

/* True when @p r (NUL-terminated) holds a whole answer: headers and Content-Length. */
static int answer_complete(const char *r, size_t n)
{
        const char *end = strstr(r, "\r\n\r\n"), *cl;
        size_t want;

        if (!end)
                return 0;
        cl = strcasestr(r, "\r\nContent-Length:");
        if (!cl || cl > end)
                return 0;
        want = (size_t)strtoul(cl + 17, NULL, 10);
        return n >= (size_t)(end + 4 - r) + want;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct sockaddr_in sa;
        struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
        char resp[4096];
        size_t got = 0, off = 0;
        int fd, status = 0;

        if (size > 65536)
                return 0;
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
                return 0;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons(g_port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
                close(fd);
                return 0;
        }
        while (off < size) {
                ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
                if (w <= 0)
                        break;
                off += (size_t)w;
        }
        shutdown(fd, SHUT_WR);
        /* Read the first answer: up to 200 ms for its first byte (the stubs answer at once;
         * libmicrohttpd keeps a half-closed connection with an unfinished request line
         * open until its 60 s timeout), then until it is complete
         * (headers + Content-Length bytes) or the connection goes quiet for 20 ms (MHD
         * keeps a connection open after answering when the client asked for keep-alive). */
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                ssize_t r;

                if (poll(&pfd, 1, got ? 20 : 200) <= 0)
                        break;
                r = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
                if (r <= 0)
                        break;
                got += (size_t)r;
                resp[got] = '\0';
                if (got == sizeof(resp) - 1 || answer_complete(resp, got))
                        break;
        }
        close(fd);
        resp[got] = '\0';
        if (got == 0)
                return 0;               /* MHD may close without answering garbage */
        if (got < 12 || (strncmp(resp, "HTTP/1.1 ", 9) && strncmp(resp, "HTTP/1.0 ", 9)))
                abort();                /* not a status line */
        status = atoi(resp + 9);
        if (status == 202 && !may_be_202(data, size))
                abort();
        if (status >= 500 && status != 503 && status != 505 && status != 501)
                abort();                /* 500s are bugs; 501/505 are MHD's protocol answers */
        return 0;
}
