/* check_jwt.c: the token rules of DESIGN.md 15 (common/auth: sk/jwt.h, sk/b64url.h):
 * base64url strictness, the header (alg allow-list, typ, crit, kid, 1 KiB), the alg
 * pinned to the kid's key type (the libjwt algorithm-confusion attack among others),
 * signatures of the three algorithms, and the claims with 30 s skew. Keys are generated
 * at start with OpenSSL (tests/support/sk_test_jwt.c); no network. */
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "sk_test.h"
#include "sk_test_jwt.h"
#include "sk/b64url.h"
#include "sk/jwt.h"

static sk_test_jwk_t *hs, *rs, *es;     /* kids "hs", "rs", "es" */
static sk_jwks_t *set3;                 /* the three public keys */
static int64_t now;

static const sk_jwt_policy_t pol = { NULL, NULL, 30 };

static sk_jwt_status_t verify_pol(const sk_jwks_t *ks, const char *tok, const sk_jwt_policy_t *p,
                                  sk_jwt_claims_t *c)
{
        char errstr[256] = "";
        sk_jwt_claims_t dummy;
        sk_jwt_status_t st;

        ck_assert_ptr_nonnull(tok);
        st = sk_jwt_verify(ks, tok, strlen(tok), p, now, c ? c : &dummy, errstr, sizeof(errstr));
        ck_assert_msg(st == SK_JWT_OK || errstr[0], "a refusal without a reason");
        return st;
}

static sk_jwt_status_t verify(const char *tok)
{
        return verify_pol(set3, tok, &pol, NULL);
}

/* verify() of a token that is freed afterwards. */
static sk_jwt_status_t verify_free(char *tok)
{
        sk_jwt_status_t st = verify(tok);

        free(tok);
        return st;
}

static sk_jwks_t *parse(const char *json)
{
        char errstr[256];

        return sk_jwks_parse(json, strlen(json), 1, 0, errstr, sizeof(errstr));
}

/* A payload with sub 42 valid for an hour, then @p extra members. */
static char *payload(char *buf, size_t size, const char *sub_json, const char *extra)
{
        snprintf(buf, size, "{\"sub\":%s,\"exp\":%lld%s}", sub_json, (long long)now + 3600,
                 extra ? extra : "");
        return buf;
}

/* ------------------------------------------------------------------ base64url ---- */

START_TEST(b64url_is_strict)
{
        unsigned char out[64];
        char enc[64];

        ck_assert_int_eq(sk_b64url_decode("aGk", 3, out, sizeof(out)), 2);
        ck_assert_mem_eq(out, "hi", 2);
        ck_assert_int_eq(sk_b64url_decode("aGk=", 4, out, sizeof(out)), -1);    /* padding */
        ck_assert_int_eq(sk_b64url_decode("a+k", 3, out, sizeof(out)), -1);     /* base64 '+' */
        ck_assert_int_eq(sk_b64url_decode("a/k", 3, out, sizeof(out)), -1);
        ck_assert_int_eq(sk_b64url_decode("aGl", 3, out, sizeof(out)), -1);     /* low bits set */
        ck_assert_int_eq(sk_b64url_decode("aGk\0", 4, out, sizeof(out)), -1);
        ck_assert_int_eq(sk_b64url_decode("a", 1, out, sizeof(out)), -1);
        ck_assert_int_eq(sk_b64url_decode("_-8", 3, out, sizeof(out)), 2);
        ck_assert_int_eq(out[0], 0xff);
        ck_assert_int_eq(out[1], 0xef);
        ck_assert_int_eq(sk_b64url_encode((const unsigned char *)"\xff\xef", 2, enc, sizeof(enc)), 3);
        ck_assert_str_eq(enc, "_-8");
}
END_TEST

/* Every length 0..200 round-trips (the decoder's four-character groups and its tail),
 * an output one byte short is refused, and any byte outside the alphabet at any
 * position is refused. */
START_TEST(b64url_round_trips_and_bounds)
{
        unsigned char in[200], out[200];
        char enc[SK_B64URL_ENCODED_LEN(200) + 1];
        size_t len, pos;
        long n;

        for (len = 0; len < sizeof(in); len++)
                in[len] = (unsigned char)(len * 37 + 11);
        for (len = 0; len <= sizeof(in); len++) {
                n = sk_b64url_encode(in, len, enc, sizeof(enc));
                ck_assert_int_eq(n, (long)SK_B64URL_ENCODED_LEN(len));
                ck_assert_int_eq(sk_b64url_decode(enc, (size_t)n, out, sizeof(out)), (long)len);
                ck_assert(len == 0 || !memcmp(in, out, len));
                if (len)
                        ck_assert_int_eq(sk_b64url_decode(enc, (size_t)n, out, len - 1), -1);
                for (pos = 0; pos < (size_t)n; pos += 7) {
                        char keep = enc[pos];

                        enc[pos] = (char)(pos % 2 ? '=' : 0x80);
                        ck_assert_int_eq(sk_b64url_decode(enc, (size_t)n, out, sizeof(out)), -1);
                        enc[pos] = keep;
                }
        }
}
END_TEST

/* -------------------------------------------------------------- valid tokens ---- */

START_TEST(valid_tokens_of_each_alg)
{
        sk_test_jwk_t *keys[] = { hs, rs, es };
        sk_jwt_claims_t c;
        size_t i;

        for (i = 0; i < 3; i++) {
                char *tok = sk_test_jwt_mint(keys[i], 7001 + (int64_t)i, now + 600, NULL);

                memset(&c, 0, sizeof(c));
                ck_assert_int_eq(verify_pol(set3, tok, &pol, &c), SK_JWT_OK);
                ck_assert_int_eq(c.user_id, 7001 + (int64_t)i);
                ck_assert_int_eq(c.exp_s, now + 600);
                free(tok);
        }
}
END_TEST

START_TEST(tampering_breaks_the_signature)
{
        char *tok = sk_test_jwt_mint(rs, 42, now + 600, NULL);
        char *a = sk_test_jwt_mint(es, 42, now + 600, NULL), *b = sk_test_jwt_mint(es, 43, now + 600, NULL);
        char *dot = strchr(tok, '.'), *mix;

        /* Change one payload character: the signature no longer matches. */
        dot[2] = dot[2] == 'A' ? 'B' : 'A';
        ck_assert_int_eq(verify(tok), SK_JWT_ESIG);
        /* a's header and payload with b's signature. */
        mix = strdup(a);
        memcpy(strrchr(mix, '.'), strrchr(b, '.'), strlen(strrchr(b, '.')));
        ck_assert_int_eq(verify(mix), SK_JWT_ESIG);
        free(tok);
        free(a);
        free(b);
        free(mix);
}
END_TEST

/* ------------------------------------------------------ algorithm confusion ---- */

START_TEST(hs256_keyed_by_the_rsa_public_pem_fails)
{
        /* libjwt 1.10 trusts the token's alg: an HS256 token MACed with the RSA key's
         * public PEM (public knowledge) verified as "signed". Here the kid's key type
         * decides: RSA only ever verifies RS256. */
        char *pem = sk_test_jwk_public_pem(rs), pay[256];
        sk_jwks_t *only_rs;
        char *jwk = sk_test_jwk_json(rs, 1, SK_JWT_ALG_NONE), json[4096];

        ck_assert_ptr_nonnull(pem);
        payload(pay, sizeof(pay), "\"42\"", NULL);
        ck_assert_int_eq(verify_free(sk_test_jwt_hs256((unsigned char *)pem, strlen(pem),
                                                       "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"rs\"}", pay)),
                         SK_JWT_EKEYTYPE);
        /* Also without a kid against a set of that one RSA key. */
        snprintf(json, sizeof(json), "{\"keys\":[%s]}", jwk);
        ck_assert_ptr_nonnull(only_rs = parse(json));
        {
                char *tok = sk_test_jwt_hs256((unsigned char *)pem, strlen(pem), "{\"alg\":\"HS256\"}", pay);

                ck_assert_int_eq(verify_pol(only_rs, tok, &pol, NULL), SK_JWT_EKEYTYPE);
                free(tok);
        }
        sk_jwks_unref(only_rs);
        cJSON_free(jwk);
        free(pem);
}
END_TEST

START_TEST(alg_none_and_others_refused)
{
        char pay[256];
        const char *hdrs[] = {
                "{\"alg\":\"none\",\"kid\":\"rs\"}", "{\"alg\":\"HS512\",\"kid\":\"hs\"}",
                "{\"alg\":\"hs256\",\"kid\":\"hs\"}", "{\"alg\":\"PS256\",\"kid\":\"rs\"}",
                "{\"kid\":\"rs\"}", "{\"alg\":256,\"kid\":\"rs\"}",
                "{\"alg\":\"HS256\",\"typ\":\"JOSE\",\"kid\":\"hs\"}",
                "{\"alg\":\"HS256\",\"typ\":\"jwt \",\"kid\":\"hs\"}",
                "{\"alg\":\"HS256\",\"crit\":[\"exp\"],\"kid\":\"hs\"}",
                "{\"alg\":\"HS256\",\"kid\":\"\"}", "{\"alg\":\"HS256\",\"kid\":7}",
        };
        size_t i;

        payload(pay, sizeof(pay), "\"42\"", NULL);
        ck_assert_int_eq(verify_free(sk_test_jwt_raw("{\"alg\":\"none\"}", pay, "")), SK_JWT_EHEADER);
        for (i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++)
                ck_assert_msg(verify_free(sk_test_jwt_sign(hs, hdrs[i], pay)) == SK_JWT_EHEADER,
                              "accepted header %s", hdrs[i]);
}
END_TEST

START_TEST(kid_of_the_wrong_key_type_refused)
{
        char pay[256];

        payload(pay, sizeof(pay), "\"42\"", NULL);
        /* Properly signed by es, but naming rs (and the reverse, and hs). */
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(es, "{\"alg\":\"ES256\",\"kid\":\"rs\"}", pay)),
                         SK_JWT_EKEYTYPE);
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(rs, "{\"alg\":\"RS256\",\"kid\":\"es\"}", pay)),
                         SK_JWT_EKEYTYPE);
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(rs, "{\"alg\":\"RS256\",\"kid\":\"hs\"}", pay)),
                         SK_JWT_EKEYTYPE);
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(hs, "{\"alg\":\"HS256\",\"kid\":\"es\"}", pay)),
                         SK_JWT_EKEYTYPE);
}
END_TEST

START_TEST(kid_rules)
{
        char pay[256];
        sk_jwks_t *one;
        char *jwk = sk_test_jwk_json(es, 1, SK_JWT_ALG_NONE), json[2048];

        payload(pay, sizeof(pay), "\"42\"", NULL);
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(rs, "{\"alg\":\"RS256\",\"kid\":\"nope\"}", pay)),
                         SK_JWT_EKID);
        /* No kid: refused with three keys, accepted with exactly one. */
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(es, "{\"alg\":\"ES256\"}", pay)), SK_JWT_EHEADER);
        snprintf(json, sizeof(json), "{\"keys\":[%s]}", jwk);
        ck_assert_ptr_nonnull(one = parse(json));
        {
                char *tok = sk_test_jwt_sign(es, "{\"alg\":\"ES256\",\"typ\":\"JWT\"}", pay);

                ck_assert_int_eq(verify_pol(one, tok, &pol, NULL), SK_JWT_OK);
                free(tok);
        }
        sk_jwks_unref(one);
        cJSON_free(jwk);
}
END_TEST

/* ------------------------------------------------------------------- format ---- */

START_TEST(signature_and_format_errors)
{
        char pay[256], *tok, big[2048], hdr[1400];

        payload(pay, sizeof(pay), "\"42\"", NULL);
        /* Empty signature (the NULL/empty-key hole of libjwt): never verified. */
        ck_assert_int_eq(verify_free(sk_test_jwt_raw("{\"alg\":\"RS256\",\"kid\":\"rs\"}", pay, "")),
                         SK_JWT_ESIG);
        ck_assert_int_eq(verify_free(sk_test_jwt_raw("{\"alg\":\"HS256\",\"kid\":\"hs\"}", pay, "")),
                         SK_JWT_ESIG);
        ck_assert_int_eq(verify_free(sk_test_jwt_raw("{\"alg\":\"ES256\",\"kid\":\"es\"}", pay, "AAAA")),
                         SK_JWT_ESIG);
        /* An all-zero ES256 signature of the right length. */
        memset(big, 'A', 86);
        big[86] = '\0';
        ck_assert_int_eq(verify_free(sk_test_jwt_raw("{\"alg\":\"ES256\",\"kid\":\"es\"}", pay, big)),
                         SK_JWT_ESIG);
        ck_assert_int_eq(verify("a.b"), SK_JWT_EFORMAT);
        ck_assert_int_eq(verify("a.b.c.d"), SK_JWT_EFORMAT);
        ck_assert_int_eq(verify(".."), SK_JWT_EFORMAT);
        ck_assert_int_eq(verify("eyJhbGciOiJIUzI1NiJ9..sig"), SK_JWT_EFORMAT);
        /* A header over 1 KiB, otherwise valid. */
        snprintf(hdr, sizeof(hdr), "{\"alg\":\"HS256\",\"kid\":\"hs\",\"x\":\"%01100d\"}", 0);
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(hs, hdr, pay)), SK_JWT_EFORMAT);
        /* Duplicate names are a parser differential: refused in header and payload. */
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(hs, "{\"alg\":\"HS256\",\"alg\":\"none\",\"kid\":\"hs\"}",
                                                      pay)), SK_JWT_EFORMAT);
        tok = sk_test_jwt_sign(hs, "{\"alg\":\"HS256\",\"kid\":\"hs\"}",
                               payload(big, sizeof(big), "\"42\"", ",\"sub\":\"43\""));
        ck_assert_int_eq(verify_free(tok), SK_JWT_EFORMAT);
        /* Not JSON objects. */
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(hs, "[\"HS256\"]", pay)), SK_JWT_EFORMAT);
        ck_assert_int_eq(verify_free(sk_test_jwt_sign(hs, "{\"alg\":\"HS256\",\"kid\":\"hs\"}", "42")),
                         SK_JWT_EFORMAT);
        /* A base64 '+' or padding in a segment. */
        tok = sk_test_jwt_mint(hs, 42, now + 600, NULL);
        strcat(tok, "=");
        ck_assert_int_eq(verify_free(tok), SK_JWT_ESIG);
}
END_TEST

/* ------------------------------------------------------------------- claims ---- */

static sk_jwt_status_t with_payload(const char *pay)
{
        return verify_free(sk_test_jwt_sign(hs, "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"hs\"}", pay));
}

START_TEST(exp_rules)
{
        char pay[256];

        ck_assert_int_eq(with_payload("{\"sub\":\"42\"}"), SK_JWT_ECLAIM);
        snprintf(pay, sizeof(pay), "{\"sub\":\"42\",\"exp\":\"%lld\"}", (long long)now + 600);
        ck_assert_int_eq(with_payload(pay), SK_JWT_ECLAIM);                     /* a string */
        snprintf(pay, sizeof(pay), "{\"sub\":\"42\",\"exp\":%lld.5}", (long long)now + 600);
        ck_assert_int_eq(with_payload(pay), SK_JWT_ECLAIM);                     /* a fraction */
        ck_assert_int_eq(with_payload("{\"sub\":\"42\",\"exp\":null}"), SK_JWT_ECLAIM);
        ck_assert_int_eq(with_payload("{\"sub\":\"42\",\"exp\":1e400}"), SK_JWT_ECLAIM);
        /* Skew 30 s: 29 s past exp still passes, 30 s and 31 s do not. */
        snprintf(pay, sizeof(pay), "{\"sub\":\"42\",\"exp\":%lld}", (long long)now - 29);
        ck_assert_int_eq(with_payload(pay), SK_JWT_OK);
        snprintf(pay, sizeof(pay), "{\"sub\":\"42\",\"exp\":%lld}", (long long)now - 30);
        ck_assert_int_eq(with_payload(pay), SK_JWT_EEXPIRED);
        snprintf(pay, sizeof(pay), "{\"sub\":\"42\",\"exp\":%lld}", (long long)now - 3600);
        ck_assert_int_eq(with_payload(pay), SK_JWT_EEXPIRED);
}
END_TEST

START_TEST(nbf_iat_rules)
{
        char pay[256], extra[128];

        snprintf(extra, sizeof(extra), ",\"nbf\":%lld", (long long)now + 31);
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"42\"", extra)), SK_JWT_ECLAIM);
        snprintf(extra, sizeof(extra), ",\"nbf\":%lld", (long long)now + 29);
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"42\"", extra)), SK_JWT_OK);
        snprintf(extra, sizeof(extra), ",\"iat\":%lld", (long long)now + 31);
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"42\"", extra)), SK_JWT_ECLAIM);
        snprintf(extra, sizeof(extra), ",\"iat\":%lld", (long long)now - 100);
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"42\"", extra)), SK_JWT_OK);
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"42\"", ",\"iat\":\"0\"")), SK_JWT_ECLAIM);
}
END_TEST

START_TEST(sub_rules)
{
        const char *bad[] = { "\"007\"", "\"-1\"", "\"+1\"", "\"0\"", "7", "7.0", "null", "\"\"",
                              "\" 7\"", "\"7 \"", "\"9223372036854775808\"", "[\"7\"]",
                              "\"1e3\"" };
        char pay[256];
        sk_jwt_claims_t c;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(with_payload(payload(pay, sizeof(pay), bad[i], NULL)) == SK_JWT_ECLAIM,
                              "accepted sub %s", bad[i]);
        ck_assert_int_eq(with_payload("{\"exp\":9999999999}"), SK_JWT_ECLAIM);  /* no sub */
        /* An escaped NUL would cut cJSON's string to "7": the payload is refused. */
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"7\\u00001\"", NULL)), SK_JWT_EFORMAT);
        {
                char *tok = sk_test_jwt_sign(hs, "{\"alg\":\"HS256\",\"kid\":\"hs\"}",
                                             payload(pay, sizeof(pay), "\"9223372036854775807\"", NULL));

                ck_assert_int_eq(verify_pol(set3, tok, &pol, &c), SK_JWT_OK);
                ck_assert_int_eq(c.user_id, INT64_MAX);
                free(tok);
        }
}
END_TEST

START_TEST(iss_aud_rules)
{
        sk_jwt_policy_t p = { "https://idp.example", "seckill", 30 };
        char pay[512];
        struct { const char *extra; sk_jwt_status_t want; } cases[] = {
                { ",\"iss\":\"https://idp.example\",\"aud\":\"seckill\"", SK_JWT_OK },
                { ",\"iss\":\"https://idp.example\",\"aud\":[\"shop\",\"seckill\"]", SK_JWT_OK },
                { ",\"iss\":\"https://idp.example\",\"aud\":[\"shop\"]", SK_JWT_ECLAIM },
                { ",\"iss\":\"https://idp.example\",\"aud\":\"Seckill\"", SK_JWT_ECLAIM },
                { ",\"iss\":\"https://idp.example\"", SK_JWT_ECLAIM },
                { ",\"iss\":\"https://evil.example\",\"aud\":\"seckill\"", SK_JWT_ECLAIM },
                { ",\"aud\":\"seckill\"", SK_JWT_ECLAIM },
        };
        size_t i;

        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *tok = sk_test_jwt_sign(rs, "{\"alg\":\"RS256\",\"kid\":\"rs\"}",
                                             payload(pay, sizeof(pay), "\"42\"", cases[i].extra));

                ck_assert_msg(verify_pol(set3, tok, &p, NULL) == cases[i].want, "case %zu", i);
                free(tok);
        }
        /* Not configured: not checked. */
        ck_assert_int_eq(with_payload(payload(pay, sizeof(pay), "\"42\"", ",\"iss\":\"x\",\"aud\":7")),
                         SK_JWT_OK);
}
END_TEST

/* --------------------------------------------------------------------- JWKS ---- */

START_TEST(jwks_refusals)
{
        sk_test_jwk_t *small = sk_test_jwk_new(SK_JWT_RS256, "small", 1024);
        char *j, json[4096], *es_jwk = sk_test_jwk_json(es, 0, SK_JWT_ALG_NONE);
        sk_jwks_t *ks;

        ck_assert_ptr_null(parse("{\"keys\":[]}"));
        ck_assert_ptr_null(parse("{\"keys\":{}}"));
        ck_assert_ptr_null(parse("[]"));
        ck_assert_ptr_null(parse("{\"keys\":[{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"c2hvcnQ\"}]}")); /* 5 bytes */
        ck_assert_ptr_null(parse("{\"keys\":[{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"\"}]}"));
        ck_assert_ptr_null(parse("{\"keys\":[{\"kty\":\"oct\",\"kid\":\"a\"}]}"));
        /* RSA under 2048 bits. */
        j = sk_test_jwk_json(small, 1, SK_JWT_ALG_NONE);
        snprintf(json, sizeof(json), "{\"keys\":[%s]}", j);
        ck_assert_ptr_null(parse(json));
        cJSON_free(j);
        /* A JWK alg contradicting its kty: an RSA key declared HS256. */
        j = sk_test_jwk_json(rs, 1, SK_JWT_HS256);
        snprintf(json, sizeof(json), "{\"keys\":[%s]}", j);
        ck_assert_ptr_null(parse(json));
        cJSON_free(j);
        /* Duplicate kid; two keys one without kid. */
        snprintf(json, sizeof(json), "{\"keys\":[%s,%s]}", es_jwk, es_jwk);
        ck_assert_ptr_null(parse(json));
        /* EC point off the curve: y changed. */
        {
                char *y = strstr(es_jwk, "\"y\":\"") + 5;

                y[0] = y[0] == 'A' ? 'B' : 'A';
                snprintf(json, sizeof(json), "{\"keys\":[%s]}", es_jwk);
                ck_assert_ptr_null(parse(json));
        }
        /* Encryption keys and unknown types are skipped, not errors. */
        j = sk_test_jwk_json(hs, 1, SK_JWT_ALG_NONE);
        snprintf(json, sizeof(json),
                 "{\"keys\":[{\"kty\":\"OKP\",\"kid\":\"ed\",\"crv\":\"Ed25519\",\"x\":\"AA\"},"
                 "{\"kty\":\"RSA\",\"use\":\"enc\",\"kid\":\"e\"},%s]}", j);
        ck_assert_ptr_nonnull(ks = parse(json));
        ck_assert_uint_eq(sk_jwks_count(ks), 1);
        sk_jwks_unref(ks);
        cJSON_free(j);
        cJSON_free(es_jwk);
        sk_test_jwk_free(small);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("jwt");
        TCase *tc = tcase_create("b64url");

        tcase_add_test(tc, b64url_is_strict);
        tcase_add_test(tc, b64url_round_trips_and_bounds);
        suite_add_tcase(s, tc);
        tc = tcase_create("signatures");
        tcase_add_test(tc, valid_tokens_of_each_alg);
        tcase_add_test(tc, tampering_breaks_the_signature);
        tcase_add_test(tc, signature_and_format_errors);
        suite_add_tcase(s, tc);
        tc = tcase_create("alg_pinning");
        tcase_add_test(tc, hs256_keyed_by_the_rsa_public_pem_fails);
        tcase_add_test(tc, alg_none_and_others_refused);
        tcase_add_test(tc, kid_of_the_wrong_key_type_refused);
        tcase_add_test(tc, kid_rules);
        suite_add_tcase(s, tc);
        tc = tcase_create("claims");
        tcase_add_test(tc, exp_rules);
        tcase_add_test(tc, nbf_iat_rules);
        tcase_add_test(tc, sub_rules);
        tcase_add_test(tc, iss_aud_rules);
        suite_add_tcase(s, tc);
        tc = tcase_create("jwks");
        tcase_add_test(tc, jwks_refusals);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        sk_test_jwk_t *keys[3];
        char *json;
        int rc;

        now = (int64_t)time(NULL);
        keys[0] = hs = sk_test_jwk_new(SK_JWT_HS256, "hs", 0);
        keys[1] = rs = sk_test_jwk_new(SK_JWT_RS256, "rs", 2048);
        keys[2] = es = sk_test_jwk_new(SK_JWT_ES256, "es", 0);
        if (!hs || !rs || !es || !(json = sk_test_jwks_json(keys, 3)) || !(set3 = parse(json))) {
                fprintf(stderr, "check_jwt: cannot make the test keys\n");
                return 1;
        }
        free(json);
        rc = sk_test_run(suite());
        sk_jwks_unref(set3);
        sk_test_jwk_free(hs);
        sk_test_jwk_free(rs);
        sk_test_jwk_free(es);
        return rc;
}
