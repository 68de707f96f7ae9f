/* producer/breaker_fsm.c: the Redis circuit breaker state machine (breaker_fsm.h,
 * DESIGN.md 12). Pure: time comes from the caller, no locking, no logging. */
#include <string.h>

#include "breaker_fsm.h"
#include "sk/redis_error.h"

void sk_breaker_init(sk_breaker_t *b, const sk_breaker_conf_t *c, int64_t now_ms)
{
        memset(b, 0, sizeof(*b));
        b->c = *c;
        b->state = SK_BRK_CLOSED;
        b->closed_ms = now_ms - c->healthy_ms; /* a fresh breaker is not on probation */
        b->last_bad_ms = now_ms - c->healthy_ms;
}

int sk_breaker_allow(const sk_breaker_t *b)
{
        return b->state == SK_BRK_CLOSED;
}

sk_brk_event_t sk_breaker_record(sk_breaker_t *b, int64_t now_ms, int failed, int64_t latency_ms)
{
        int bad = failed || latency_ms > b->c.slow_ms;

        if (b->state != SK_BRK_CLOSED) {
                if (bad)
                        b->last_bad_ms = now_ms;
                return SK_BRK_EV_NONE;
        }
        /* Healthy for healthy_ms since the last bad command: forget the count. A success
         * inside that window changes nothing (no flapping). */
        if (b->bad > 0 && now_ms - b->last_bad_ms >= b->c.healthy_ms)
                b->bad = 0;
        if (!bad)
                return SK_BRK_EV_NONE;
        b->bad++;
        b->last_bad_ms = now_ms;
        if (b->bad < b->c.failures)
                return SK_BRK_EV_NONE;
        b->state = SK_BRK_OPEN;
        b->bad = 0;
        b->opened_ms = now_ms;
        b->next_probe_ms = now_ms + b->c.open_ms;
        b->probing = 0;
        b->opens++;
        return SK_BRK_EV_OPENED;
}

int sk_breaker_probe_begin(sk_breaker_t *b, int64_t now_ms)
{
        if (b->state == SK_BRK_CLOSED || b->probing || now_ms < b->next_probe_ms)
                return 0;
        b->state = SK_BRK_HALF_OPEN;
        b->probing = 1;
        b->next_probe_ms = now_ms + b->c.probe_ms;
        return 1;
}

sk_brk_event_t sk_breaker_probe_end(sk_breaker_t *b, int64_t now_ms, int ok)
{
        if (!b->probing)
                return SK_BRK_EV_NONE;
        b->probing = 0;
        if (!ok || b->state != SK_BRK_HALF_OPEN)
                return SK_BRK_EV_NONE;
        b->state = SK_BRK_CLOSED;
        b->closed_ms = now_ms;
        /* Probation: one bad command within healthy_ms of the close reopens it. */
        b->bad = b->c.failures - 1;
        b->last_bad_ms = now_ms;
        b->closes++;
        return SK_BRK_EV_CLOSED;
}

int sk_breaker_healthy(const sk_breaker_t *b, int64_t now_ms)
{
        return b->state == SK_BRK_CLOSED && now_ms - b->last_bad_ms >= b->c.healthy_ms &&
               now_ms - b->closed_ms >= b->c.healthy_ms;
}

int sk_breaker_error_counts(const char *s, size_t len)
{
        if (!s)
                return 0;
        return sk_redis_error_is(s, len, "LOADING") || sk_redis_error_is(s, len, "CLUSTERDOWN");
}
