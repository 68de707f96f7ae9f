/* sk_test_jwt.h: test keys and tokens for the front's JWT mode (DESIGN.md 15): generate
 * an HS256 secret, an RS256 2048-bit or an ES256 P-256 key pair, write the public JWKS
 * (oct keys included: they are the shared secret) and the private PEMs, sign any header
 * and payload with any key — also with the wrong algorithm, as the attacks of the unit
 * tests need. Used by tests/unit/check_jwt*.c, the integration tests, sk-mint-jwt and
 * bench/jwt_verify. Needs only OpenSSL and sk_auth (no check, no stack).
 * Not for production: keys are written unencrypted. Not thread-safe per key. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/jwt.h"

typedef struct sk_test_jwk sk_test_jwk_t;

/** @brief A fresh key for @p alg (HS256: 32 random bytes; RS256: RSA of @p rsa_bits,
 *  0 = 2048; ES256: P-256) named @p kid (copied; NULL = no kid). NULL on failure.
 *  Owned: sk_test_jwk_free(). */
sk_test_jwk_t *sk_test_jwk_new(sk_jwt_alg_t alg, const char *kid, int rsa_bits);
/** @brief A key from a private PEM file (RSA -> RS256, EC P-256 -> ES256). NULL with a
 *  reason on stderr. */
sk_test_jwk_t *sk_test_jwk_from_pem(const char *path, const char *kid);
/** @brief An HS256 key from the "k" of the JWK named @p kid in JWKS file @p path (or its
 *  only oct key when @p kid is NULL). NULL with a reason on stderr. */
sk_test_jwk_t *sk_test_jwk_from_jwks_oct(const char *path, const char *kid);
void sk_test_jwk_free(sk_test_jwk_t *k);
sk_jwt_alg_t sk_test_jwk_alg(const sk_test_jwk_t *k);
/** @brief The public JWK as JSON (malloc'd). @p with_alg adds "alg"; @p alg_override
 *  (if not SK_JWT_ALG_NONE) writes that alg instead (for the contradiction tests). */
char *sk_test_jwk_json(const sk_test_jwk_t *k, int with_alg, sk_jwt_alg_t alg_override);
/** @brief {"keys":[...]} of @p n keys (each with its alg), malloc'd. */
char *sk_test_jwks_json(sk_test_jwk_t *const *keys, size_t n);
/** @brief Write @p text to @p path (mode 0600). @returns 0 or -1. */
int sk_test_write_file(const char *path, const char *text);
/** @brief Write the private key of an RS256/ES256 key as PEM (0600). @returns 0 or -1. */
int sk_test_jwk_write_pem(const sk_test_jwk_t *k, const char *path);
/** @brief The public key of an RS256 key as PEM text (malloc'd), the bytes libjwt used as
 *  an HMAC secret in the algorithm-confusion attack. */
char *sk_test_jwk_public_pem(const sk_test_jwk_t *k);

/** @brief header_b64 "." payload_b64 "." signature, signed by @p k with @p alg (its own
 *  when SK_JWT_ALG_NONE; HS256 with an RSA/EC key uses @p secret instead, see below).
 *  @p header_json and @p payload_json are used as given (any bytes). malloc'd. */
char *sk_test_jwt_sign(const sk_test_jwk_t *k, const char *header_json, const char *payload_json);
/** @brief The same with an HS256 MAC keyed by @p secret (@p len bytes). */
char *sk_test_jwt_hs256(const unsigned char *secret, size_t len, const char *header_json,
                        const char *payload_json);
/** @brief header.payload.@p sig_b64 with a signature segment given as text (may be ""). */
char *sk_test_jwt_raw(const char *header_json, const char *payload_json, const char *sig_b64);
/** @brief The common case: {"alg":A,"typ":"JWT","kid":K} and
 *  {"sub":"<sub>","exp":<exp_s>,"iat":<now - 1>} plus @p extra_claims (",\"iss\":..."
 *  or NULL) signed by @p k. malloc'd. */
char *sk_test_jwt_mint(const sk_test_jwk_t *k, int64_t sub, int64_t exp_s, const char *extra_claims);
