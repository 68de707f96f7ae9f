/* check_jwt_auth.c: the verified-token cache and key rotation of DESIGN.md 15
 * (common/auth: sk/jwt_cache.h, sk/jwt_auth.h): the cache answers only for the current
 * key-set generation and until exp + skew, evicts its oldest entry; a reload that drops
 * a key revokes that key's cached tokens at once; the same bytes keep the generation; a
 * failed reload keeps the old keys and is reported; an unknown kid re-reads the file at
 * most once per period. Key files live in a temporary directory; no network. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk_test_jwt.h"
#include "sk/jwt_auth.h"
#include "sk/jwt_cache.h"

static sk_test_jwk_t *ka, *kb, *kc;     /* kids "a" (RS256), "b" (ES256), "c" (HS256) */
static char dir[64], path[128];
static int64_t now;
static int reload_ok, reload_failed;
static char last_reason[512];

static void on_reload(void *arg, int ok, uint64_t generation, size_t nkeys, const char *reason)
{
        (void)arg;
        (void)generation;
        (void)nkeys;
        if (ok) {
                reload_ok++;
        } else {
                reload_failed++;
                snprintf(last_reason, sizeof(last_reason), "%s", reason);
        }
}

/* Write the JWKS of @p n keys to path, with a new mtime. */
static void write_keys(sk_test_jwk_t *const *keys, size_t n)
{
        char *json = sk_test_jwks_json(keys, n), tmp[160];

        ck_assert_ptr_nonnull(json);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        ck_assert_int_eq(sk_test_write_file(tmp, json), 0);
        ck_assert_int_eq(rename(tmp, path), 0); /* a new inode: the change is seen */
        free(json);
}

static sk_jwt_auth_t *auth_new(size_t cache_max)
{
        sk_jwt_auth_opts_t o = { .keys_file = path, .cache_max = cache_max, .skew_s = 30,
                                 .recheck_s = 10, .on_reload = on_reload };
        char errstr[512] = "";
        sk_jwt_auth_t *a = sk_jwt_auth_new(&o, errstr, sizeof(errstr));

        ck_assert_msg(a != NULL, "%s", errstr);
        reload_ok = reload_failed = 0;
        return a;
}

static sk_jwt_status_t check(sk_jwt_auth_t *a, const char *tok, int64_t at_s, int64_t *user)
{
        char errstr[256];
        int64_t u = 0;
        sk_jwt_status_t st = sk_jwt_auth_verify(a, tok, strlen(tok), at_s, &u, errstr, sizeof(errstr));

        if (user)
                *user = u;
        return st;
}

static void setup(void)
{
        sk_test_jwk_t *ab[] = { ka, kb };

        snprintf(dir, sizeof(dir), "/tmp/check_jwt_auth.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/jwks.json", dir);
        write_keys(ab, 2);
        now = (int64_t)time(NULL);
}

static void teardown(void)
{
        char tmp[160];

        unlink(path);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        unlink(tmp);
        rmdir(dir);
}

/* ------------------------------------------------------------------- cache ---- */

START_TEST(cache_generation_expiry_eviction)
{
        sk_jwt_cache_t *c = sk_jwt_cache_new(2);
        unsigned char k1[32], k2[32], k3[32];
        int64_t user = 0, exp = 0;

        sk_jwt_cache_key("t1", 2, k1);
        sk_jwt_cache_key("t2", 2, k2);
        sk_jwt_cache_key("t3", 2, k3);
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 1, 100, 30, &user, NULL), 0);
        sk_jwt_cache_put(c, k1, 11, 1000, 1);
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 1, 100, 30, &user, &exp), 1);
        ck_assert_int_eq(user, 11);
        ck_assert_int_eq(exp, 1000);
        /* Another generation: a miss. Up to exp + skew: a hit; at exp + skew: a miss. */
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 2, 100, 30, &user, NULL), 0);
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 1, 1029, 30, &user, NULL), 1);
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 1, 1030, 30, &user, NULL), 0);
        /* Full at 2: the third put evicts the oldest (t1). */
        sk_jwt_cache_put(c, k2, 22, 1000, 1);
        sk_jwt_cache_put(c, k3, 33, 1000, 1);
        ck_assert_uint_eq(sk_jwt_cache_size(c), 2);
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 1, 100, 30, &user, NULL), 0);
        ck_assert_int_eq(sk_jwt_cache_get(c, k2, 1, 100, 30, &user, NULL), 1);
        ck_assert_int_eq(user, 22);
        ck_assert_int_eq(sk_jwt_cache_get(c, k3, 1, 100, 30, &user, NULL), 1);
        ck_assert_int_eq(user, 33);
        sk_jwt_cache_destroy(c);
        /* A cache of 0 entries stores nothing. */
        c = sk_jwt_cache_new(0);
        sk_jwt_cache_put(c, k1, 11, 1000, 1);
        ck_assert_int_eq(sk_jwt_cache_get(c, k1, 1, 100, 30, &user, NULL), 0);
        sk_jwt_cache_destroy(c);
}
END_TEST

START_TEST(cached_token_answers_until_exp_plus_skew)
{
        sk_jwt_auth_t *a = auth_new(16);
        char *tok = sk_test_jwt_mint(ka, 501, now + 60, NULL);
        int64_t user = 0;

        ck_assert_int_eq(check(a, tok, now, &user), SK_JWT_OK);
        ck_assert_int_eq(user, 501);
        ck_assert_uint_eq(sk_jwt_auth_cached(a), 1);
        ck_assert_int_eq(check(a, tok, now + 60 + 29, &user), SK_JWT_OK);
        ck_assert_int_eq(check(a, tok, now + 60 + 30, &user), SK_JWT_EEXPIRED);
        free(tok);
        sk_jwt_auth_destroy(a);
}
END_TEST

/* ---------------------------------------------------------------- rotation ---- */

START_TEST(reload_dropping_a_key_revokes_its_cached_tokens)
{
        sk_jwt_auth_t *a = auth_new(16);
        sk_test_jwk_t *only_b[] = { kb };
        char *ta = sk_test_jwt_mint(ka, 601, now + 600, NULL), *tb = sk_test_jwt_mint(kb, 602, now + 600, NULL);
        uint64_t gen = sk_jwt_auth_generation(a);

        ck_assert_int_eq(check(a, ta, now, NULL), SK_JWT_OK);
        ck_assert_int_eq(check(a, tb, now, NULL), SK_JWT_OK);
        ck_assert_uint_eq(sk_jwt_auth_cached(a), 2);
        /* SIGHUP after the IdP retired key a. */
        write_keys(only_b, 1);
        ck_assert_int_eq(sk_jwt_auth_reload(a, 1), 1);
        ck_assert_uint_eq(sk_jwt_auth_generation(a), gen + 1);
        ck_assert_int_eq(reload_ok, 1);
        /* The token is still in the cache, but its generation is gone: refused now. */
        ck_assert_int_eq(check(a, ta, now + 1, NULL), SK_JWT_EKID);
        ck_assert_int_eq(check(a, tb, now + 1, NULL), SK_JWT_OK);
        free(ta);
        free(tb);
        sk_jwt_auth_destroy(a);
}
END_TEST

START_TEST(same_bytes_keep_the_generation)
{
        sk_jwt_auth_t *a = auth_new(16);
        sk_test_jwk_t *ab[] = { ka, kb };
        FILE *f;

        ck_assert_int_eq(sk_jwt_auth_reload(a, 1), 0);  /* forced, but nothing changed */
        ck_assert_uint_eq(sk_jwt_auth_generation(a), 1);
        ck_assert_int_eq(sk_jwt_auth_reload(a, 0), 0);  /* file unchanged: not even read */
        /* Rewritten (same content, new inode): read, same bytes, same generation. */
        write_keys(ab, 2);
        ck_assert_int_eq(sk_jwt_auth_reload(a, 0), 0);
        ck_assert_uint_eq(sk_jwt_auth_generation(a), 1);
        /* A tick is due only every 10 s. */
        f = fopen(path, "a");
        fputs(" ", f);
        fclose(f);
        ck_assert_int_eq(sk_jwt_auth_tick(a, now), 1);  /* first tick: due, file changed */
        ck_assert_uint_eq(sk_jwt_auth_generation(a), 2);
        f = fopen(path, "a");
        fputs(" ", f);
        fclose(f);
        ck_assert_int_eq(sk_jwt_auth_tick(a, now + 9), 0);      /* not due */
        ck_assert_uint_eq(sk_jwt_auth_generation(a), 2);
        ck_assert_int_eq(sk_jwt_auth_tick(a, now + 10), 1);
        ck_assert_uint_eq(sk_jwt_auth_generation(a), 3);
        sk_jwt_auth_destroy(a);
}
END_TEST

START_TEST(failed_reload_keeps_the_old_keys)
{
        sk_jwt_auth_t *a = auth_new(16);
        char *ta = sk_test_jwt_mint(ka, 701, now + 600, NULL);

        ck_assert_int_eq(sk_test_write_file(path, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"\"}]}"), 0);
        ck_assert_int_eq(sk_jwt_auth_reload(a, 1), -1);
        ck_assert_int_eq(reload_failed, 1);
        ck_assert_ptr_nonnull(strstr(last_reason, path));
        ck_assert_uint_eq(sk_jwt_auth_generation(a), 1);
        ck_assert_int_eq(check(a, ta, now, NULL), SK_JWT_OK);
        /* The broken file is not re-read by the periodic check until it changes again. */
        ck_assert_int_eq(sk_jwt_auth_reload(a, 0), 0);
        ck_assert_int_eq(reload_failed, 1);
        unlink(path);
        ck_assert_int_eq(sk_jwt_auth_reload(a, 1), -1);
        ck_assert_int_eq(reload_failed, 2);
        ck_assert_int_eq(check(a, ta, now, NULL), SK_JWT_OK);
        free(ta);
        sk_jwt_auth_destroy(a);
}
END_TEST

START_TEST(unknown_kid_rereads_at_most_once_per_period)
{
        sk_jwt_auth_t *a = auth_new(16);
        sk_test_jwk_t *abc[] = { ka, kb, kc };
        char *tc = sk_test_jwt_mint(kc, 801, now + 600, NULL);
        char *tz = sk_test_jwt_raw("{\"alg\":\"HS256\",\"kid\":\"z\"}", "{}", "AAAA");
        int64_t user = 0;

        /* The IdP published key c: the first token naming it triggers the re-read. */
        write_keys(abc, 3);
        ck_assert_int_eq(check(a, tc, now, &user), SK_JWT_OK);
        ck_assert_int_eq(user, 801);
        ck_assert_int_eq(reload_ok, 1);
        /* Made-up kids: no more re-reads within 10 s, one after. */
        write_keys(abc, 2);
        ck_assert_int_eq(check(a, tz, now + 5, NULL), SK_JWT_EKID);
        ck_assert_int_eq(reload_ok, 1);
        ck_assert_int_eq(check(a, tz, now + 10, NULL), SK_JWT_EKID);
        ck_assert_int_eq(reload_ok, 2);
        ck_assert_int_eq(check(a, tz, now + 11, NULL), SK_JWT_EKID);
        ck_assert_int_eq(reload_ok, 2);
        free(tc);
        free(tz);
        sk_jwt_auth_destroy(a);
}
END_TEST

START_TEST(bad_first_load_is_an_error)
{
        sk_jwt_auth_opts_t o = { .keys_file = "/nonexistent/jwks.json", .skew_s = 30 };
        char errstr[512] = "";

        ck_assert_ptr_null(sk_jwt_auth_new(&o, errstr, sizeof(errstr)));
        ck_assert_ptr_nonnull(strstr(errstr, "/nonexistent/jwks.json"));
        o.keys_file = NULL;
        ck_assert_ptr_null(sk_jwt_auth_new(&o, errstr, sizeof(errstr)));
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("jwt_auth");
        TCase *tc = tcase_create("cache");

        tcase_add_test(tc, cache_generation_expiry_eviction);
        suite_add_tcase(s, tc);
        tc = tcase_create("rotation");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, cached_token_answers_until_exp_plus_skew);
        tcase_add_test(tc, reload_dropping_a_key_revokes_its_cached_tokens);
        tcase_add_test(tc, same_bytes_keep_the_generation);
        tcase_add_test(tc, failed_reload_keeps_the_old_keys);
        tcase_add_test(tc, unknown_kid_rereads_at_most_once_per_period);
        tcase_add_test(tc, bad_first_load_is_an_error);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        int rc;

        ka = sk_test_jwk_new(SK_JWT_RS256, "a", 2048);
        kb = sk_test_jwk_new(SK_JWT_ES256, "b", 0);
        kc = sk_test_jwk_new(SK_JWT_HS256, "c", 0);
        if (!ka || !kb || !kc) {
                fprintf(stderr, "check_jwt_auth: cannot make the test keys\n");
                return 1;
        }
        rc = sk_test_run(suite());
        sk_test_jwk_free(ka);
        sk_test_jwk_free(kb);
        sk_test_jwk_free(kc);
        return rc;
}
