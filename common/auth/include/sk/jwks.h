/* sk/jwks.h: a JWKS document (RFC 7517) loaded into OpenSSL 3 key objects for
 * DESIGN.md 15: each usable key is pinned to exactly one of the algorithms below by its
 * type (oct HS256, RSA >= 2048 bits RS256, EC P-256 ES256). What it does not do: verify
 * tokens (sk/jwt.h) or re-read files (sk/jwt_auth.h). Thread-safety: a loaded set is
 * immutable, reference counted, and may be used by any number of threads at once. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/** The only algorithms accepted (DESIGN.md 15). */
typedef enum {
        SK_JWT_ALG_NONE = 0,    /* not an algorithm: "unknown" */
        SK_JWT_HS256,           /* HMAC-SHA-256, kty oct */
        SK_JWT_RS256,           /* RSASSA-PKCS1-v1_5 SHA-256, kty RSA >= 2048 bits */
        SK_JWT_ES256,           /* ECDSA P-256 SHA-256, kty EC crv P-256 */
} sk_jwt_alg_t;

/** A loaded JWKS: key objects by kid. Immutable, reference counted. */
#define SK_JWKS_RSA_MAX_BITS 4096       /* DESIGN.md 15: larger RSA keys only when configured */
#define SK_JWKS_RSA_LIMIT_BITS 16384    /* the most a configuration may allow */
typedef struct sk_jwks sk_jwks_t;

/** @brief Parse a JWKS document ({"keys":[...]}) of @p len bytes (borrowed) into key
 *  objects. Keys of another kty or with "use" other than "sig" are skipped; a key of a
 *  supported kty that is malformed, an RSA key under 2048 or over @p rsa_max_bits bits
 *  (0 = SK_JWKS_RSA_MAX_BITS; at most SK_JWKS_RSA_LIMIT_BITS: a bigger key costs every
 *  uncached verification more, DESIGN.md 15), an EC key not on P-256,
 *  an oct key under 32 bytes, a JWK alg that contradicts its kty, a duplicate or missing
 *  kid (when there are several keys) or a set with no usable key is an error: the
 *  whole document is refused. Private members (d, p, q...) are ignored: only public
 *  parts are imported. @p generation is stored (sk_jwks_generation).
 *  @returns a key set owned by the caller (sk_jwks_unref), or NULL with the reason in
 *  @p errstr (SK_EINVAL class: fix the file; retrying will not help). Thread-safe. */
sk_jwks_t *sk_jwks_parse(const char *json, size_t len, uint64_t generation, int rsa_max_bits,
                         char *errstr, size_t errstr_size);
/** @brief sk_jwks_parse of the file at @p path (at most 1 MiB). Also returns the
 *  SHA-256 of the bytes read in @p sha256 (32 bytes; may be NULL), so a caller can
 *  tell an unchanged file from a changed one. @returns as sk_jwks_parse. */
sk_jwks_t *sk_jwks_load_file(const char *path, uint64_t generation, int rsa_max_bits,
                             unsigned char *sha256, char *errstr, size_t errstr_size);
/** @brief Take one more reference on @p ks. Thread-safe. */
void sk_jwks_ref(sk_jwks_t *ks);
/** @brief Drop a reference; the last one frees the keys. NULL is a no-op. Thread-safe. */
void sk_jwks_unref(sk_jwks_t *ks);
/** @brief Number of usable keys in @p ks. */
size_t sk_jwks_count(const sk_jwks_t *ks);
/** @brief The generation given at parse time. */
uint64_t sk_jwks_generation(const sk_jwks_t *ks);

