/* sk/queue_ticket.h: signed position tickets of the waiting room (DESIGN.md 18 "Polling
 * costs little"): what a join or a Redis poll told a member (room generation, voucher,
 * user, position, 0 before begin), so that a later poll of a member still waiting can be
 * answered from the room state the front's tick already reads, with no Redis command.
 * Ticket text (ASCII, at most SK_QTICKET_MAX bytes):
 *   t1.<kid>.<generation>.<voucherId>.<userId>.<position>.<expiryMs>.<sig>
 * sig = base64url without padding of HMAC-SHA256(K, everything before the last '.'), K =
 * the signature of a fixed admission text that no admission ever carries (expiry 0),
 * under the first key of SECKILL_QUEUE_KEYS_FILE (sk/queue_token.h): a key derived from
 * the room's keys, so any front verifies a ticket, and a ticket is never an admission nor
 * an admission a ticket (other prefix, other key). A ticket signed under a key that is no
 * longer the first does not verify: the poll then reads Redis and hands a new one.
 * What it does not do: read the clock, Redis or the room state. Thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/queue_token.h"

#define SK_QTICKET_MAX 200              /* bytes of a ticket text, without the NUL */

/** What a ticket says. */
typedef struct sk_qticket {
        char generation[17];    /* the room's generation: 1..16 lowercase hex digits */
        int64_t voucher_id, user_id;
        int64_t position;       /* 0: a pre-queue member before begin (no position yet) */
        int64_t expiry_ms;      /* ms since the epoch (front clock) */
} sk_qticket_t;

/** @brief Sign @p t under the key derived from the first key of @p keys (borrowed) into
 *  @p out (@p out_size >= SK_QTICKET_MAX + 1). @returns 0, or -1 (bad field, no key,
 *  OpenSSL failure). */
int sk_qticket_sign(const sk_keyfile_set_t *keys, const sk_qticket_t *t, char *out,
                    size_t out_size);

/** @brief Verify ticket @p text (borrowed, NUL-terminated; NULL = missing) for voucher
 *  @p vid and user @p uid at @p now_ms, with the results of sk/queue_token.h: MALFORMED,
 *  UNKNOWN_KEY (signed under a key that is not the first one now), BAD_SIG (constant-time
 *  compare), WRONG (another voucher or user), EXPIRED (now_ms >= expiry), else OK with
 *  the fields in @p out (may be NULL). Costs two HMACs (about 2 µs). */
sk_qtoken_res_t sk_qticket_verify(const sk_keyfile_set_t *keys, const char *text, int64_t vid,
                                  int64_t uid, int64_t now_ms, sk_qticket_t *out);
