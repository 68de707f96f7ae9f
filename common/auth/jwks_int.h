/* jwks_int.h: the inside of a loaded key set (sk/jwks.h), shared by jwks.c (which builds
 * it) and jwt.c (which verifies against it), and the strict JSON helpers both use.
 * Internal to common/auth. */
#pragma once
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "sk/jwks.h"

#define SK__JWK_KID_MAX 256     /* bytes of a kid, NUL included */

/* One usable key: exactly one algorithm (its kty's, DESIGN.md 15). */
typedef struct sk__jwk {
        char kid[SK__JWK_KID_MAX];
        int has_kid;
        sk_jwt_alg_t alg;
        EVP_PKEY *pkey;                 /* RS256, ES256: the public key (owned) */
        unsigned char *secret;          /* HS256: the shared secret (owned, cleansed) */
        size_t secret_len;
        size_t sig_len;                 /* the exact signature length: modulus bytes (RS256),
                                         * 64 (ES256 r||s), 32 (HS256) */
} sk__jwk_t;

struct sk_jwks {
        atomic_int refs;
        uint64_t generation;
        EVP_MD *sha256;                 /* fetched once, shared by every verification */
        size_t n;
        sk__jwk_t *keys;
};

/* The key named @p kid (NUL-terminated; NULL = the token had none: only a set of
 * exactly one key answers then). NULL if none. */
const sk__jwk_t *sk__jwks_find(const sk_jwks_t *ks, const char *kid);
/* The alg name ("HS256"...) -> enum; SK_JWT_ALG_NONE for anything else. */
sk_jwt_alg_t sk__jwks_alg_parse(const char *name);
