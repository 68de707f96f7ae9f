/* sk/paysig.h: the payment provider's webhook signature of DESIGN.md 15: header
 * `X-Payment-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw
 * body)>`, several v1= allowed (one per active secret, any may match), compared in
 * constant time (CRYPTO_memcmp), t within +-tolerance of the caller's clock. Secrets
 * come from a file, one per line (several lines = rotation), kept as a key set of
 * sk/keyfile.h (sk_keyfile_set_t). HMAC from OpenSSL.
 * What it does not do: read the clock, re-read files on its own or keep state between
 * calls (the front's payment.c holds the current key set and reloads it on SIGHUP or a
 * changed file).
 * Thread-safety: a loaded key set is immutable (only its reference count changes) and
 * may be used by any number of threads at once, each holding a reference, so a reload
 * never frees a set a verification is using; every function is thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/keyfile.h"

#define SK_PAYSIG_MAX_KEYS 16          /* secrets per file */
#define SK_PAYSIG_MIN_SECRET 16        /* bytes: a shorter line is refused */
#define SK_PAYSIG_MAX_SECRET 256       /* bytes */
#define SK_PAYSIG_MAX_V1 8             /* v1= entries read from one header */
#define SK_PAYSIG_TOLERANCE_S 300      /* DESIGN.md 15: t older or newer than this -> 401 */

/** The secrets file as a kind of key set (sk/keyfile.h): one secret per line, its bytes
 *  as written (trailing CR, spaces and tabs trimmed); blank lines and lines starting with
 *  '#' are skipped. A secret under SK_PAYSIG_MIN_SECRET or over SK_PAYSIG_MAX_SECRET
 *  bytes, more than SK_PAYSIG_MAX_KEYS secrets, or none at all refuses the whole file
 *  (the reason never holds a secret). Read with sk_keyfile_set_parse(&sk_paysig_keyfile,
 *  ...) or sk_keyfile_set_load: an owned, immutable, reference-counted set whose last
 *  reference wipes the secrets. Constant; any thread. */
extern const sk_keyfile_kind_t sk_paysig_keyfile;

/** The verdict of sk_paysig_verify. */
typedef enum {
        SK_PAYSIG_OK = 0,
        SK_PAYSIG_MALFORMED,    /* no header, no t=, no v1=, or a malformed part */
        SK_PAYSIG_STALE,        /* t outside now +- tolerance */
        SK_PAYSIG_BAD,          /* no v1= matches any secret */
} sk_paysig_res_t;

/** @brief Verify @p header (borrowed, NUL-terminated; NULL = missing) against @p body
 *  (@p body_len bytes, the raw request body) with every secret of @p set (borrowed: a
 *  set of sk_paysig_keyfile; NULL or a set of another kind is SK_PAYSIG_BAD "no
 *  payment keys"), at @p now_s (unix seconds) with @p tolerance_s (s). Parts are separated by ',' (spaces
 *  around them allowed); unknown parts (e.g. a future v2=) are ignored; t is canonical
 *  decimal; each v1 is 64 hex digits (either case). @p why (may be NULL) receives a
 *  static reason for logs (never a secret). Constant-time comparison per candidate.
 *  Any thread (the caller holds a reference to @p set). */
sk_paysig_res_t sk_paysig_verify(const sk_keyfile_set_t *set, const char *header,
                                 const void *body, size_t body_len, int64_t now_s,
                                 int tolerance_s, const char **why);

/** @brief The v1 value for @p secret (@p secret_len bytes), @p t and @p body: 64
 *  lowercase hex digits and a NUL into @p hex (65 bytes). For tests and the demo's
 *  provider. @returns 0, or -1 (OpenSSL failure or out of memory). */
int sk_paysig_sign(const void *secret, size_t secret_len, int64_t t, const void *body,
                   size_t body_len, char hex[65]);
