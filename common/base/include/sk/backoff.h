/* sk/backoff.h: capped exponential backoff with full jitter (AWS architecture blog,
 * "Exponential Backoff And Jitter"): delay = uniform(0, min(cap, base * 2^attempt)].
 * Pure apart from the caller's random state; thread-safe per state. */
#pragma once
#include <stdint.h>

/** @brief Delay in ms for @p attempt (0-based, any value >= 0; large values saturate at
 *  the cap, no overflow). Result is in [1, cap_ms] when base_ms >= 1 and cap_ms >= 1.
 *  @p rng_state: caller-owned xorshift state (seed it non-zero). */
int64_t sk_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, uint64_t *rng_state);
/** @brief A seed from time and address entropy (non-zero). */
uint64_t sk_backoff_seed(void);
