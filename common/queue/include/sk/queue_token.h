/* sk/queue_token.h: admission tokens of the waiting room (DESIGN.md 18): HMAC-SHA256
 * (OpenSSL) under the first key of SECKILL_QUEUE_KEYS_FILE, verified under any of its
 * keys (later lines verify only: add a key as a later line on every front, then promote
 * it), compared in constant time, checked by any front without Redis.
 * Token text (ASCII, at most SK_QTOKEN_MAX bytes):
 *   v1.<kid>.<generation>.<voucherId>.<userId>.<position>.<expiryMs>.<sig>
 * sig = base64url without padding (43 chars) of HMAC-SHA256(secret of kid, everything
 * before the last '.'). Ids and numbers canonical decimal; generation 1..16 lowercase hex.
 * Keys file: one key a line, "<kid> <secret>": kid 1..16 of [A-Za-z0-9_-], secret 16..256
 * bytes (the rest of the line, trailing CR/space/tab trimmed); '#' lines and blank lines
 * skipped; at most SK_QTOKEN_MAX_KEYS; distinct kids.
 * What it does not do: read the clock or Redis (the caller gives now and checks the
 * generation and the used bit through sk/queue_room.h).
 * Thread-safety: a loaded key set (sk_keyfile_set_t of sk/keyfile.h) is immutable and
 * reference counted: any number of threads may sign and verify with it at once. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/keyfile.h"

#define SK_QTOKEN_MAX 200               /* bytes of a token text, without the NUL */
#define SK_QTOKEN_MAX_KEYS 16
#define SK_QTOKEN_KID_MAX 16
#define SK_QTOKEN_MIN_SECRET 16
#define SK_QTOKEN_MAX_SECRET 256

/** The keys file (format above) as a kind of key set (sk/keyfile.h): a bad line, a
 *  repeated kid, more than SK_QTOKEN_MAX_KEYS keys or none at all refuses the whole file
 *  (the reason never holds a secret). Read with sk_keyfile_set_parse(&sk_qtoken_keyfile,
 *  ...) or sk_keyfile_set_load: an owned, immutable, reference-counted set whose last
 *  reference wipes the secrets. Constant; any thread. */
extern const sk_keyfile_kind_t sk_qtoken_keyfile;

/** What a token says (after a successful verify, or the input of sign). */
typedef struct sk_qtoken {
        char generation[17];    /* 1..16 lowercase hex digits */
        int64_t voucher_id, user_id;
        int64_t position;       /* >= 1 */
        int64_t expiry_ms;      /* ms since the epoch: Redis admission time + queue_ttl_s */
} sk_qtoken_t;

/** @brief Sign @p t with the first key of @p set (borrowed: a set of
 *  sk_qtoken_keyfile; NULL or another kind of set is -1) into @p out
 *  (@p out_size >= SK_QTOKEN_MAX + 1). @returns 0, or -1 (bad field, no key, OpenSSL
 *  failure). Any thread (the caller holds a reference to @p set). */
int sk_qtoken_sign(const sk_keyfile_set_t *set, const sk_qtoken_t *t, char *out,
                   size_t out_size);

typedef enum {
        SK_QTOKEN_OK = 0,
        SK_QTOKEN_MALFORMED,    /* missing, too long, truncated, a bad field */
        SK_QTOKEN_UNKNOWN_KEY,  /* no key of that kid */
        SK_QTOKEN_BAD_SIG,      /* the signature does not match */
        SK_QTOKEN_WRONG,        /* signed, but for another voucher or user */
        SK_QTOKEN_EXPIRED,      /* signed, past its expiry */
} sk_qtoken_res_t;

/** @brief Verify @p text (borrowed, NUL-terminated; NULL = missing) under the keys of
 *  @p set (borrowed; NULL or another kind of set is MALFORMED) for voucher @p vid
 *  and user @p uid at @p now_ms: the signature first (constant-time compare), then
 *  voucher and user, then expiry (now_ms >= expiry_ms is expired). @p out (may be NULL)
 *  receives the fields when SK_QTOKEN_OK. A front answers any result but OK with 403
 *  10014. Costs one HMAC (about 1 µs). */
sk_qtoken_res_t sk_qtoken_verify(const sk_keyfile_set_t *set, const char *text,
                                 int64_t vid, int64_t uid, int64_t now_ms, sk_qtoken_t *out);

/** @brief A static name of @p res for logs and metrics. */
const char *sk_qtoken_res_name(sk_qtoken_res_t res);
