/* fuzz_jwt.c: libFuzzer harness for the buyer-identity parsers of common/auth (DESIGN.md
 * 15): the first byte picks what the rest of the input is —
 *   0: a JWKS document (sk_jwks_parse);
 *   1: a whole token, verified against a fixed one-key HS256 set (header decode, alg
 *      pinning, signature);
 *   2: "header JSON" 0x00 "claims JSON", which the harness base64url-encodes and signs
 *      with the set's own key, so the claim checks (exp, nbf, iat, iss, aud, sub) are
 *      reached, not only the signature check.
 * Any input must end in a status, never a crash, a leak or a read past the input. No
 * network, no clock: now is fixed. Built and run by bench/fuzz.sh (target jwt). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sk/b64url.h"
#include "sk/jwks.h"
#include "sk/jwt.h"

#define NOW_S 1800000000

static const char secret_b64[] = "c2VjcmV0LWtleS1vZi10aGlydHktdHdvLWJ5dGVzLWZvci1mdXp6aW5n";
static sk_jwks_t *g_ks;
static unsigned char g_key[64];
static size_t g_key_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        char jwks[256], err[256];
        long n;

        (void)argc;
        (void)argv;
        snprintf(jwks, sizeof(jwks), "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"hs1\",\"alg\":\"HS256\",\"k\":\"%s\"}]}",
                 secret_b64);
        g_ks = sk_jwks_parse(jwks, strlen(jwks), 1, 0, err, sizeof(err));
        n = sk_b64url_decode(secret_b64, strlen(secret_b64), g_key, sizeof(g_key));
        if (!g_ks || n <= 0) {
                fprintf(stderr, "fuzz_jwt: setup: %s\n", g_ks ? "key" : err);
                exit(1);
        }
        g_key_len = (size_t)n;
        return 0;
}

static void verify(const char *tok, size_t len)
{
        sk_jwt_policy_t pol = { .issuer = "https://idp.example", .audience = "seckill", .skew_s = 30 };
        sk_jwt_claims_t cl;
        char err[256];

        (void)sk_jwt_verify(g_ks, tok, len, &pol, NOW_S, &cl, err, sizeof(err));
}

/* Mode 2: header.claims signed with the set's key, then verified. */
static void signed_token(const uint8_t *d, size_t n)
{
        const uint8_t *sep = memchr(d, 0, n);
        size_t hl, cl, cap, o = 0;
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int maclen = 0;
        char *tok;
        long w;

        if (!sep)
                return;
        hl = (size_t)(sep - d);
        cl = n - hl - 1;
        cap = (hl + cl) * 4 / 3 + 128;
        if (!(tok = malloc(cap)))
                return;
        if ((w = sk_b64url_encode(d, hl, tok, cap)) < 0)
                goto out;
        o = (size_t)w;
        tok[o++] = '.';
        if ((w = sk_b64url_encode(sep + 1, cl, tok + o, cap - o)) < 0)
                goto out;
        o += (size_t)w;
        if (!HMAC(EVP_sha256(), g_key, (int)g_key_len, (unsigned char *)tok, o, mac, &maclen))
                goto out;
        tok[o++] = '.';
        if ((w = sk_b64url_encode(mac, maclen, tok + o, cap - o)) < 0)
                goto out;
        o += (size_t)w;
        verify(tok, o);
out:
        free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char err[256];

        if (size < 1 || size > 8192)
                return 0;
        switch (data[0] % 3) {
        case 0: {
                sk_jwks_t *ks = sk_jwks_parse((const char *)data + 1, size - 1, 2, 0, err, sizeof(err));

                if (ks)
                        sk_jwks_unref(ks);
                break;
        }
        case 1:
                verify((const char *)data + 1, size - 1);
                break;
        default:
                signed_token(data + 1, size - 1);
                break;
        }
        return 0;
}
