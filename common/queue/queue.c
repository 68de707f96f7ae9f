/* queue.c: the waiting room's pure rules (sk/queue.h, DESIGN.md 18): title check, key
 * names, window arithmetic, pollAfterMs and the CSPRNG draws. It reads no clock and talks
 * to no server. */
#include "sk/queue.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "sk/err.h"

int sk_queue_title_check(const char *title, char *errstr, size_t errstr_size)
{
        const unsigned char *p = (const unsigned char *)title;
        size_t chars = 0;

        while (*p) {
                uint32_t cp;
                int n;

                if (*p < 0x80) {
                        cp = *p;
                        n = 1;
                } else if ((*p & 0xE0) == 0xC0) {
                        cp = *p & 0x1F;
                        n = 2;
                } else if ((*p & 0xF0) == 0xE0) {
                        cp = *p & 0x0F;
                        n = 3;
                } else if ((*p & 0xF8) == 0xF0) {
                        cp = *p & 0x07;
                        n = 4;
                } else {
                        goto bad_utf8;
                }
                for (int i = 1; i < n; i++) {
                        if ((p[i] & 0xC0) != 0x80)
                                goto bad_utf8;
                        cp = (cp << 6) | (p[i] & 0x3F);
                }
                if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
                    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                        goto bad_utf8;
                if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) {
                        sk_seterr(errstr, errstr_size, "holds a control character (U+%04" PRIX32
                                  ") at character %zu", cp, chars + 1);
                        return -1;
                }
                p += n;
                if (++chars > SK_QUEUE_TITLE_MAX) {
                        sk_seterr(errstr, errstr_size, "is longer than %d characters",
                                  SK_QUEUE_TITLE_MAX);
                        return -1;
                }
        }
        return 0;
bad_utf8:
        sk_seterr(errstr, errstr_size, "is not valid UTF-8 (at byte %zu)",
                  (size_t)(p - (const unsigned char *)title) + 1);
        return -1;
}

int sk_queue_key(char *buf, size_t size, const char *prefix, int64_t vid, const char *kind)
{
        int n = snprintf(buf, size, "%s:{q:%" PRId64 "}:%s", prefix, vid, kind);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}

int64_t sk_queue_window(int64_t units_left, int overbook_pct)
{
        if (units_left <= 0 || overbook_pct <= 0)
                return 0;
        return (units_left * overbook_pct + 99) / 100;
}

int64_t sk_queue_admit_count(const sk_queue_advance_in_t *in, int64_t *rate_at_ms)
{
        int64_t live = in->up_to - in->used - in->expired;
        int64_t n = sk_queue_window(in->units_left, in->overbook_pct) - live;

        if (rate_at_ms)
                *rate_at_ms = in->rate_at_ms;
        if (in->members - in->up_to < n)
                n = in->members - in->up_to;
        if (!in->open || n <= 0)
                return 0;
        if (in->rate > 0) {
                int64_t base = in->rate_at_ms > in->now_ms - 1000 ? in->rate_at_ms
                                                                 : in->now_ms - 1000;
                int64_t allow = (in->now_ms - base) * in->rate / 1000;

                if (allow < n)
                        n = allow;
                if (n <= 0)
                        return 0;
                if (rate_at_ms)
                        *rate_at_ms = base + (n * 1000 + in->rate - 1) / in->rate;
        }
        return n;
}

uint64_t sk_queue_rng_next(uint64_t *rng)
{
        /* xorshift64*: enough for jitter; never a secret */
        uint64_t x = *rng ? *rng : UINT64_C(0x9E3779B97F4A7C15);

        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *rng = x;
        return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* @p ms jittered uniformly by +-SK_QUEUE_JITTER_PCT percent. */
static int64_t jitter(int64_t ms, uint64_t *rng)
{
        int64_t span = ms * SK_QUEUE_JITTER_PCT / 100;

        if (span <= 0)
                return ms;
        return ms - span + (int64_t)(sk_queue_rng_next(rng) % (uint64_t)(2 * span + 1));
}

int sk_queue_poll_after_ms(int64_t ahead, int64_t per_s, uint64_t *rng)
{
        int64_t ms;

        if (per_s <= 0)
                per_s = 1;
        if (ahead < 0)
                ahead = 0;
        /* a quarter of the expected wait, ahead / per_s seconds */
        ms = ahead > INT64_MAX / 250 ? SK_QUEUE_POLL_MAX_MS : ahead * 250 / per_s;
        if (ms < SK_QUEUE_POLL_MIN_MS)
                ms = SK_QUEUE_POLL_MIN_MS;
        if (ms > SK_QUEUE_POLL_MAX_MS)
                ms = SK_QUEUE_POLL_MAX_MS;
        return (int)jitter(ms, rng);
}

int64_t sk_queue_prequeue_poll_ms(int64_t now_ms, int64_t begin_ms, int64_t members,
                                  int poll_rate, uint64_t *rng)
{
        int64_t spread_ms = poll_rate > 0 && members > 0 ? members * 1000 / poll_rate : 0;
        int64_t at = begin_ms + (spread_ms > 0 ? (int64_t)(sk_queue_rng_next(rng) %
                                                           (uint64_t)(spread_ms + 1)) : 0);

        return at - now_ms < 1000 ? 1000 : at - now_ms;
}

int64_t sk_queue_not_open_retry_ms(int64_t now_ms, int64_t opens_at_ms, uint64_t *rng)
{
        int64_t until = opens_at_ms > now_ms ? opens_at_ms - now_ms : 0;

        return until + (int64_t)(sk_queue_rng_next(rng) % 60001);
}

int sk_queue_prekey_draw(uint64_t *key)
{
        uint64_t v;
        size_t got = 0;

        while (got < sizeof(v)) {
                ssize_t n = getrandom((char *)&v + got, sizeof(v) - got, 0);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                got += (size_t)n;
        }
        *key = v & (SK_QUEUE_PREKEY_LIMIT - 1);   /* 52 uniform bits */
        return 0;
}

int sk_queue_generation_draw(char hex[17])
{
        uint64_t a, b;

        if (sk_queue_prekey_draw(&a) != 0 || sk_queue_prekey_draw(&b) != 0)
                return -1;
        snprintf(hex, 17, "%016" PRIx64, (a << 12) ^ b);
        return 0;
}
