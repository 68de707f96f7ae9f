/* 0411_front_breaker.c: the front's Redis breaker and "Redis hangs must not stall the
 * front" (DESIGN.md 8, 12) against a PRIVATE redis-server on a spare port (never the
 * shared one), reached through a small TCP relay in this test that records when each
 * deduct EVALSHA (and its traceId) was sent:
 *   - freeze (SIGSTOP) during a load of purchases: every request is answered within its
 *     deadline (2 x delivery timeout + 1 s), the breaker opens (metric), new purchases
 *     get 503 cause redis at once (measured; not queued behind a Redis timeout), no
 *     deduct is sent after its request's deadline nor while the breaker is open; SIGCONT
 *     -> 202s again within a few seconds (short SECKILL_BREAKER_OPEN_MS), breaker closed;
 *   - a Redis that answers slowly (DEBUG SLEEP 0.5 s in a loop: replies come, late)
 *     opens the breaker too (slow commands), and it closes once Redis is fast again. */
#define _GNU_SOURCE /* memmem */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <hiredis/hiredis.h>

#include "sk_test.h"
#include "sk/snowflake.h"

#define DEADLINE_MS 7000 /* sk_test_front_start's delivery timeout 3000 ms: 2 x 3000 + 1000 */

/* ------------------------------------------------------------ the relay ---- */

/* One deduct EVALSHA seen on its way to Redis: its traceId and when (wall ms). */
typedef struct sent { int64_t trace_id, at_ms; } sent_t;

typedef struct relay {
        int lfd, redis_port, port;
        atomic_int stop;
        pthread_t t;
        pthread_mutex_t mu;
        sent_t *sent;
        size_t nsent, cap;
} relay_t;

typedef struct conn {
        int a, b;               /* front side, Redis side */
        char *buf;              /* front -> Redis bytes not parsed yet */
        size_t len, cap;
} conn_t;

/* The decimal between @p p and @p crlf (RESP length or count; the buffer is not
 * NUL-terminated, so no strtol). */
static long resp_num(const char *p, const char *crlf)
{
        long v = 0;

        for (; p < crlf && *p >= '0' && *p <= '9' && v < 100000000; p++)
                v = v * 10 + (*p - '0');
        return v;
}

/* One RESP bulk string at @p p (up to @p end): sets *s, *n. @returns bytes used, 0 if
 * incomplete. */
static size_t resp_bulk(const char *p, const char *end, const char **s, long *n)
{
        const char *crlf;

        if (p >= end || *p != '$' || !(crlf = memmem(p, (size_t)(end - p), "\r\n", 2)))
                return 0;
        *n = resp_num(p + 1, crlf);
        if (*n < 0 || crlf + 2 + *n + 2 > end)
                return 0;
        *s = crlf + 2;
        return (size_t)(crlf + 2 + *n + 2 - p);
}

/* Parse whole commands (hiredis always sends RESP arrays) from @p c's buffer; record
 * every 13-argument EVALSHA (deduct.lua: its 8th argument is the traceId). */
static void relay_parse(relay_t *rl, conn_t *c, int64_t now)
{
        size_t off = 0;

        for (;;) {
                const char *p = c->buf + off, *end = c->buf + c->len, *crlf, *s, *arg7 = NULL;
                long argc, i, n, n7 = 0;
                size_t used;
                int evalsha = 0;

                if (p >= end || !(crlf = memmem(p, (size_t)(end - p), "\r\n", 2)))
                        break;
                ck_assert_msg(*p == '*', "relay: not a RESP array");
                argc = resp_num(p + 1, crlf);
                p = crlf + 2;
                for (i = 0; i < argc; i++) {
                        if (!(used = resp_bulk(p, end, &s, &n)))
                                break;
                        if (i == 0)
                                evalsha = n == 7 && !strncasecmp(s, "EVALSHA", 7);
                        if (i == 7) {
                                arg7 = s;
                                n7 = n;
                        }
                        p += used;
                }
                if (i < argc)
                        break; /* incomplete */
                if (evalsha && argc == 13 && arg7 && n7 < 24) {
                        char tr[24];
                        int64_t id;

                        memcpy(tr, arg7, (size_t)n7);
                        tr[n7] = '\0';
                        if (sk_id_parse_cstr(tr, &id) == 0) {
                                pthread_mutex_lock(&rl->mu);
                                if (rl->nsent == rl->cap) {
                                        rl->cap = rl->cap ? rl->cap * 2 : 4096;
                                        rl->sent = realloc(rl->sent, rl->cap * sizeof(*rl->sent));
                                        ck_assert(rl->sent != NULL);
                                }
                                rl->sent[rl->nsent].trace_id = id;
                                rl->sent[rl->nsent++].at_ms = now;
                                pthread_mutex_unlock(&rl->mu);
                        }
                }
                off = (size_t)(p - c->buf);
        }
        memmove(c->buf, c->buf + off, c->len - off);
        c->len -= off;
}

static int relay_connect_redis(int port)
{
        struct sockaddr_in sin;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_port = htons((uint16_t)port);
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

static void conn_close(conn_t *c)
{
        close(c->a);
        close(c->b);
        free(c->buf);
        memset(c, 0, sizeof(*c));
        c->a = c->b = -1;
}

/* Forward one readable side; front -> Redis bytes are parsed first. @returns -1 on EOF. */
static int relay_forward(relay_t *rl, conn_t *c, int from_front)
{
        char buf[65536];
        ssize_t r = read(from_front ? c->a : c->b, buf, sizeof(buf));
        size_t off = 0;

        if (r <= 0)
                return -1;
        if (from_front) {
                if (c->len + (size_t)r > c->cap) {
                        c->cap = (c->len + (size_t)r) * 2;
                        c->buf = realloc(c->buf, c->cap);
                        ck_assert(c->buf != NULL);
                }
                memcpy(c->buf + c->len, buf, (size_t)r);
                c->len += (size_t)r;
                relay_parse(rl, c, sk_now_ms());
        }
        /* Blocking write: a frozen Redis's socket buffers hold far more than this test
         * sends, so the relay keeps reading (and timestamping) the front. */
        while (off < (size_t)r) {
                ssize_t w = write(from_front ? c->b : c->a, buf + off, (size_t)r - off);

                if (w <= 0)
                        return -1;
                off += (size_t)w;
        }
        return 0;
}

static void *relay_main(void *arg)
{
        relay_t *rl = arg;
        conn_t conns[64];
        int i;

        for (i = 0; i < 64; i++) {
                memset(&conns[i], 0, sizeof(conns[i]));
                conns[i].a = conns[i].b = -1;
        }
        while (!atomic_load(&rl->stop)) {
                struct pollfd pf[129];
                int np = 1;

                pf[0].fd = rl->lfd;
                pf[0].events = POLLIN;
                for (i = 0; i < 64; i++) {
                        pf[1 + 2 * i].fd = conns[i].a;
                        pf[2 + 2 * i].fd = conns[i].b;
                        pf[1 + 2 * i].events = pf[2 + 2 * i].events = POLLIN;
                }
                np = 129;
                if (poll(pf, (nfds_t)np, 50) <= 0)
                        continue;
                if (pf[0].revents & POLLIN) {
                        int a = accept(rl->lfd, NULL, NULL), b = a >= 0 ? relay_connect_redis(rl->redis_port) : -1;

                        for (i = 0; i < 64 && conns[i].a >= 0; i++)
                                ;
                        if (a >= 0 && b >= 0 && i < 64) {
                                conns[i].a = a;
                                conns[i].b = b;
                        } else {
                                if (a >= 0)
                                        close(a);
                                if (b >= 0)
                                        close(b);
                        }
                }
                for (i = 0; i < 64; i++) {
                        if (conns[i].a < 0)
                                continue;
                        if ((pf[1 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                            relay_forward(rl, &conns[i], 1) != 0) {
                                conn_close(&conns[i]);
                                continue;
                        }
                        if ((pf[2 + 2 * i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                            relay_forward(rl, &conns[i], 0) != 0)
                                conn_close(&conns[i]);
                }
        }
        for (i = 0; i < 64; i++)
                if (conns[i].a >= 0)
                        conn_close(&conns[i]);
        return NULL;
}

static void relay_start(relay_t *rl, int redis_port)
{
        struct sockaddr_in sin;
        socklen_t len = sizeof(sin);

        memset(rl, 0, sizeof(*rl));
        pthread_mutex_init(&rl->mu, NULL);
        rl->redis_port = redis_port;
        rl->lfd = socket(AF_INET, SOCK_STREAM, 0);
        ck_assert_int_ge(rl->lfd, 0);
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ck_assert_int_eq(bind(rl->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
        ck_assert_int_eq(listen(rl->lfd, 128), 0);
        ck_assert_int_eq(getsockname(rl->lfd, (struct sockaddr *)&sin, &len), 0);
        rl->port = ntohs(sin.sin_port);
        ck_assert_int_eq(pthread_create(&rl->t, NULL, relay_main, rl), 0);
}

static void relay_stop(relay_t *rl)
{
        atomic_store(&rl->stop, 1);
        pthread_join(rl->t, NULL);
        close(rl->lfd);
        free(rl->sent);
        rl->sent = NULL;
}

/* ------------------------------------------------------------- the load ---- */

typedef struct result { int status; int64_t sent_ms, took_ms; } result_t;

typedef struct load {
        int port;
        char path[160];
        atomic_int stop;
        atomic_llong next_user;
        pthread_mutex_t mu;
        result_t *res;
        size_t n, cap;
} load_t;

static void *load_main(void *arg)
{
        load_t *ld = arg;

        while (!atomic_load(&ld->stop)) {
                char user[24], body[1024];
                int64_t t0 = sk_mono_ms(), w0 = sk_now_ms();
                int st;

                snprintf(user, sizeof(user), "%lld", (long long)atomic_fetch_add(&ld->next_user, 1));
                st = sk_test_http(ld->port, "POST", ld->path, user, NULL, body, sizeof(body));
                pthread_mutex_lock(&ld->mu);
                if (ld->n == ld->cap) {
                        ld->cap = ld->cap ? ld->cap * 2 : 1024;
                        ld->res = realloc(ld->res, ld->cap * sizeof(*ld->res));
                        ck_assert(ld->res != NULL);
                }
                ld->res[ld->n].status = st;
                ld->res[ld->n].sent_ms = w0;
                ld->res[ld->n++].took_ms = sk_mono_ms() - t0;
                pthread_mutex_unlock(&ld->mu);
                sk_sleep_ms(20, NULL); /* modest CPU on a shared machine */
        }
        return NULL;
}

/* Poll the breaker gauge until it reads @p want (up to @p timeout_ms). @returns the wall
 * time it was seen, or -1. */
static int64_t wait_breaker(int port, int want, int timeout_ms)
{
        int64_t until = sk_mono_ms() + timeout_ms;

        while (sk_mono_ms() < until) {
                if (sk_test_scrape(port, "seckill_front_redis_breaker_open") == want)
                        return sk_now_ms();
                sk_sleep_ms(50, NULL);
        }
        return -1;
}

/* POST until a 202 (up to @p timeout_ms). @returns ms it took, or -1. */
static int64_t wait_202(int port, const char *path, long long user0, int timeout_ms)
{
        int64_t t0 = sk_mono_ms();
        char user[24], body[1024];

        while (sk_mono_ms() - t0 < timeout_ms) {
                snprintf(user, sizeof(user), "%lld", user0++);
                if (sk_test_http(port, "POST", path, user, NULL, body, sizeof(body)) == 202)
                        return sk_mono_ms() - t0;
                sk_sleep_ms(100, NULL);
        }
        return -1;
}

static pid_t start_front(int redis_port, int *port_out, char *log, size_t cap, const char *what)
{
        char url_env[128];
        const char *env[] = { url_env, "SECKILL_WORKER_LEASE_MS=20000", "SECKILL_BREAKER_OPEN_MS=1500",
                              "SECKILL_FRONT_REDIS_WORKERS=2", NULL };
        int port = sk_test_free_port();
        pid_t pid;

        snprintf(url_env, sizeof(url_env), "SECKILL_REDIS_URL=redis://127.0.0.1:%d/0", redis_port);
        sk_test_log_path(log, cap, "front_0411_%s", what);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 40) == 0, "front not ready (log %s)", log);
        *port_out = port;
        return pid;
}

/* What the load and the relay saw of the freeze (opened at @p t_open, SIGCONT at
 * @p t_cont, wall ms): every request answered within its deadline (+ HTTP slack), both
 * 202s and 503s; no deduct sent after its request's deadline, none while the breaker was
 * open (the opening was seen by polling: 300 ms of slack before it counts). */
static void check_answers(const load_t *ld, relay_t *rl, int64_t t_open, int64_t t_cont)
{
        int n202 = 0, n503 = 0, late = 0, sent_open = 0, sent_late = 0;

        for (size_t k = 0; k < ld->n; k++) {
                ck_assert_msg(ld->res[k].status == 202 || ld->res[k].status == 503, "status %d",
                              ld->res[k].status);
                n202 += ld->res[k].status == 202;
                n503 += ld->res[k].status == 503;
                late += ld->res[k].took_ms > DEADLINE_MS + 500;
        }
        fprintf(stderr, "0411: load requests=%zu 202=%d 503=%d late=%d\n", ld->n, n202, n503, late);
        ck_assert_int_gt(n202, 0);
        ck_assert_int_gt(n503, 0);
        ck_assert_int_eq(late, 0);
        pthread_mutex_lock(&rl->mu);
        for (size_t k = 0; k < rl->nsent; k++) {
                int64_t minted = sk_snowflake_ts_ms(rl->sent[k].trace_id);

                sent_late += rl->sent[k].at_ms > minted + DEADLINE_MS;
                sent_open += rl->sent[k].at_ms > t_open + 300 && rl->sent[k].at_ms < t_cont;
        }
        fprintf(stderr, "0411: deducts sent=%zu after_deadline=%d while_open=%d\n", rl->nsent, sent_late,
                sent_open);
        pthread_mutex_unlock(&rl->mu);
        ck_assert_int_eq(sent_late, 0);
        ck_assert_int_eq(sent_open, 0);
}

START_TEST(freeze_opens_breaker_without_stall)
{
        char log[256], body[1024], v[SK_ID_STRLEN], cause[32];
        sk_redis_t *rc = sk_test_fx.r;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), t_stop, t_open, t_cont, rec_ms, max503 = 0;
        int port, i;
        pthread_t th[4];
        relay_t rl;
        load_t ld;
        pid_t pid;

        relay_start(&rl, sk_test_fx.conf.redis.port);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 1000000,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        pid = start_front(rl.port, &port, log, sizeof(log), "freeze");
        sk_id_format(vid, v);
        memset(&ld, 0, sizeof(ld));
        pthread_mutex_init(&ld.mu, NULL);
        ld.port = port;
        atomic_store(&ld.next_user, 1000000);
        snprintf(ld.path, sizeof(ld.path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_redis_breaker_open"), 0);
        for (i = 0; i < 4; i++)
                ck_assert_int_eq(pthread_create(&th[i], NULL, load_main, &ld), 0);
        sk_sleep_ms(1500, NULL);

        /* Freeze Redis under load. */
        t_stop = sk_now_ms();
        ck_assert_int_eq(kill(sk_test_fx.redis_pid, SIGSTOP), 0);
        t_open = wait_breaker(port, 1, 15000);
        ck_assert_msg(t_open > 0, "breaker never opened (log %s)", log);
        fprintf(stderr, "0411: breaker open %lld ms after SIGSTOP\n", (long long)(t_open - t_stop));
        /* While open: answered at once, 503 cause redis, nothing minted or queued. */
        for (i = 0; i < 20; i++) {
                char user[24];
                int64_t t0 = sk_mono_ms(), took;

                snprintf(user, sizeof(user), "%d", 500 + i);
                ck_assert_int_eq(sk_test_http(port, "POST", ld.path, user, NULL, body, sizeof(body)), 503);
                took = sk_mono_ms() - t0;
                max503 = took > max503 ? took : max503;
                ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
                ck_assert_str_eq(cause, "redis");
                ck_assert_msg(strstr(body, "\"state\"") == NULL, "%s", body);
        }
        fprintf(stderr, "0411: slowest 503 while open: %lld ms\n", (long long)max503);
        /* Not queued behind a Redis command timeout (1 s): far below it. */
        ck_assert_int_lt(max503, 500);
        /* Frozen past every deadline of the purchases admitted before the opening. */
        while (sk_now_ms() < t_stop + DEADLINE_MS + 1500)
                sk_sleep_ms(100, NULL);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_redis_breaker_open"), 1);
        /* In-flight slots: none held for the dead Redis (rollbacks parked, answered). */
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_inflight"), 0);

        t_cont = sk_now_ms();
        ck_assert_int_eq(kill(sk_test_fx.redis_pid, SIGCONT), 0);
        rec_ms = wait_202(port, ld.path, 900000, 15000);
        fprintf(stderr, "0411: first 202 %lld ms after SIGCONT\n", (long long)rec_ms);
        ck_assert_msg(rec_ms >= 0, "no 202 after SIGCONT (log %s)", log);
        ck_assert_msg(wait_breaker(port, 0, 5000) > 0, "breaker still open");
        sk_sleep_ms(500, NULL);
        atomic_store(&ld.stop, 1);
        for (i = 0; i < 4; i++)
                pthread_join(th[i], NULL);

        check_answers(&ld, &rl, t_open, t_cont);
        ck_assert_int_ge(sk_test_scrape(port, "seckill_front_redis_breaker_transitions_total{to=\"open\"}"), 1);
        ck_assert_int_ge(sk_test_scrape(port, "seckill_front_redis_breaker_transitions_total{to=\"closed\"}"), 1);
        ck_assert_int_eq(sk_test_stop(pid, 40), 0);
        relay_stop(&rl);
        free(ld.res);
}
END_TEST

typedef struct sleeper { int port; atomic_int stop; } sleeper_t;

/* DEBUG SLEEP 0.5 in a loop: every command waits up to 0.5 s, then is answered (slow,
 * not a timeout: the front's command timeout is 1 s). */
static void *sleeper_main(void *arg)
{
        sleeper_t *sl = arg;
        struct timeval tv = { 5, 0 };
        redisContext *c = redisConnectWithTimeout("127.0.0.1", sl->port, tv);

        while (c && !c->err && !atomic_load(&sl->stop)) {
                redisReply *r = redisCommand(c, "DEBUG SLEEP 0.5");

                if (!r)
                        break;
                freeReplyObject(r);
                sk_sleep_ms(20, NULL);
        }
        if (c)
                redisFree(c);
        return NULL;
}

START_TEST(slow_redis_opens_breaker)
{
        char log[256], body[1024], v[SK_ID_STRLEN], path[160], user[24], cause[32];
        sk_redis_t *rc = sk_test_fx.r;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), until, rec_ms;
        int port, st, opened = 0, u = 0;
        sleeper_t sl = { .port = sk_test_fx.conf.redis.port };
        pthread_t th;
        pid_t pid;
        FILE *f;

        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 1000000,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        pid = start_front(sk_test_fx.conf.redis.port, &port, log, sizeof(log), "slow");
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "1", NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(pthread_create(&th, NULL, sleeper_main, &sl), 0);
        /* Sequential purchases: each answered (202) or refused once the breaker opened. */
        until = sk_mono_ms() + 20000;
        while (sk_mono_ms() < until && !opened) {
                snprintf(user, sizeof(user), "%d", 100 + u++);
                st = sk_test_http(port, "POST", path, user, NULL, body, sizeof(body));
                ck_assert_msg(st == 202 || st == 503, "status %d", st);
                opened = sk_test_scrape(port, "seckill_front_redis_breaker_open") == 1;
        }
        ck_assert_msg(opened, "a slow Redis never opened the breaker (log %s)", log);
        snprintf(user, sizeof(user), "%d", 100 + u++);
        ck_assert_int_eq(sk_test_http(port, "POST", path, user, NULL, body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
        ck_assert_str_eq(cause, "redis");
        atomic_store(&sl.stop, 1);
        pthread_join(th, NULL);
        /* Opened for slowness (no failure needed), logged once. */
        {
                char line[4096];
                int opens = 0, slow = 0;

                f = fopen(log, "r");
                ck_assert(f != NULL);
                while (fgets(line, sizeof(line), f)) {
                        if (strstr(line, "event=redis_breaker_open")) {
                                opens++;
                                slow += strstr(line, "why=slow") != NULL;
                        }
                }
                fclose(f);
                ck_assert_int_eq(opens, 1);
                ck_assert_int_eq(slow, 1);
        }
        rec_ms = wait_202(port, path, 800000, 15000);
        fprintf(stderr, "0411: slow Redis: %d purchases before the opening; 202 again %lld ms after "
                "the sleeps stopped\n", u, (long long)rec_ms);
        ck_assert_int_ge(rec_ms, 0);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_front_redis_breaker_open"), 0);
        ck_assert_int_eq(sk_test_stop(pid, 40), 0);
}
END_TEST

static void setup(void)
{
        static const char *const extra[] = { "--enable-debug-command", "yes", NULL };

        sk_test_fix_setup("frontbrk", &(sk_test_fix_opts_t){ .no_topics = 1, .private_redis = 1,
                                                             .redis_args = extra });
}

int main(void)
{
        Suite *s = suite_create("front_breaker");
        TCase *tc = tcase_create("breaker");

        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, freeze_opens_breaker_without_stall);
        tcase_add_test(tc, slow_redis_opens_breaker);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
