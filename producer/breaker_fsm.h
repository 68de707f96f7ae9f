/* producer/breaker_fsm.h: the Redis circuit breaker of DESIGN.md 12, as a pure state machine (no
 * clock, no I/O, no lock: every call takes the caller's monotonic time in ms). One
 * front owns one breaker for all of Redis and serialises the calls itself.
 *
 * States: CLOSED (purchases go to Redis), OPEN (nothing goes to Redis; at least
 * open_ms), HALF_OPEN (still nothing but one probe every probe_ms; a good probe closes).
 *
 * Opening rule, with no flapping: a "bad" command is a failure (timeout, I/O error,
 * CLUSTERDOWN, LOADING) or one slower than slow_ms. The breaker counts bad commands
 * until Redis has been healthy for healthy_ms (no bad command for that long); successes
 * in between do NOT reset the count, so a Redis that answers some commands and times
 * out on others still reaches `failures` bad commands and opens. A breaker closed by a
 * probe is on probation: its count starts at failures - 1, so one bad command within
 * healthy_ms of the close opens it again (a probe of PING/ROLE/INFO can pass while
 * writes hang; that Redis gets one bad batch per reclose, never a run of them). */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum { SK_BRK_CLOSED = 0, SK_BRK_OPEN, SK_BRK_HALF_OPEN } sk_brk_state_t;

/* What a call changed, for the caller's log line and metrics (once per transition). */
typedef enum { SK_BRK_EV_NONE = 0, SK_BRK_EV_OPENED, SK_BRK_EV_CLOSED } sk_brk_event_t;

typedef struct sk_breaker_conf {
        int failures;           /* bad commands that open it (SECKILL_BREAKER_FAILURES) */
        int slow_ms;            /* slower than this is bad (SECKILL_BREAKER_SLOW_MS) */
        int open_ms;            /* minimum open time (SECKILL_BREAKER_OPEN_MS) */
        int probe_ms;           /* half-open probe period (1000) */
        int healthy_ms;         /* no bad command this long = healthy (SECKILL_BREAKER_HEALTHY_MS) */
} sk_breaker_conf_t;

typedef struct sk_breaker {
        sk_breaker_conf_t c;
        sk_brk_state_t state;
        int bad;                /* bad commands counted toward opening */
        int probing;            /* a probe was begun and has not ended */
        int64_t last_bad_ms;    /* the latest bad command (any state) */
        int64_t opened_ms, closed_ms, next_probe_ms;
        uint64_t opens, closes; /* transitions so far */
} sk_breaker_t;

/** Initialise @p b CLOSED with settings @p c (copied; values >= 1 expected) at @p now_ms.
 *  Not thread-safe (the caller serialises every call on one breaker). */
void sk_breaker_init(sk_breaker_t *b, const sk_breaker_conf_t *c, int64_t now_ms);
/** 1 if purchase traffic may go to Redis (CLOSED), 0 if not (OPEN, HALF_OPEN). Pure. */
int sk_breaker_allow(const sk_breaker_t *b);
/** Record one Redis command (or pipelined batch) of purchase or rollback traffic that
 *  ended at @p now_ms: @p failed (timeout, I/O error, CLUSTERDOWN, LOADING) or answered
 *  after @p latency_ms. In CLOSED it may open the breaker (SK_BRK_EV_OPENED); in OPEN
 *  and HALF_OPEN it only remembers a bad command (stragglers sent before the opening). */
sk_brk_event_t sk_breaker_record(sk_breaker_t *b, int64_t now_ms, int failed, int64_t latency_ms);
/** 1 if a probe should run now: OPEN for open_ms moves to HALF_OPEN; in HALF_OPEN one
 *  probe every probe_ms, never two at once. The caller must then call
 *  sk_breaker_probe_end. 0 otherwise (CLOSED, too early, a probe running). */
int sk_breaker_probe_begin(sk_breaker_t *b, int64_t now_ms);
/** End the probe begun at sk_breaker_probe_begin: @p ok (PING answered, ROLE master,
 *  loading:0) closes a HALF_OPEN breaker on probation (SK_BRK_EV_CLOSED); a failed
 *  probe keeps it HALF_OPEN until the next probe period. */
sk_brk_event_t sk_breaker_probe_end(sk_breaker_t *b, int64_t now_ms, int ok);
/** 1 if CLOSED and neither a bad command nor the close happened within healthy_ms
 *  (the "seen Redis healthy for SECKILL_BREAKER_HEALTHY_MS" of DESIGN.md 12). Pure. */
int sk_breaker_healthy(const sk_breaker_t *b, int64_t now_ms);
/** 1 if the error reply text @p s (@p len bytes) counts as a failure for the breaker
 *  (LOADING, CLUSTERDOWN; DESIGN.md 12), 0 otherwise (the script's own errors, BUSY,
 *  NOSCRIPT, ...: Redis answered). Pure. */
int sk_breaker_error_counts(const char *s, size_t len);
