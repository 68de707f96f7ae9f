/* backoff.c: capped exponential backoff with full jitter (AWS architecture blog,
 * "Exponential Backoff And Jitter", 2015): delay = uniform[1, min(cap, base * 2^attempt)].
 * Full jitter spreads retries of many workers hit by the same failure (a deadlock storm,
 * a restarted server) instead of having them retry in lockstep. The exponent is computed
 * with saturation so any attempt number is safe. Randomness: xorshift64* on a
 * caller-owned state, so each thread keeps its own (no locking, no rand()). */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "sk/backoff.h"

/* xorshift64* (Vigna): good enough for jitter, never returns the same state for 0. */
static uint64_t next_rand(uint64_t *state)
{
        uint64_t x = *state;

        if (x == 0)
                x = 0x9E3779B97F4A7C15ULL;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        return x * 0x2545F4914F6CDD1DULL;
}

int64_t sk_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, uint64_t *rng_state)
{
        int64_t ceil_ms;

        if (cap_ms < 1)
                cap_ms = 1;
        if (base_ms < 1)
                base_ms = 1;
        if (base_ms > cap_ms)
                base_ms = cap_ms;
        if (attempt < 0)
                attempt = 0;
        /* ceil = min(cap, base << attempt) without overflow: stop doubling once the
         * cap is reached (at most 63 doublings for any base >= 1). */
        ceil_ms = base_ms;
        for (int i = 0; i < attempt && ceil_ms < cap_ms; i++)
                ceil_ms = ceil_ms > cap_ms / 2 ? cap_ms : ceil_ms * 2;
        if (ceil_ms > cap_ms)
                ceil_ms = cap_ms;
        return 1 + (int64_t)(next_rand(rng_state) % (uint64_t)ceil_ms);
}

uint64_t sk_backoff_seed(void)
{
        struct timespec ts;
        uint64_t seed, local = 0;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL;
        seed ^= (uint64_t)ts.tv_sec << 32;
        seed ^= (uint64_t)getpid() << 16;
        seed ^= (uint64_t)(uintptr_t)&local;    /* differs per thread stack (ASLR) */
        (void)next_rand(&seed);
        return seed ? seed : 0x9E3779B97F4A7C15ULL;
}
