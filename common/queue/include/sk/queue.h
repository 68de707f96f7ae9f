/* sk/queue.h: the waiting room's pure rules (DESIGN.md 18): a voucher's room settings and
 * their defaults, the room's Redis key names (DESIGN.md 4 `{q:ID}`), the title rule, the
 * window arithmetic, pollAfterMs, and the pre-queue's secret random key.
 * What it does not do: talk to Redis (sk/queue_room.h), sign tokens (sk/queue_token.h) or
 * read the clock (every time is the caller's, in ms since the epoch).
 * Thread-safety: every function is pure (the random ones take the caller's state or read
 * the OS's CSPRNG) and thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK_QUEUE_OPEN_S_DEF 600         /* the pre-queue opens this long before begin */
#define SK_QUEUE_TTL_S_DEF 60           /* an admission is valid this long */
#define SK_QUEUE_OVERBOOK_DEF 125       /* live admissions <= ceil(units left x 125 / 100) */
#define SK_QUEUE_TITLE_MAX 128          /* characters (UTF-8 code points) */
#define SK_QUEUE_PREKEY_LIMIT (UINT64_C(1) << 52)   /* pre-queue keys are < 2^52 (exact doubles) */
#define SK_QUEUE_POLL_MIN_MS 1000       /* pollAfterMs before jitter: 1..30 s */
#define SK_QUEUE_POLL_MAX_MS 30000
#define SK_QUEUE_JITTER_PCT 20          /* +-20% */
#define SK_QUEUE_KEY_MAX 192            /* bytes of a room key name, NUL included */

/** A voucher's room settings (tb_seckill_voucher, DESIGN.md 18). */
typedef struct sk_queue_conf {
        int mode;               /* 0 off, 1 on */
        int open_s;             /* pre-queue opens this many s before begin */
        int ttl_s;              /* admission validity, s */
        int overbook_pct;       /* >= 100 */
        int rate;               /* admissions per second, 0 = the stock alone */
} sk_queue_conf_t;

/** @brief Check a voucher title (DESIGN.md 18): valid UTF-8 (no overlong form, no
 *  surrogate, <= U+10FFFF), at most SK_QUEUE_TITLE_MAX characters, no control character
 *  (C0, DEL, C1). @p title borrowed, NUL-terminated ("" is valid: no title).
 *  @returns 0, or -1 with the reason in @p errstr (permanent). */
int sk_queue_title_check(const char *title, char *errstr, size_t errstr_size);

/** @brief The room key "<prefix>:{q:<vid>}:<kind>" (DESIGN.md 4) into @p buf (@p size
 *  bytes, SK_QUEUE_KEY_MAX is enough for a 64-byte prefix). @p prefix and @p kind
 *  borrowed. @returns 0, or -1 if it does not fit. */
int sk_queue_key(char *buf, size_t size, const char *prefix, int64_t vid, const char *kind);

/** @brief The window of a stock reading: ceil(@p units_left x @p overbook_pct / 100); 0
 *  when @p units_left <= 0 (none left, or no reading yet: -1). DESIGN.md 18 "The window". */
int64_t sk_queue_window(int64_t units_left, int overbook_pct);

/** The inputs of one advance (the room's state and the reading it uses). */
typedef struct sk_queue_advance_in {
        int64_t up_to;          /* admitted up to this position */
        int64_t used, expired;  /* counted admissions */
        int64_t members;        /* positions given so far (|pre| + seq after begin) */
        int64_t units_left;     /* the accepted stock reading, -1 = none */
        int overbook_pct;
        int rate;               /* admissions per second, 0 = no cap */
        int64_t rate_at_ms;     /* the rate bucket's mark (0 = never) */
        int64_t now_ms;         /* Redis time */
        int open;               /* begun, not closed, before the end */
} sk_queue_advance_in_t;

/** @brief How many positions one advance admits (the rule queue_advance.lua applies,
 *  written here once more for the unit tests and `voucher queue`): min(window − live,
 *  members − up_to), capped by a one-second bucket of @p in->rate when set (*rate_at_ms
 *  receives its new mark), 0 when not open or nothing fits. live = up_to − used −
 *  expired. @p rate_at_ms may be NULL. DESIGN.md 18 "The window". */
int64_t sk_queue_admit_count(const sk_queue_advance_in_t *in, int64_t *rate_at_ms);

/** @brief A uniform 64-bit draw from the xorshift state @p rng (tests and jitter only;
 *  never for a pre-queue key). Not thread-safe per @p rng. */
uint64_t sk_queue_rng_next(uint64_t *rng);

/** @brief pollAfterMs of a waiting member (DESIGN.md 18 "Polling costs little"): about a
 *  quarter of the expected wait (@p ahead members ahead, @p per_s admissions a second,
 *  <= 0 read as 1), bounded to 1..30 s, then jittered ±20% (so 800..36000 ms). @p rng:
 *  the caller's jitter state. */
int sk_queue_poll_after_ms(int64_t ahead, int64_t per_s, uint64_t *rng);

/** @brief pollAfterMs of a pre-queue member at @p now_ms: its first poll after begin
 *  spread uniformly over [begin, begin + members / @p poll_rate s] (DESIGN.md 18; at least
 *  1000 ms from now). */
int64_t sk_queue_prequeue_poll_ms(int64_t now_ms, int64_t begin_ms, int64_t members,
                                  int poll_rate, uint64_t *rng);

/** @brief retryAfterMs of a 10015 answer: until the pre-queue opens at @p opens_at_ms,
 *  plus a uniform spread over its first minute. */
int64_t sk_queue_not_open_retry_ms(int64_t now_ms, int64_t opens_at_ms, uint64_t *rng);

/** @brief A pre-queue member's secret random key (DESIGN.md 18): uniform in [0, 2^52)
 *  from the OS's CSPRNG (getrandom). @returns 0, or -1 if the OS gave no randomness
 *  (transient: answer 503). Thread-safe. */
int sk_queue_prekey_draw(uint64_t *key);

/** @brief A new room generation: 16 lowercase hex digits of the OS's CSPRNG and a NUL
 *  into @p hex. @returns 0 or -1 (as sk_queue_prekey_draw). */
int sk_queue_generation_draw(char hex[17]);
