/* jwt_verify.c: the front's CPU cost per token (DESIGN.md 15 budget: <= 30 us for a
 * first-seen RS256 token, <= 2 us for a cached one), measured on sk_jwt_auth_verify,
 * the call the HTTP threads make. N distinct RS256 tokens (one key, 2048 bits) are
 * signed first (not timed), then each is verified once (first seen: SHA-256, cache
 * miss, header, RSA verify, claims, cache insert), then all again (cached). Also ES256
 * and HS256 first-seen. Baseline, measured in the same run: the naive verifier of an RS256
 * token, which is what Debian's libjwt 1.10.2 does per call (DESIGN.md 15): parse the public
 * key's PEM, base64url-decode the signature, EVP verify over "header.payload", no claims, no
 * cache. Last fields: ratio_first = rs256_first / baseline, ratio_cached = rs256_cached /
 * baseline. Prints microseconds per token; asserts nothing.
 *   bench/jwt_verify [N]        (default 2000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "sk/b64url.h"
#include "sk/jwt_auth.h"
#include "sk_test_jwt.h"

static double now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Verify every token of @p toks once; @returns us per token, or -1 on a refusal. */
static double run(sk_jwt_auth_t *auth, char **toks, int n, int64_t at_s)
{
        double t0 = now_us();
        int64_t user;
        char errstr[256];
        int i;

        for (i = 0; i < n; i++)
                if (sk_jwt_auth_verify(auth, toks[i], strlen(toks[i]), at_s, &user, errstr,
                                       sizeof(errstr)) != SK_JWT_OK) {
                        fprintf(stderr, "jwt_verify: token %d refused: %s\n", i, errstr);
                        return -1;
                }
        return (now_us() - t0) / n;
}

/* The baseline: RS256 by a verifier that re-parses @p pem for every token. @returns us per
 * token, or -1 when a token does not verify. */
static double run_pem_each(const char *pem, char **toks, int n)
{
        unsigned char sig[512];
        double t0 = now_us();
        int i;

        for (i = 0; i < n; i++) {
                const char *dot = strrchr(toks[i], '.');
                BIO *bio = BIO_new_mem_buf(pem, -1);
                EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
                EVP_MD_CTX *md = EVP_MD_CTX_new();
                long siglen = dot ? sk_b64url_decode(dot + 1, strlen(dot + 1), sig, sizeof(sig)) : -1;
                int ok = key && md && siglen > 0 &&
                         EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
                         EVP_DigestVerify(md, sig, (size_t)siglen, (const unsigned char *)toks[i],
                                          (size_t)(dot - toks[i])) == 1;

                EVP_MD_CTX_free(md);
                EVP_PKEY_free(key);
                BIO_free(bio);
                if (!ok) {
                        fprintf(stderr, "jwt_verify: baseline refused token %d\n", i);
                        return -1;
                }
        }
        return (now_us() - t0) / n;
}

static char **mint(sk_test_jwk_t *k, int n, int64_t now_s)
{
        char **toks = calloc((size_t)n, sizeof(*toks));
        int i;

        for (i = 0; toks && i < n; i++)
                if (!(toks[i] = sk_test_jwt_mint(k, 1000 + i, now_s + 3600, NULL)))
                        exit(1);
        return toks;
}

int main(int argc, char **argv)
{
        long n_arg = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
        int n = n_arg > 0 && n_arg <= 1000000 ? (int)n_arg : 0, i;
        sk_test_jwk_t *keys[3] = { sk_test_jwk_new(SK_JWT_RS256, "rs1", 2048),
                                   sk_test_jwk_new(SK_JWT_ES256, "es1", 0),
                                   sk_test_jwk_new(SK_JWT_HS256, "hs1", 0) };
        char path[] = "/tmp/jwt_verify_XXXXXX", errstr[512], *json;
        int64_t now_s = (int64_t)time(NULL);
        char **rs, **es, **hs, *pem;
        double first, cached, base;
        sk_jwt_auth_t *auth;
        int fd;

        if (n < 1 || !keys[0] || !keys[1] || !keys[2] || !(json = sk_test_jwks_json(keys, 3)) ||
            (fd = mkstemp(path)) < 0) {
                fprintf(stderr, "jwt_verify: setup failed\n");
                return 1;
        }
        close(fd);
        sk_test_write_file(path, json);
        free(json);
        auth = sk_jwt_auth_new(&(sk_jwt_auth_opts_t){ .keys_file = path, .cache_max = (size_t)n * 4,
                                                       .skew_s = 30, .recheck_s = 10 },
                               errstr, sizeof(errstr));
        unlink(path);
        if (!auth) {
                fprintf(stderr, "jwt_verify: %s\n", errstr);
                return 1;
        }
        rs = mint(keys[0], n, now_s);
        es = mint(keys[1], n, now_s);
        hs = mint(keys[2], n, now_s);
        if (!(pem = sk_test_jwk_public_pem(keys[0]))) {
                fprintf(stderr, "jwt_verify: no public PEM\n");
                return 1;
        }
        first = run(auth, rs, n, now_s);
        cached = run(auth, rs, n, now_s);
        printf("tokens=%d rs256_first_us=%.2f rs256_cached_us=%.2f", n, first, cached);
        printf(" es256_first_us=%.2f", run(auth, es, n, now_s));
        printf(" hs256_first_us=%.2f budget_first_us=30 budget_cached_us=2", run(auth, hs, n, now_s));
        base = run_pem_each(pem, rs, n);
        printf(" baseline_pem_each_us=%.2f ratio_first=%.3f ratio_cached=%.4f\n", base,
               base > 0 ? first / base : -1.0, base > 0 ? cached / base : -1.0);
        free(pem);
        for (i = 0; i < n; i++) {
                free(rs[i]);
                free(es[i]);
                free(hs[i]);
        }
        free(rs);
        free(es);
        free(hs);
        sk_jwt_auth_destroy(auth);
        for (i = 0; i < 3; i++)
                sk_test_jwk_free(keys[i]);
        return 0;
}
