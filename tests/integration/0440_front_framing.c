/* 0440_front_framing.c: the framing and byte rules of DESIGN.md 15 "Hardening rules"
 * against a real front (libmicrohttpd 0.9.75 underneath). Each refused request gets
 * exactly one answer, 400/10001, and the connection is closed, with Redis untouched:
 * - two Content-Length headers (libmicrohttpd framed by the first, so the bytes after
 *   "Content-Length: 0" were read as a second request), a Content-Length with a leading
 *   zero, a Transfer-Encoding other than chunked (on the payment route libmicrohttpd
 *   waited for the close and never answered), Transfer-Encoding with Content-Length;
 * - a NUL in the last header line ("X-User-Id: 70\0 0008" bought as user 70), after
 *   more than 256 bytes of a line, in the path, in the query, in the method; a bare LF
 *   ending a line the front reads; a folded line that libmicrohttpd merges into the
 *   name of a header the front reads ("X-User-I: 70" + " d" bought as user 70).
 * A Content-Length that is not digits is answered 400 and closed by libmicrohttpd itself
 * (docs/OPERATIONS.md "Security"). Clean requests, pipelined on one connection, and a
 * chunked payment callback still pass the framing. */
#include <sys/stat.h>
#include <unistd.h>

#include "sk_test.h"

static char keys_path[256];

static pid_t start_front(int port, const char *tag)
{
        char log[256], env_keys[300];
        const char *env[] = { env_keys, NULL };
        pid_t pid;

        snprintf(env_keys, sizeof(env_keys), "SECKILL_PAYMENT_KEYS_FILE=%s", keys_path);
        sk_test_log_path(log, sizeof(log), "front_0440%s", tag);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        return pid;
}

/* How many status lines @p resp holds. */
static int status_lines(const char *resp)
{
        int n = 0;
        const char *p = resp;

        while ((p = strstr(p, "HTTP/1.1 ")) != NULL) {
                n++;
                p += 9;
        }
        return n;
}

/* Send @p len raw bytes; assert one answer, @p want, closed by the front (read up to EOF
 * well before the client's 30 s timeout), and, for a JSON answer, code 10001. */
static void refused(int port, const char *req, size_t len, int want, int json, const char *what)
{
        char resp[8192], code[32] = "";
        int64_t t0 = sk_mono_ms();
        int st = sk_test_http_raw(port, req, len, resp, sizeof(resp));

        ck_assert_msg(st == want, "%s: status %d, want %d: %s", what, st, want, resp);
        ck_assert_msg(sk_mono_ms() - t0 < 20000, "%s: the connection was not closed", what);
        ck_assert_msg(status_lines(resp) == 1, "%s: %d status lines: %s", what, status_lines(resp), resp);
        ck_assert_msg(strstr(resp, "\r\nConnection: close\r\n") != NULL, "%s: not closed: %s", what, resp);
        if (json) {
                sk_test_json_field(sk_test_resp_body(resp), "code", code, sizeof(code));
                ck_assert_msg(!strcmp(code, "10001"), "%s: code %s", what, code);
        }
}

START_TEST(ambiguous_framing_is_one_400_and_closed)
{
        static const char *const bad[] = {
                /* libmicrohttpd took the first: "hello" became a second request. */
                "POST /api/v1/orders/1/cancel HTTP/1.1\r\nHost: x\r\nX-User-Id: 5\r\n"
                "Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
                "POST /api/v1/orders/1/cancel HTTP/1.1\r\nHost: x\r\nX-User-Id: 5\r\n"
                "Content-Length: 00\r\n\r\n",
                "POST /api/v1/payments/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\n\r\n"
                "{\"a\":1}",
                "POST /api/v1/orders/1/cancel HTTP/1.1\r\nHost: x\r\nX-User-Id: 5\r\n"
                "Transfer-Encoding: gzip\r\n\r\n",
                /* The payment route takes a body: libmicrohttpd waited for the close. */
                "POST /api/v1/payments/callback HTTP/1.1\r\nHost: x\r\n"
                "Transfer-Encoding: gzip\r\n\r\n",
                "POST /api/v1/payments/callback HTTP/1.1\r\nHost: x\r\n"
                "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                "POST /api/v1/payments/callback HTTP/1.1\r\nHost: x\r\n"
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "POST /api/v1/payments/callback HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        };
        static const char not_digits[] = "POST /api/v1/orders/1/cancel HTTP/1.1\r\nHost: x\r\n"
                                         "X-User-Id: 5\r\nContent-Length: -1\r\n\r\n";
        static const char chunked[] = "POST /api/v1/payments/callback HTTP/1.1\r\nHost: x\r\n"
                                      "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      "2\r\n{}\r\n0\r\n\r\n";
        int port = sk_test_free_port();
        char resp[8192];
        size_t i;
        pid_t pid = start_front(port, "a");

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char what[32];

                snprintf(what, sizeof(what), "framing case %zu", i);
                refused(port, bad[i], strlen(bad[i]), 400, 1, what);
        }
        /* Not digits: libmicrohttpd's own 400, and the connection closed. */
        ck_assert_int_eq(sk_test_http_raw(port, not_digits, strlen(not_digits), resp, sizeof(resp)),
                         400);
        /* A chunked payment callback passes the framing (refused later: no signature). */
        ck_assert_int_eq(sk_test_http_raw(port, chunked, strlen(chunked), resp, sizeof(resp)), 401);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

START_TEST(hidden_bytes_are_400_and_closed)
{
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        char v[SK_ID_STRLEN], req[2048], resp[8192], long_tail[301];
        char *before, *after;
        size_t n;
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_id_format(vid, v);
        memset(long_tail, 'a', 300);
        long_tail[300] = '\0';
        pid = start_front(port, "b");
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
#define CASE(what, ...)                                                                     \
        do {                                                                                \
                n = (size_t)snprintf(req, sizeof(req), __VA_ARGS__);                        \
                refused(port, req, n, 400, 1, what);                                        \
        } while (0)
        /* The NUL is written as %c with 0, so snprintf's count covers what follows. */
        CASE("NUL in the last header", "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id: 70%c 0008\r\n\r\n", v, 0);
        CASE("NUL after 300 bytes", "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id: 70%c%s\r\nX-Other: 1\r\n\r\n", v, 0, long_tail);
        CASE("NUL in the path", "POST /api/v1/vouchers/%s/seckill%cx HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id: 70\r\n\r\n", v, 0);
        CASE("NUL in the query", "POST /api/v1/vouchers/%s/seckill?a%cb HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id: 70\r\n\r\n", v, 0);
        CASE("NUL in the method", "PO%cST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id: 70\r\n\r\n", 0, v);
        CASE("NUL after the colon", "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id:%c 70\r\n\r\n", v, 0);
        CASE("bare LF", "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
             "X-User-Id: 70\n\n", v);
        CASE("folded into X-User-Id", "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
             "X-User-I: 70\r\n d\r\nX-Other: 1\r\n\r\n", v);
#undef CASE
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        /* Clean requests pipelined on one connection: both answered, in order; a query
         * and a NUL inside a header the front does not read change nothing. */
        n = (size_t)snprintf(req, sizeof(req),
                             "POST /api/v1/vouchers/%s/seckill?a=1&b=2+3&c HTTP/1.1\r\nHost: x%cz\r\n"
                             "X-User-Id:  71\r\n\r\n"
                             "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
                             "X-User-Id: 72\r\nConnection: close\r\n\r\n", v, 0, v);
        ck_assert_int_eq(sk_test_http_raw(port, req, n, resp, sizeof(resp)), 202);
        ck_assert_int_eq(status_lines(resp), 2);
        ck_assert_ptr_nonnull(strstr(strstr(resp, "\r\n\r\n"), "HTTP/1.1 202 "));
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 3);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(before);
        free(after);
}
END_TEST

static char g_dir[64];

static void setup(void)
{
        sk_test_fix_setup("framing", &(sk_test_fix_opts_t){ .no_topics = 1 });
        snprintf(g_dir, sizeof(g_dir), "/tmp/sk_0440.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(g_dir));
        snprintf(keys_path, sizeof(keys_path), "%s/payment.keys", g_dir);
        ck_assert_int_eq(sk_test_write_file(keys_path, "0440-framing-test-secret-0123456789\n"), 0);
        chmod(keys_path, 0600);
}

static void teardown(void)
{
        sk_test_fix_teardown();
        unlink(keys_path);
        rmdir(g_dir);
}

int main(void)
{
        Suite *s = suite_create("front_framing");
        TCase *tc = tcase_create("framing");

        tcase_set_timeout(tc, 240);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, ambiguous_framing_is_one_400_and_closed);
        tcase_add_test(tc, hidden_bytes_are_400_and_closed);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
