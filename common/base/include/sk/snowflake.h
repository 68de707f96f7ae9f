/* sk/snowflake.h: 64-bit ids: 41 bits of ms since SK_SNOWFLAKE_EPOCH_MS, 10 bits of
 * worker id, 12 bits of sequence. Strictly increasing per generator. If the clock moves
 * backwards, the generator waits up to max_backwards_ms, then fails with SK_EAGAIN.
 * Minting is gated: it fails with SK_EAGAIN until sk_snowflake_set_mint_window() opened
 * a window that contains now (the worker lease, DESIGN.md 2, drives that window).
 * Thread-safe (internal mutex). */
#pragma once
#include <stdint.h>
#include "sk/err.h"

#define SK_SNOWFLAKE_EPOCH_MS INT64_C(1704067200000) /* 2024-01-01T00:00:00Z */

typedef struct sk_snowflake sk_snowflake_t;
typedef int64_t (*sk_clock_fn)(void *arg); /* returns wall ms; for tests */

/** @brief New generator for @p worker_id (0..1023). @p clock NULL = sk_now_ms.
 *  @p max_backwards_ms: how long to wait for a clock that went back (ms).
 *  The mint window starts closed. @returns owned generator, or NULL (bad args/ENOMEM). */
sk_snowflake_t *sk_snowflake_new(int worker_id, int64_t max_backwards_ms,
                                 sk_clock_fn clock, void *clock_arg);
/** @brief Allow minting for wall times in [from_ms, until_ms]; (0,0) closes it. */
void sk_snowflake_set_mint_window(sk_snowflake_t *sf, int64_t from_ms, int64_t until_ms);
/** @brief Mint one id into *out. @returns SK_OK; SK_EAGAIN (window closed, clock
 *  behind for too long, or sequence exhausted past the bound). */
sk_err_t sk_snowflake_next(sk_snowflake_t *sf, int64_t *out, char *errstr, size_t errstr_size);
/** @brief Switch @p sf to @p worker_id (0..1023) and the window [from_ms, until_ms] in
 *  one step, so that no id is minted with the new id under the old window or the
 *  reverse (the lease moved to another worker id, DESIGN.md 2). Ids stay strictly
 *  increasing across the switch. @returns 0, or -1 for a bad id (nothing changed). */
int sk_snowflake_rebind(sk_snowflake_t *sf, int worker_id, int64_t from_ms, int64_t until_ms);
/** @brief Worker id of @p sf (thread-safe). */
int sk_snowflake_worker_id(sk_snowflake_t *sf);
/** @brief Decompose an id. */
int64_t sk_snowflake_ts_ms(int64_t id);
void sk_snowflake_destroy(sk_snowflake_t *sf);
