/* sk/jwt.h: verified buyer identity from a JWT (RFC 7519) against a JWKS key set
 * (RFC 7517, sk/jwks.h), DESIGN.md 15 "Buyer identity". The token's header is decoded here
 * (base64url, JSON, at most 1 KiB); alg is one of HS256, RS256, ES256 and pinned to the
 * type of the key its kid names (oct, RSA >= 2048 bits, EC P-256, and the key's own alg
 * if it has one); the signature is checked with OpenSSL 3 EVP against key objects built
 * once when the JWKS is loaded; the claims (exp required, nbf, iat, iss, aud, sub) are
 * checked with a skew. The buyer is sub, a JSON string in canonical decimal.
 *
 * What it does not do: cache (sk/jwt_cache.h), re-read keys (sk/jwt_auth.h), log, or
 * touch the network. Thread-safety: a loaded key set is immutable and may be used by any
 * number of threads at once (reference counted); sk_jwt_verify is reentrant. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/jwks.h"

/** Why a token was refused. Every one of them is a 401/10007 for the caller; the
 *  distinction is for logs, metrics and the key re-read (SK_JWT_EKID). */
typedef enum {
        SK_JWT_OK = 0,
        SK_JWT_EFORMAT = -1,    /* not three base64url segments, bad JSON, too long */
        SK_JWT_EHEADER = -2,    /* alg not allowed, typ not JWT, crit, missing kid */
        SK_JWT_EKID = -3,       /* kid names no key of the set (a re-read may help) */
        SK_JWT_EKEYTYPE = -4,   /* the kid's key is not of the alg's type */
        SK_JWT_ESIG = -5,       /* the signature does not verify */
        SK_JWT_EEXPIRED = -6,   /* exp + skew is past */
        SK_JWT_ECLAIM = -7,     /* exp missing or not an integer, nbf/iat in the future,
                                 * iss/aud mismatch, sub not a canonical id */
        SK_JWT_ENOMEM = -8,     /* allocation failed (not the token's fault) */
} sk_jwt_status_t;

/** @brief Short static name of @p st ("ok", "format", "kid", ...). Never NULL. */
const char *sk_jwt_status_str(sk_jwt_status_t st);

/** The claim rules (DESIGN.md 15). Strings borrowed for the duration of the call. */
typedef struct sk_jwt_policy {
        const char *issuer;     /* NULL or "": iss is not checked */
        const char *audience;   /* NULL or "": aud is not checked */
        int skew_s;             /* allowed clock skew (s), 30 in the front */
} sk_jwt_policy_t;

/** What a verified token says. */
typedef struct sk_jwt_claims {
        int64_t user_id;        /* sub, 1..2^63-1 */
        int64_t exp_s;          /* exp, Unix seconds */
} sk_jwt_claims_t;

#define SK_JWT_MAX_TOKEN 8192   /* bytes; a longer token is SK_JWT_EFORMAT */
#define SK_JWT_MAX_HEADER 1024  /* decoded header bytes */

/** @brief Verify @p token (@p len bytes, borrowed; not NUL-terminated necessarily)
 *  against @p ks (borrowed) and @p pol at @p now_s (Unix seconds): header, alg pinned
 *  to the kid's key, signature, claims. On SK_JWT_OK *@p out holds sub and exp;
 *  otherwise *@p out is untouched and @p errstr (may be NULL) says why — never the
 *  token itself. Reentrant; @p ks may be shared between threads. */
sk_jwt_status_t sk_jwt_verify(const sk_jwks_t *ks, const char *token, size_t len,
                              const sk_jwt_policy_t *pol, int64_t now_s, sk_jwt_claims_t *out,
                              char *errstr, size_t errstr_size);
