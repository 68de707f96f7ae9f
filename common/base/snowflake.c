/* snowflake.c: 64-bit ids = 41 bits of ms since SK_SNOWFLAKE_EPOCH_MS | 10 bits of
 * worker id | 12 bits of sequence (Twitter's snowflake layout, custom epoch; the top
 * bit stays 0 so ids are positive BIGINTs until 2093).
 *
 * Uniqueness across processes rests on the worker id lease (DESIGN.md 2): the lease
 * module opens the mint window [from, until] and this module refuses to mint outside it.
 * Uniqueness inside the process: ids are strictly increasing per generator; a clock that
 * steps back is waited out (sleep-poll, bounded by max_backwards_ms, measured on the
 * monotonic clock) rather than trusted, and 4096 ids in one ms wait for the next ms.
 * Thread-safe: one mutex per generator, released while sleeping so the lease thread can
 * move the window; every round re-reads the clock and re-checks the window. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "sk/clock.h"
#include "sk/snowflake.h"

#define SEQ_BITS 12
#define WORKER_BITS 10
#define TS_BITS 41
#define SEQ_MAX ((1 << SEQ_BITS) - 1)
#define POLL_US 200             /* sleep between clock polls while waiting */
#define SEQ_WAIT_SLACK_MS 50    /* extra bound when waiting out an exhausted sequence */

struct sk_snowflake {
        pthread_mutex_t mu;
        int worker_id;
        int64_t max_backwards_ms;
        sk_clock_fn clock;
        void *clock_arg;
        int64_t last_ms;        /* wall ms of the last id, -1 before the first */
        int seq;                /* sequence used in last_ms */
        int64_t win_from_ms, win_until_ms;
        int win_open;
};

static int64_t now_of(const sk_snowflake_t *sf)
{
        return sf->clock ? sf->clock(sf->clock_arg) : sk_now_ms();
}

static void sleep_us(long us)
{
        struct timespec ts = { 0, us * 1000L };

        nanosleep(&ts, NULL);
}

sk_snowflake_t *sk_snowflake_new(int worker_id, int64_t max_backwards_ms, sk_clock_fn clock, void *clock_arg)
{
        sk_snowflake_t *sf;

        if (worker_id < 0 || worker_id > (1 << WORKER_BITS) - 1 || max_backwards_ms < 0)
                return NULL;
        if (!(sf = calloc(1, sizeof(*sf))))
                return NULL;
        if (pthread_mutex_init(&sf->mu, NULL) != 0) {
                free(sf);
                return NULL;
        }
        sf->worker_id = worker_id;
        sf->max_backwards_ms = max_backwards_ms;
        sf->clock = clock;
        sf->clock_arg = clock_arg;
        sf->last_ms = -1;
        return sf;
}

void sk_snowflake_set_mint_window(sk_snowflake_t *sf, int64_t from_ms, int64_t until_ms)
{
        pthread_mutex_lock(&sf->mu);
        sf->win_from_ms = from_ms;
        sf->win_until_ms = until_ms;
        sf->win_open = !(from_ms == 0 && until_ms == 0) && from_ms <= until_ms;
        pthread_mutex_unlock(&sf->mu);
}

int sk_snowflake_rebind(sk_snowflake_t *sf, int worker_id, int64_t from_ms, int64_t until_ms)
{
        if (worker_id < 0 || worker_id > (1 << WORKER_BITS) - 1)
                return -1;
        pthread_mutex_lock(&sf->mu);
        /* Another id: the next stamp must be a later ms than the last one, so ids stay
         * strictly increasing (within one ms the worker bits would decide). */
        if (worker_id != sf->worker_id)
                sf->seq = SEQ_MAX;
        sf->worker_id = worker_id;
        sf->win_from_ms = from_ms;
        sf->win_until_ms = until_ms;
        sf->win_open = !(from_ms == 0 && until_ms == 0) && from_ms <= until_ms;
        pthread_mutex_unlock(&sf->mu);
        return 0;
}

static int in_window(const sk_snowflake_t *sf, int64_t now)
{
        return sf->win_open && now >= sf->win_from_ms && now <= sf->win_until_ms;
}

sk_err_t sk_snowflake_next(sk_snowflake_t *sf, int64_t *out, char *errstr, size_t errstr_size)
{
        int64_t now, wait_start_ms = -1;

        for (;;) {
                pthread_mutex_lock(&sf->mu);
                now = now_of(sf);
                /* The window is checked on every round: waiting may carry us past its end,
                 * and the lease thread may close it meanwhile. */
                if (!in_window(sf, now)) {
                        sk_seterr(errstr, errstr_size, "worker %d: mint window closed (now=%" PRId64
                                  " window=[%" PRId64 ",%" PRId64 "] open=%d)", sf->worker_id, now,
                                  sf->win_from_ms, sf->win_until_ms, sf->win_open);
                        goto fail;
                }
                if (now < sf->last_ms) {
                        /* The wall clock stepped back (NTP, VM migration): an id minted now
                         * could repeat an earlier one. Wait for it to pass last_ms, within the
                         * bound (measured on the monotonic clock, which never steps). */
                        if (wait_start_ms < 0)
                                wait_start_ms = sk_mono_ms();
                        if (sk_mono_ms() - wait_start_ms >= sf->max_backwards_ms) {
                                sk_seterr(errstr, errstr_size, "worker %d: clock moved backwards by %" PRId64
                                          " ms (waited %" PRId64 " ms, bound %" PRId64 " ms)", sf->worker_id,
                                          sf->last_ms - now, sk_mono_ms() - wait_start_ms, sf->max_backwards_ms);
                                goto fail;
                        }
                } else if (now == sf->last_ms && sf->seq >= SEQ_MAX) {
                        /* 4096 ids in this ms already: wait for the next ms. */
                        if (wait_start_ms < 0)
                                wait_start_ms = sk_mono_ms();
                        if (sk_mono_ms() - wait_start_ms >= sf->max_backwards_ms + SEQ_WAIT_SLACK_MS) {
                                sk_seterr(errstr, errstr_size, "worker %d: sequence exhausted and the clock "
                                          "did not advance", sf->worker_id);
                                goto fail;
                        }
                } else {
                        break;          /* mint now, still holding the lock */
                }
                /* Sleep without the lock so the lease thread can move the window. */
                pthread_mutex_unlock(&sf->mu);
                sleep_us(POLL_US);
        }
        if (now - SK_SNOWFLAKE_EPOCH_MS < 0 || now - SK_SNOWFLAKE_EPOCH_MS >= (INT64_C(1) << TS_BITS)) {
                sk_seterr(errstr, errstr_size, "clock %" PRId64 " ms is outside the id epoch", now);
                goto fail;
        }
        if (now == sf->last_ms) {
                sf->seq++;
        } else {
                sf->seq = 0;
                sf->last_ms = now;
        }
        *out = ((now - SK_SNOWFLAKE_EPOCH_MS) << (WORKER_BITS + SEQ_BITS)) |
               ((int64_t)sf->worker_id << SEQ_BITS) | sf->seq;
        pthread_mutex_unlock(&sf->mu);
        return SK_OK;
fail:
        pthread_mutex_unlock(&sf->mu);
        return SK_EAGAIN;
}

int sk_snowflake_worker_id(sk_snowflake_t *sf)
{
        int id;

        pthread_mutex_lock(&sf->mu);
        id = sf->worker_id;
        pthread_mutex_unlock(&sf->mu);
        return id;
}

int64_t sk_snowflake_ts_ms(int64_t id)
{
        return (id >> (WORKER_BITS + SEQ_BITS)) + SK_SNOWFLAKE_EPOCH_MS;
}

void sk_snowflake_destroy(sk_snowflake_t *sf)
{
        if (!sf)
                return;
        pthread_mutex_destroy(&sf->mu);
        free(sf);
}
