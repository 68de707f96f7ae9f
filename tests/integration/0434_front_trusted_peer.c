/* 0434_front_trusted_peer.c: SECKILL_AUTH=trusted-header (DESIGN.md 15) and strict
 * bytes (DESIGN.md 3) against a real front. X-User-Id is believed only from a peer in
 * SECKILL_TRUSTED_PROXIES: with a list that leaves out 127.0.0.1, a loopback client is
 * 401/10007 + WWW-Authenticate: Bearer whatever it sends. A front on a non-loopback
 * TCP address with the default list (unix only) refuses to start (exit 2: no trusted peer
 * can reach it); naming the gateway starts it.
 * A NUL, another control byte or a byte >= 0x80 in X-User-Id, Authorization or the path
 * is 400/10001 with Redis untouched: before, "X-User-Id: 70\0..." bought as user 70. */
#include "sk_test.h"

static pid_t start_front(int port, const char *const *env, const char *tag)
{
        char log[256];
        pid_t pid;

        sk_test_log_path(log, sizeof(log), "front_0434%s", tag);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        return pid;
}

/* A raw request of @p len bytes; the status, and the answer's code into @p code. */
static int raw(int port, const char *req, size_t len, char *code, size_t size)
{
        char resp[4096];
        int st = sk_test_http_raw(port, req, len, resp, sizeof(resp));

        code[0] = '\0';
        sk_test_json_field(sk_test_resp_body(resp), "code", code, size);
        return st;
}

START_TEST(strict_bytes_are_400)
{
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        char v[SK_ID_STRLEN], req[512], code[32], *before, *after;
        /* Header lines with a bad byte (the request line and the rest are added). */
#define H(lit) { lit, sizeof(lit) - 1 }
        static const struct { const char *hdr; size_t len; } bad[] = {
                H("X-User-Id: 70\0" "1\r\n"),         /* NUL: read as "70" before */
                H("X-User-Id: 70\0\r\nX-Trace: 1\r\n"),
                H("Authorization: Bearer x\0y\r\nX-User-Id: 70\r\n"),
                H("X-User-Id: 7\x01" "0\r\n"),
                H("X-User-Id: 7\x80" "0\r\n"),
                H("X-User-Id: 70\r\nAuthorization: Bearer a\x7f" "b\r\n"),
                H("X-User-Id: 70\r\nAuthorization: Bearer \xc3\xa9\r\n"),
        };
#undef H
        size_t i, n;
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_id_format(vid, v);
        pid = start_front(port, NULL, "a");
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                n = (size_t)snprintf(req, sizeof(req),
                                     "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
                                     "Connection: close\r\n", v);
                memcpy(req + n, bad[i].hdr, bad[i].len);
                n += bad[i].len;
                memcpy(req + n, "\r\n", 2);
                n += 2;
                ck_assert_msg(raw(port, req, n, code, sizeof(code)) == 400, "header %zu not 400", i);
                ck_assert_str_eq(code, "10001");
        }
        /* Bytes >= 0x80 and control bytes in the path. */
        n = (size_t)snprintf(req, sizeof(req), "POST /api/v1/vouchers/%s\xc3\xa9/seckill HTTP/1.1\r\n"
                             "Host: x\r\nConnection: close\r\nX-User-Id: 70\r\n\r\n", v);
        ck_assert_int_eq(raw(port, req, n, code, sizeof(code)), 400);
        ck_assert_str_eq(code, "10001");
        n = (size_t)snprintf(req, sizeof(req), "GET /api/v1/orders/1\x01 HTTP/1.1\r\n"
                             "Host: x\r\nConnection: close\r\nX-User-Id: 70\r\n\r\n");
        ck_assert_int_eq(raw(port, req, n, code, sizeof(code)), 400);
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        /* The same purchase with clean bytes buys. */
        n = (size_t)snprintf(req, sizeof(req), "POST /api/v1/vouchers/%s/seckill HTTP/1.1\r\nHost: x\r\n"
                             "Connection: close\r\nX-User-Id: 70\r\n\r\n", v);
        ck_assert_int_eq(raw(port, req, n, code, sizeof(code)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(before);
        free(after);
}
END_TEST

START_TEST(untrusted_peer_is_401)
{
        const char *env[] = { "SECKILL_TRUSTED_PROXIES=10.9.9.0/24,192.0.2.7,unix", NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        char v[SK_ID_STRLEN], path[160], resp[4096], code[32];
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_id_format(vid, v);
        pid = start_front(port, env, "b");
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http_bearer(port, "POST", path, NULL, "X-User-Id: 70\r\n", resp,
                                             sizeof(resp)), 401);
        ck_assert_int_eq(sk_test_json_field(sk_test_resp_body(resp), "code", code, sizeof(code)), 0);
        ck_assert_str_eq(code, "10007");
        ck_assert_ptr_nonnull(strstr(resp, "\r\nWWW-Authenticate: Bearer\r\n"));
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", v);
        ck_assert_int_eq(sk_test_http_bearer(port, "GET", path, NULL, "X-User-Id: 70\r\n", resp,
                                             sizeof(resp)), 401);
        /* Even a malformed X-User-Id from there is 401, not 400: the peer decides first. */
        ck_assert_int_eq(sk_test_http_bearer(port, "GET", path, NULL, "X-User-Id: 007\r\n", resp,
                                             sizeof(resp)), 401);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

START_TEST(default_list_on_a_tcp_listener_refuses_to_start)
{
        char log[256], addr[64];
        int port = sk_test_free_port();
        /* SECKILL_TRUSTED_PROXIES unset: its default, unix only (DESIGN.md 15). */
        const char *env[] = { addr, "SECKILL_TRUSTED_PROXIES", NULL };
        const char *env_ok[] = { addr, "SECKILL_TRUSTED_PROXIES=127.0.0.1/32", NULL };
        pid_t pid;

        snprintf(addr, sizeof(addr), "SECKILL_HTTP_ADDR=0.0.0.0:%d", port);
        sk_test_log_path(log, sizeof(log), "front_0434c");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_int_eq(sk_test_wait_exit(pid, 30), 2);
        ck_assert_int_ge(sk_test_file_count(log, "none of the trusted peers can reach this listener"), 1);
        /* Naming the gateway is the supported way: it starts. */
        pid = start_front(port, env_ok, "d");
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontpeer", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_trusted_peer");
        TCase *tc = tcase_create("peer");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, strict_bytes_are_400);
        tcase_add_test(tc, untrusted_peer_is_401);
        tcase_add_test(tc, default_list_on_a_tcp_listener_refuses_to_start);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
