/* producer/breaker.h: the front's Redis breaker (DESIGN.md 12), one per front for all
 * of Redis: the state machine of breaker_fsm.h under a lock, its log lines and metrics,
 * and the half-open probe thread (PING, ROLE = master, loading:0; one a second after
 * the minimum open time; never purchase traffic). */
#pragma once
#include <stdint.h>

/** Set up the breaker from g_fr.conf (SECKILL_BREAKER_*). Once, after fr_metrics_init
 *  and before any thread starts. */
void fr_breaker_init(void);
/** Start / stop the probe thread (its own Redis connection). @returns 0 or -1. */
int fr_breaker_start(void);
void fr_breaker_stop(void);
/** 1 if purchase (and rollback) traffic may go to Redis now (CLOSED), 0 while the
 *  breaker is open or half-open. Lock-free. Thread-safe. */
int fr_breaker_allow(void);
/** Record one Redis command or pipelined batch that ended now: @p failed (timeout, I/O
 *  error, connection refused, LOADING, CLUSTERDOWN) or answered after @p latency_ms
 *  (slower than SECKILL_BREAKER_SLOW_MS counts as bad). May open the breaker (logged
 *  once, metrics). Thread-safe. */
void fr_breaker_record(int failed, int64_t latency_ms);
/** 1 if the breaker is closed and has seen no bad command (and no close) within
 *  SECKILL_BREAKER_HEALTHY_MS: Redis counts as healthy for the degrade recovery
 *  (DESIGN.md 12 db -> rebuilding). Thread-safe. */
int fr_breaker_healthy(void);
