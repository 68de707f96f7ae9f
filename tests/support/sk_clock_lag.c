/* tests/support/sk_clock_lag.c: an LD_PRELOAD shim that makes a process's wall clock lag
 * (tests only, never linked into a product binary). clock_gettime(CLOCK_REALTIME[_COARSE])
 * answers the real time minus SK_CLOCK_LAG_MS milliseconds (read once; 0 or unset: no
 * change); every other clock (CLOCK_MONOTONIC, ...) is untouched, so timeouts and sleeps
 * behave as before. Used by tests/integration/0603_queue_clock_lag.sh for "a front whose
 * clock lags by 2 s" (DESIGN.md 18: begin is decided by Redis TIME, never a front's clock).
 * Built by the test itself: cc -shared -fPIC -o lag.so sk_clock_lag.c -ldl.
 * Thread-safety: the lag is read once under pthread_once; the call is otherwise stateless. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef int (*cg_fn)(clockid_t, struct timespec *);

static cg_fn real_cg;
static long long lag_ns;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
        const char *s = getenv("SK_CLOCK_LAG_MS");

        real_cg = (cg_fn)dlsym(RTLD_NEXT, "clock_gettime");
        lag_ns = s ? strtoll(s, NULL, 10) * 1000000LL : 0;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
        int rc;
        long long ns;

        pthread_once(&once, init);
        rc = real_cg(id, ts);
        if (rc != 0 || lag_ns == 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
                return rc;
        ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec - lag_ns;
        ts->tv_sec = (time_t)(ns / 1000000000LL);
        ts->tv_nsec = (long)(ns % 1000000000LL);
        return rc;
}
