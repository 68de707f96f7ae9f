/* sk/lease_plan.h: the timing of the worker-id lease (DESIGN.md 2), as arithmetic with no
 * clock, thread or database, so that the renewal thread (lease.c) and its unit tests
 * (tests/unit/check_lease_plan.c) share one rule.
 *
 * For a lease of L ms (SECKILL_WORKER_LEASE_MS) on a URL of N nodes:
 *   - renewals every L/3 (the period), each confirming mint_until = NOW(3) + 2/3 L (the
 *     window) and lease_until = NOW(3) + L, in one UPDATE (lease_db.c);
 *   - so while renewals succeed on time the confirmed window reaches at least L/3 and at
 *     most 2/3 L past the database's clock: the database may be unavailable for up to
 *     L/3 (less the time a renewal takes to reach a node that answers) without the
 *     process ever stopping minting. L = 30 s (the default): 10..20 s, against a Galera
 *     eviction of 5-6 s on the local stack (docs/SCALING.md);
 *   - every lease statement and connect gives up after the attempt timeout,
 *     clamp(L/10, 1 s, 5 s): a frozen node (SIGSTOP: it accepts connections and never
 *     answers) costs one timeout, never a period;
 *   - a failed attempt (an error, a timeout, a reconnect that found no node) moves the
 *     connection to the next node of the URL (sk_db_prefer_next_node) and is retried at
 *     once while fewer than N attempts in a row have failed, so every node is tried
 *     within N attempts; after that with a backoff of 250 ms doubling per failure, never
 *     longer than the period (a database that stays down is asked at least every L/3).
 * What is never changed by this timing: a window ends only at a mint_until read back
 * while holder is still ours, and minting stops at its end by itself (lease.c).
 * Pure functions; thread-safe. */
#pragma once
#include <stdint.h>

typedef struct sk_lease_plan {
        int64_t lease_ms;       /* L: SECKILL_WORKER_LEASE_MS (>= 3) */
        int64_t period_ms;      /* L/3: time between renewals that succeed */
        int64_t window_ms;      /* 2/3 L: how far past NOW(3) a renewal sets mint_until */
        int attempt_timeout_s;  /* clamp(L/10, 1, 5) s: connect and statement timeout */
        int nodes;              /* hosts in the URL (>= 1) */
} sk_lease_plan_t;

#define SK_LEASE_RETRY_BASE_MS 250   /* the first backoff once every node has failed */

/** @brief Fill @p p (caller-owned) for a lease of @p lease_ms (ms; values below 3 are
 *  taken as 3) on a URL of @p nodes hosts (below 1: 1). Thread-safe. */
void sk_lease_plan_init(sk_lease_plan_t *p, int64_t lease_ms, int nodes);

/** @brief The wait (ms) before the next attempt once @p failures attempts in a row have
 *  failed: the period when @p failures is 0 (the last attempt succeeded); 0 while
 *  @p failures < nodes (the next node at once); then SK_LEASE_RETRY_BASE_MS doubled per
 *  further failure, at most the period. Thread-safe. */
int64_t sk_lease_plan_delay_ms(const sk_lease_plan_t *p, int failures);

/** @brief How far ahead of the database's clock the confirmed window still reaches, at
 *  the worst moment, while renewals succeed on time: window − period (ms). A database
 *  unavailable for less than this minus the attempts that find a node that answers is
 *  not seen by the minting. Thread-safe. */
int64_t sk_lease_plan_reach_min_ms(const sk_lease_plan_t *p);
