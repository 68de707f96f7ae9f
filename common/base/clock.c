/* clock.c: wall and monotonic clocks in milliseconds, and an interruptible sleep.
 * Thread-safe; no state. */
#include <errno.h>
#include <time.h>

#include "sk/clock.h"

static int64_t ts_to_ms(const struct timespec *ts)
{
        return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

int64_t sk_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return ts_to_ms(&ts);
}

int64_t sk_mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts_to_ms(&ts);
}

void sk_sleep_ms(int64_t ms, volatile int *stop)
{
        struct timespec req, rem;

        if (ms <= 0)
                return;
        req.tv_sec = (time_t)(ms / 1000);
        req.tv_nsec = (long)(ms % 1000) * 1000000L;
        /* A signal interrupts nanosleep; resume with the remaining time unless the
         * caller's stop flag was raised (the handler only sets a flag, STYLE.md 9). */
        while (nanosleep(&req, &rem) == -1 && errno == EINTR) {
                if (stop && *stop)
                        return;
                req = rem;
        }
}
