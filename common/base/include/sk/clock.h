/* sk/clock.h: wall and monotonic clocks in milliseconds. Thread-safe. */
#pragma once
#include <stdint.h>

/** @brief Wall-clock time, ms since the Unix epoch (CLOCK_REALTIME). */
int64_t sk_now_ms(void);
/** @brief Monotonic time in ms (CLOCK_MONOTONIC), for deadlines and durations. */
int64_t sk_mono_ms(void);
/** @brief Sleep @p ms milliseconds (restarts after EINTR unless *stop becomes non-zero;
 *  @p stop may be NULL). */
void sk_sleep_ms(int64_t ms, volatile int *stop);
