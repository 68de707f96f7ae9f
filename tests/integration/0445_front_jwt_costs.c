/* 0445_front_jwt_costs.c: what hostile tokens may cost a jwt front (DESIGN.md 15 "Cost of
 * hostile input"), against a real front:
 * - an RSA key above 4096 bits in the JWKS stops the start (exit 2, the line names the
 *   size and SECKILL_JWT_RSA_MAX_BITS; before, up to 8192 bits were taken); with
 *   SECKILL_JWT_RSA_MAX_BITS raised it starts and its tokens buy;
 * - signature work on tokens not in the cache is limited per client address as the
 *   trusted gateway forwards it (X-Forwarded-For): with SECKILL_JWT_VERIFY_RATE=2, one
 *   client sending 40 made-up tokens gets 429 + Retry-After for most of them (counted in
 *   seckill_jwt_verify_limited_total), while another client behind the same gateway
 *   buys at once, and the limited client's cached token still answers; requests from
 *   the gateway without a forwarded address are never limited (never per gateway). */
#include <time.h>
#include <unistd.h>

#include "sk_test.h"

#define CLAIMS ",\"iss\":\"https://idp.test\",\"aud\":\"seckill\""

static char g_dir[64], g_keys[128];

static pid_t start_front(int port, const char *const *extra, const char *tag, int want_ready)
{
        char log[256], env_keys[200];
        const char *env[12] = { "SECKILL_AUTH=jwt", env_keys, "SECKILL_JWT_ISSUER=https://idp.test",
                                "SECKILL_JWT_AUDIENCE=seckill" };
        int n = 4;
        pid_t pid;

        snprintf(env_keys, sizeof(env_keys), "SECKILL_JWT_KEYS_FILE=%s", g_keys);
        for (; extra && *extra && n < 11; extra++)
                env[n++] = *extra;
        env[n] = NULL;
        sk_test_log_path(log, sizeof(log), "front_0445%s", tag);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        if (want_ready)
                ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        return pid;
}

START_TEST(rsa_keys_above_4096_bits_need_configuring)
{
        sk_test_jwk_t *big = sk_test_jwk_new(SK_JWT_RS256, "big", 4608);
        const char *raise[] = { "SECKILL_JWT_RSA_MAX_BITS=4608", NULL };
        char *json, log[256], body[2048];
        int port = sk_test_free_port();
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), now = (int64_t)time(NULL);
        char path[160], v[SK_ID_STRLEN], *tok;
        pid_t pid;

        ck_assert_ptr_nonnull(big);
        ck_assert_ptr_nonnull(json = sk_test_jwks_json(&big, 1));
        ck_assert_int_eq(sk_test_write_file(g_keys, json), 0);
        free(json);
        pid = start_front(sk_test_free_port(), NULL, "a", 0);
        ck_assert_int_eq(sk_test_wait_exit(pid, 30), 2);
        sk_test_log_path(log, sizeof(log), "front_0445a");
        ck_assert_int_ge(sk_test_file_count(log, "RSA key of 4608 bits (RS256 here: 2048..4096; "
                                                 "SECKILL_JWT_RSA_MAX_BITS allows more)"), 1);
        /* Raised on purpose: it starts, and the big key's tokens buy. */
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        pid = start_front(port, raise, "b", 1);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        tok = sk_test_jwt_mint(big, 4501, now + 3600, CLAIMS);
        ck_assert_int_eq(sk_test_http_bearer(port, "POST", path, tok, NULL, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(tok);
        sk_test_jwk_free(big);
}
END_TEST

START_TEST(uncached_verifications_limited_per_client)
{
        sk_test_jwk_t *rs = sk_test_jwk_new(SK_JWT_RS256, "rs1", 0);
        const char *rate[] = { "SECKILL_JWT_VERIFY_RATE=2", NULL };
        char *json, resp[4096], path[160], mepath[160], v[SK_ID_STRLEN], bad[64];
        int port = sk_test_free_port(), i, limited = 0, unauthorized = 0, st;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), now = (int64_t)time(NULL);
        char *tok_a, *tok_b;
        long long counted;
        pid_t pid;

        ck_assert_ptr_nonnull(rs);
        ck_assert_ptr_nonnull(json = sk_test_jwks_json(&rs, 1));
        ck_assert_int_eq(sk_test_write_file(g_keys, json), 0);
        free(json);
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        snprintf(mepath, sizeof(mepath), "/api/v1/vouchers/%s/orders/me", v);
        tok_a = sk_test_jwt_mint(rs, 4601, now + 3600, CLAIMS);
        tok_b = sk_test_jwt_mint(rs, 4602, now + 3600, CLAIMS);
        pid = start_front(port, rate, "c", 1);
        /* Client A's own token, verified once (cached from then on). */
        ck_assert_int_eq(sk_test_http_bearer(port, "GET", mepath, tok_a, "X-Forwarded-For: 203.0.113.7\r\n",
                                             resp, sizeof(resp)), 200);
        /* Client A sends made-up tokens through the gateway (127.0.0.1, trusted). */
        for (i = 0; i < 40; i++) {
                snprintf(bad, sizeof(bad), "%s.x%d", "eyJhbGciOiJSUzI1NiJ9.e30", i);
                st = sk_test_http_bearer(port, "POST", path, bad, "X-Forwarded-For: 198.51.100.1, 203.0.113.7\r\n",
                                         resp, sizeof(resp));
                if (st == 429) {
                        limited++;
                        ck_assert_ptr_nonnull(strstr(resp, "\r\nRetry-After: 1\r\n"));
                } else {
                        ck_assert_int_eq(st, 401);
                        unauthorized++;
                }
        }
        ck_assert_msg(limited >= 20, "limited %d of 40 (401: %d)", limited, unauthorized);
        counted = sk_test_scrape(port, "seckill_jwt_verify_limited_total");
        ck_assert_int_eq(counted, limited);
        /* A is limited; its cached token is not. */
        ck_assert_int_eq(sk_test_http_bearer(port, "GET", mepath, tok_a, "X-Forwarded-For: 203.0.113.7\r\n",
                                             resp, sizeof(resp)), 200);
        /* Client B, behind the same gateway: buys at once. */
        ck_assert_int_eq(sk_test_http_bearer(port, "POST", path, tok_b, "X-Forwarded-For: 203.0.113.8\r\n",
                                             resp, sizeof(resp)), 202);
        /* The gateway itself, no forwarded address: never limited (401 each). */
        for (i = 0; i < 20; i++) {
                snprintf(bad, sizeof(bad), "%s.y%d", "eyJhbGciOiJSUzI1NiJ9.e30", i);
                ck_assert_int_eq(sk_test_http_bearer(port, "POST", path, bad, NULL, resp, sizeof(resp)), 401);
        }
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 4);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(tok_a);
        free(tok_b);
        sk_test_jwk_free(rs);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("jwtcost", &(sk_test_fix_opts_t){ .no_topics = 1 });
        snprintf(g_dir, sizeof(g_dir), "/tmp/sk_0445.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(g_dir));
        snprintf(g_keys, sizeof(g_keys), "%s/jwks.json", g_dir);
}

static void teardown(void)
{
        sk_test_fix_teardown();
        unlink(g_keys);
        rmdir(g_dir);
}

int main(void)
{
        Suite *s = suite_create("front_jwt_costs");
        TCase *tc = tcase_create("jwt_costs");

        tcase_set_timeout(tc, 180);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, rsa_keys_above_4096_bits_need_configuring);
        tcase_add_test(tc, uncached_verifications_limited_per_client);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
