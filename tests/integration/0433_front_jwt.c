/* 0433_front_jwt.c: SECKILL_AUTH=jwt against a real front (DESIGN.md 15 "Buyer
 * identity"). A JWKS of three keys (RS256, ES256, HS256) is generated for the run; a
 * valid token buys (202) and orders/me answers for the token's sub, whatever X-User-Id
 * says (ignored); missing, expired, badly signed, wrong-iss/aud, alg-confused tokens
 * and X-User-Id alone are 401/10007 with `WWW-Authenticate: Bearer` and leave Redis as
 * it was; SIGHUP after the IdP retired a key revokes its (cached) tokens; a broken key
 * file keeps the old keys and counts seckill_jwt_key_reload_failures_total. */
#include <time.h>

#include "sk_test.h"

#define ISS ",\"iss\":\"https://idp.test\",\"aud\":[\"shop\",\"seckill\"]"

static char g_dir[64], g_keys[128];
static sk_test_jwk_t *g_rs, *g_es, *g_hs;

static void write_keys(sk_test_jwk_t *const *keys, size_t n)
{
        char *json = sk_test_jwks_json(keys, n), tmp[160];

        ck_assert_ptr_nonnull(json);
        snprintf(tmp, sizeof(tmp), "%s.tmp", g_keys);
        ck_assert_int_eq(sk_test_write_file(tmp, json), 0);
        ck_assert_int_eq(rename(tmp, g_keys), 0);
        free(json);
}

/* A 401/10007 with WWW-Authenticate: Bearer, for @p what. */
static void assert_401(int status, const char *resp, const char *what)
{
        char code[32] = "";

        ck_assert_msg(status == 401, "%s: status %d, want 401 (%s)", what, status, resp);
        ck_assert_int_eq(sk_test_json_field(sk_test_resp_body(resp), "code", code, sizeof(code)), 0);
        ck_assert_msg(!strcmp(code, "10007"), "%s: code %s", what, code);
        ck_assert_msg(strstr(resp, "\r\nWWW-Authenticate: Bearer\r\n") != NULL,
                      "%s: no WWW-Authenticate: Bearer in %s", what, resp);
}

/* orders/me of @p vid with @p token: its state (NONE, PENDING, ...) into @p state. */
static int orders_me(int port, const char *path, const char *token, char *state, size_t size)
{
        char resp[4096];
        int st = sk_test_http_bearer(port, "GET", path, token, NULL, resp, sizeof(resp));

        state[0] = '\0';
        if (st == 200)
                sk_test_json_field(sk_test_resp_body(resp), "state", state, size);
        return st;
}

/* Each way a request without a good token is refused (401/10007, assert_401): an
 * X-User-Id alone, expired, wrong issuer, no audience, HS256 keyed by the RSA public
 * PEM, alg none, a non-canonical sub, garbage, Basic, two Authorization headers.
 * @p rs_tok is a valid token; @p now the wall clock (s). */
static void refusals(int port, const char *path, const char *mepath, const char *rs_tok, int64_t now)
{
        char resp[4096], pay[512], extra[4096], *tok, *pem;

        assert_401(sk_test_http_bearer(port, "POST", path, NULL, "X-User-Id: 9001\r\n", resp, sizeof(resp)),
                   resp, "X-User-Id alone");
        assert_401(sk_test_http_bearer(port, "GET", mepath, NULL, "X-User-Id: 9001\r\n", resp, sizeof(resp)),
                   resp, "orders/me with X-User-Id alone");
        tok = sk_test_jwt_mint(g_rs, 9001, now - 120, ISS);
        assert_401(sk_test_http_bearer(port, "POST", path, tok, NULL, resp, sizeof(resp)), resp, "expired");
        free(tok);
        tok = sk_test_jwt_mint(g_rs, 9001, now + 600, ",\"iss\":\"https://evil.test\",\"aud\":\"seckill\"");
        assert_401(sk_test_http_bearer(port, "POST", path, tok, NULL, resp, sizeof(resp)), resp, "wrong iss");
        free(tok);
        tok = sk_test_jwt_mint(g_rs, 9001, now + 600, ",\"iss\":\"https://idp.test\"");
        assert_401(sk_test_http_bearer(port, "POST", path, tok, NULL, resp, sizeof(resp)), resp, "no aud");
        free(tok);
        pem = sk_test_jwk_public_pem(g_rs);
        snprintf(pay, sizeof(pay), "{\"sub\":\"9001\",\"exp\":%lld" ISS "}", (long long)now + 600);
        tok = sk_test_jwt_hs256((unsigned char *)pem, strlen(pem), "{\"alg\":\"HS256\",\"kid\":\"rs1\"}", pay);
        assert_401(sk_test_http_bearer(port, "POST", path, tok, NULL, resp, sizeof(resp)), resp,
                   "HS256 keyed by the RSA public PEM");
        free(tok);
        free(pem);
        tok = sk_test_jwt_raw("{\"alg\":\"none\",\"kid\":\"rs1\"}", pay, "");
        assert_401(sk_test_http_bearer(port, "POST", path, tok, NULL, resp, sizeof(resp)), resp, "alg none");
        free(tok);
        snprintf(pay, sizeof(pay), "{\"sub\":\"009001\",\"exp\":%lld" ISS "}", (long long)now + 600);
        tok = sk_test_jwt_sign(g_es, "{\"alg\":\"ES256\",\"kid\":\"es1\"}", pay);
        assert_401(sk_test_http_bearer(port, "POST", path, tok, NULL, resp, sizeof(resp)), resp, "sub 009001");
        free(tok);
        assert_401(sk_test_http_bearer(port, "POST", path, "abc.def.ghi", NULL, resp, sizeof(resp)), resp,
                   "garbage");
        assert_401(sk_test_http_bearer(port, "POST", path, NULL, "Authorization: Basic dXNlcjpwYXNz\r\n", resp,
                                       sizeof(resp)), resp, "Basic");
        snprintf(extra, sizeof(extra), "Authorization: Bearer %s\r\n", rs_tok);
        assert_401(sk_test_http_bearer(port, "POST", path, rs_tok, extra, resp, sizeof(resp)), resp,
                   "two Authorization headers");
}

START_TEST(jwt_identity)
{
        sk_test_jwk_t *all[3] = { g_rs, g_es, g_hs }, *no_rs[2] = { g_es, g_hs };
        char log[256], env_keys[200], resp[4096], path[160], mepath[160], v[SK_ID_STRLEN], state[32];
        const char *env[] = { "SECKILL_AUTH=jwt", env_keys, "SECKILL_JWT_ISSUER=https://idp.test",
                              "SECKILL_JWT_AUDIENCE=seckill", NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port(), i;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), now = (int64_t)time(NULL);
        char *before, *after;
        char *rs_tok = sk_test_jwt_mint(g_rs, 9001, now + 3600, ISS);
        char *es_tok = sk_test_jwt_mint(g_es, 9002, now + 3600, ISS);
        char *hs_tok = sk_test_jwt_mint(g_hs, 9003, now + 3600, ISS);
        pid_t pid;

        write_keys(all, 3);
        snprintf(env_keys, sizeof(env_keys), "SECKILL_JWT_KEYS_FILE=%s", g_keys);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, sizeof(log), "front_0433");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        snprintf(mepath, sizeof(mepath), "/api/v1/vouchers/%s/orders/me", v);

        /* Refusals: 401/10007 + WWW-Authenticate: Bearer, Redis untouched. */
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
        refusals(port, path, mepath, rs_tok, now);
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        free(before);
        free(after);

        /* A valid token buys; X-User-Id 9002 next to it is ignored: the buyer is 9001. */
        ck_assert_int_eq(sk_test_http_bearer(port, "POST", path, rs_tok, "X-User-Id: 9002\r\n", resp,
                                             sizeof(resp)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        ck_assert_int_eq(orders_me(port, mepath, rs_tok, state, sizeof(state)), 200);
        ck_assert_str_ne(state, "NONE");
        ck_assert_int_eq(orders_me(port, mepath, es_tok, state, sizeof(state)), 200);
        ck_assert_str_eq(state, "NONE");        /* 9002 bought nothing */
        ck_assert_int_eq(orders_me(port, mepath, hs_tok, state, sizeof(state)), 200);
        ck_assert_str_eq(state, "NONE");
        /* Same token again: the cached identity, and 9001 already bought. */
        ck_assert_int_eq(sk_test_http_bearer(port, "POST", path, rs_tok, NULL, resp, sizeof(resp)), 409);

        /* The IdP retires rs1: after SIGHUP its tokens (cached above) are refused. */
        write_keys(no_rs, 2);
        ck_assert_int_eq(kill(pid, SIGHUP), 0);
        for (i = 0; i < 50 && orders_me(port, mepath, rs_tok, state, sizeof(state)) == 200; i++)
                usleep(100 * 1000);
        assert_401(sk_test_http_bearer(port, "GET", mepath, rs_tok, NULL, resp, sizeof(resp)), resp,
                   "token of a retired key");
        ck_assert_int_eq(orders_me(port, mepath, es_tok, state, sizeof(state)), 200);

        /* A broken key file: the reload fails, is counted, and the old keys stay. */
        ck_assert_int_eq(sk_test_write_file(g_keys, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"\"}]}"), 0);
        ck_assert_int_eq(kill(pid, SIGHUP), 0);
        for (i = 0; i < 50 && sk_test_scrape(port, "seckill_jwt_key_reload_failures_total") < 1; i++)
                usleep(100 * 1000);
        ck_assert_int_eq(sk_test_scrape(port, "seckill_jwt_key_reload_failures_total"), 1);
        ck_assert_int_eq(orders_me(port, mepath, hs_tok, state, sizeof(state)), 200);
        ck_assert_int_eq(sk_test_file_count(log, "event=jwt_keys_reload_failed"), 1);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(rs_tok);
        free(es_tok);
        free(hs_tok);
}
END_TEST

START_TEST(jwt_mode_needs_a_good_key_file)
{
        char log[256], env_keys[200];
        const char *env[] = { "SECKILL_AUTH=jwt", env_keys, "SECKILL_JWT_ISSUER=https://idp.test",
                              "SECKILL_JWT_AUDIENCE=seckill", NULL };
        pid_t pid;

        /* A key file that does not load: a configuration error, exit 2. */
        ck_assert_int_eq(sk_test_write_file(g_keys, "{\"keys\":[]}"), 0);
        snprintf(env_keys, sizeof(env_keys), "SECKILL_JWT_KEYS_FILE=%s", g_keys);
        sk_test_log_path(log, sizeof(log), "front_0433b");
        pid = sk_test_front_start(&sk_test_fx.conf, sk_test_free_port(), env, log);
        ck_assert_int_eq(sk_test_wait_exit(pid, 30), 2);
        ck_assert_int_ge(sk_test_file_count(log, "SECKILL_JWT_KEYS_FILE"), 1);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("frontjwt", &(sk_test_fix_opts_t){ .no_topics = 1 });
        snprintf(g_dir, sizeof(g_dir), "/tmp/sk_0433.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(g_dir));
        snprintf(g_keys, sizeof(g_keys), "%s/jwks.json", g_dir);
        g_rs = sk_test_jwk_new(SK_JWT_RS256, "rs1", 2048);
        g_es = sk_test_jwk_new(SK_JWT_ES256, "es1", 0);
        g_hs = sk_test_jwk_new(SK_JWT_HS256, "hs1", 0);
        ck_assert(g_rs && g_es && g_hs);
}

static void teardown(void)
{
        char tmp[160];
        sk_test_fix_teardown();
        unlink(g_keys);
        snprintf(tmp, sizeof(tmp), "%s.tmp", g_keys);
        unlink(tmp);
        rmdir(g_dir);
        sk_test_jwk_free(g_rs);
        sk_test_jwk_free(g_es);
        sk_test_jwk_free(g_hs);
}

int main(void)
{
        Suite *s = suite_create("front_jwt");
        TCase *tc = tcase_create("jwt");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, jwt_identity);
        tcase_add_test(tc, jwt_mode_needs_a_good_key_file);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
