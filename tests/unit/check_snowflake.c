/* check_snowflake.c: id layout, strict increase, clock-backwards handling and the mint
 * window gate, with an injected clock (real monotonic time + an adjustable offset). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/snowflake.h"

typedef struct tclock {
        int64_t base_ms;        /* wall time at t0 */
        int64_t t0_mono;
        _Atomic int64_t offset_ms; /* added to the reading; negative = stepped back */
        int frozen;             /* 1: reading does not advance with real time */
} tclock_t;

static int64_t tclock_read(void *arg)
{
        tclock_t *c = arg;
        int64_t el = c->frozen ? 0 : sk_mono_ms() - c->t0_mono;

        return c->base_ms + el + atomic_load(&c->offset_ms);
}

static void tclock_init(tclock_t *c, int frozen)
{
        c->base_ms = INT64_C(1800000000000);    /* 2027-01-15 */
        c->t0_mono = sk_mono_ms();
        atomic_store(&c->offset_ms, 0);
        c->frozen = frozen;
}

static void open_wide(sk_snowflake_t *sf)
{
        sk_snowflake_set_mint_window(sf, 1, INT64_MAX);
}

START_TEST(layout_and_worker_bits)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id = 0, now;
        char err[256];

        tclock_init(&c, 1);
        sf = sk_snowflake_new(1023, 100, tclock_read, &c);
        ck_assert_ptr_nonnull(sf);
        ck_assert_int_eq(sk_snowflake_worker_id(sf), 1023);
        open_wide(sf);
        now = tclock_read(&c);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
        ck_assert_int_gt(id, 0);
        ck_assert_int_eq((id >> 12) & 1023, 1023);
        ck_assert_int_eq(id & 4095, 0);
        ck_assert_int_eq(sk_snowflake_ts_ms(id), now);
        ck_assert_int_eq(id >> 22, now - SK_SNOWFLAKE_EPOCH_MS);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
        ck_assert_int_eq(id & 4095, 1);
        sk_snowflake_destroy(sf);

        sf = sk_snowflake_new(5, 100, tclock_read, &c);
        open_wide(sf);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
        ck_assert_int_eq((id >> 12) & 1023, 5);
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(bad_args)
{
        ck_assert_ptr_null(sk_snowflake_new(-1, 100, NULL, NULL));
        ck_assert_ptr_null(sk_snowflake_new(1024, 100, NULL, NULL));
        ck_assert_ptr_null(sk_snowflake_new(0, -1, NULL, NULL));
        sk_snowflake_destroy(NULL);
}
END_TEST

START_TEST(strictly_increasing_100k)
{
        sk_snowflake_t *sf = sk_snowflake_new(7, 1000, NULL, NULL);   /* real clock */
        int64_t prev = 0, id;
        char err[256];

        ck_assert_ptr_nonnull(sf);
        sk_snowflake_set_mint_window(sf, sk_now_ms() - 1000, sk_now_ms() + 600000);
        for (int i = 0; i < 100000; i++) {
                ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
                ck_assert_int_gt(id, prev);
                ck_assert_int_eq((id >> 12) & 1023, 7);
                prev = id;
        }
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(sequence_overflow_waits_for_next_ms)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id = 0, prev = 0, first_ts;
        char err[256];

        tclock_init(&c, 0);             /* advancing clock */
        sf = sk_snowflake_new(1, 100, tclock_read, &c);
        open_wide(sf);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
        first_ts = sk_snowflake_ts_ms(id);
        /* 5000 ids: at least one ms boundary is needed (4096 per ms). */
        for (int i = 0; i < 5000; i++) {
                prev = id;
                ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
                ck_assert_int_gt(id, prev);
        }
        ck_assert_int_gt(sk_snowflake_ts_ms(id), first_ts);
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(sequence_overflow_frozen_clock_fails)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id;
        char err[256];
        int i;

        tclock_init(&c, 1);             /* the clock never advances */
        sf = sk_snowflake_new(1, 20, tclock_read, &c);
        open_wide(sf);
        for (i = 0; i < 4096; i++)
                ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
        ck_assert_int_eq(id & 4095, 4095);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_EAGAIN);
        ck_assert_ptr_nonnull(strstr(err, "sequence"));
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(backwards_small_waits_and_succeeds)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id1, id2, t0;
        char err[256];

        tclock_init(&c, 0);
        sf = sk_snowflake_new(3, 500, tclock_read, &c);
        open_wide(sf);
        ck_assert_int_eq(sk_snowflake_next(sf, &id1, err, sizeof(err)), SK_OK);
        atomic_store(&c.offset_ms, -60);        /* step back 60 ms */
        t0 = sk_mono_ms();
        ck_assert_int_eq(sk_snowflake_next(sf, &id2, err, sizeof(err)), SK_OK);
        ck_assert_int_ge(sk_mono_ms() - t0, 50);        /* it waited the gap out */
        ck_assert_int_gt(id2, id1);
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(backwards_large_fails_with_eagain)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id1, id2 = 77, t0, waited;
        char err[256] = "";

        tclock_init(&c, 0);
        sf = sk_snowflake_new(3, 100, tclock_read, &c);
        open_wide(sf);
        ck_assert_int_eq(sk_snowflake_next(sf, &id1, err, sizeof(err)), SK_OK);
        atomic_store(&c.offset_ms, -5000);      /* step back 5 s */
        t0 = sk_mono_ms();
        ck_assert_int_eq(sk_snowflake_next(sf, &id2, err, sizeof(err)), SK_EAGAIN);
        waited = sk_mono_ms() - t0;
        ck_assert_int_ge(waited, 95);
        ck_assert_int_lt(waited, 3000);
        ck_assert_int_eq(id2, 77);              /* untouched */
        ck_assert_ptr_nonnull(strstr(err, "backwards"));
        /* Once the clock catches up, minting resumes and stays increasing. */
        atomic_store(&c.offset_ms, 0);
        ck_assert_int_eq(sk_snowflake_next(sf, &id2, err, sizeof(err)), SK_OK);
        ck_assert_int_gt(id2, id1);
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(window_gate)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id = 77, now;
        char err[256] = "";

        tclock_init(&c, 1);
        now = tclock_read(&c);
        sf = sk_snowflake_new(2, 100, tclock_read, &c);
        /* Starts closed. */
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_EAGAIN);
        ck_assert_ptr_nonnull(strstr(err, "window"));
        ck_assert_int_eq(id, 77);
        /* Window in the future (waiting for :until of the previous holder). */
        sk_snowflake_set_mint_window(sf, now + 1, now + 1000);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_EAGAIN);
        /* Window in the past (lease not renewed). */
        sk_snowflake_set_mint_window(sf, now - 1000, now - 1);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_EAGAIN);
        /* Inclusive bounds. */
        sk_snowflake_set_mint_window(sf, now, now);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_OK);
        ck_assert_int_eq(sk_snowflake_ts_ms(id), now);
        /* Closed again with (0, 0). */
        sk_snowflake_set_mint_window(sf, 0, 0);
        ck_assert_int_eq(sk_snowflake_next(sf, &id, err, sizeof(err)), SK_EAGAIN);
        sk_snowflake_destroy(sf);
}
END_TEST

/* rebind: a lease moved to another worker id switches id and window in one step;
 * a bad id changes nothing; ids stay strictly increasing across the switch. */
START_TEST(rebind_switches_id_and_window)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t a = 0, b = 0, now;
        char err[256] = "";

        tclock_init(&c, 1);
        now = tclock_read(&c);
        sf = sk_snowflake_new(4, 100, tclock_read, &c);
        ck_assert_int_eq(sk_snowflake_rebind(sf, 5, now - 10, now + 10), 0);
        ck_assert_int_eq(sk_snowflake_worker_id(sf), 5);
        ck_assert_int_eq(sk_snowflake_next(sf, &a, err, sizeof(err)), SK_OK);
        ck_assert_int_eq((a >> 12) & 1023, 5);
        ck_assert_int_eq(sk_snowflake_rebind(sf, 1024, 1, INT64_MAX), -1);
        ck_assert_int_eq(sk_snowflake_rebind(sf, -1, 1, INT64_MAX), -1);
        ck_assert_int_eq(sk_snowflake_worker_id(sf), 5);
        /* the window did not move either: now + 11 is outside it */
        atomic_store(&c.offset_ms, 11);
        ck_assert_int_eq(sk_snowflake_next(sf, &b, err, sizeof(err)), SK_EAGAIN);
        /* a lower id in the same ms as the last id waits for the next ms: still
         * increasing (the clock is frozen: it fails rather than repeat the ms) */
        atomic_store(&c.offset_ms, 0);
        ck_assert_int_eq(sk_snowflake_rebind(sf, 3, now - 10, now + 20), 0);
        ck_assert_int_eq(sk_snowflake_next(sf, &b, err, sizeof(err)), SK_EAGAIN);
        atomic_store(&c.offset_ms, 1);
        ck_assert_int_eq(sk_snowflake_next(sf, &b, err, sizeof(err)), SK_OK);
        ck_assert_int_eq((b >> 12) & 1023, 3);
        ck_assert_int_gt(b, a);
        ck_assert_int_eq(sk_snowflake_rebind(sf, 6, now, now + 20), 0);
        ck_assert_int_eq(sk_snowflake_next(sf, &a, err, sizeof(err)), SK_EAGAIN);
        atomic_store(&c.offset_ms, 2);
        ck_assert_int_eq(sk_snowflake_next(sf, &a, err, sizeof(err)), SK_OK);
        ck_assert_int_eq((a >> 12) & 1023, 6);
        ck_assert_int_gt(a, b);
        sk_snowflake_destroy(sf);
}
END_TEST

START_TEST(window_end_reached_while_waiting_for_sequence)
{
        tclock_t c;
        sk_snowflake_t *sf;
        int64_t id, now;
        char err[256];

        tclock_init(&c, 0);
        now = tclock_read(&c);
        sf = sk_snowflake_new(2, 100, tclock_read, &c);
        sk_snowflake_set_mint_window(sf, now - 10, now + 20);
        /* Mint until the window closes: every id is inside it, then EAGAIN. */
        for (;;) {
                sk_err_t e = sk_snowflake_next(sf, &id, err, sizeof(err));
                if (e != SK_OK) {
                        ck_assert_int_eq(e, SK_EAGAIN);
                        break;
                }
                ck_assert_int_le(sk_snowflake_ts_ms(id), now + 20);
        }
        sk_snowflake_destroy(sf);
}
END_TEST

#define MT_THREADS 4
#define MT_EACH 25000
static sk_snowflake_t *mt_sf;
static int64_t mt_ids[MT_THREADS][MT_EACH];

static void *mt_mint(void *arg)
{
        int64_t *dst = arg;
        char err[256];

        for (int i = 0; i < MT_EACH; i++)
                if (sk_snowflake_next(mt_sf, &dst[i], err, sizeof(err)) != SK_OK)
                        dst[i] = -1;
        return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return (x > y) - (x < y);
}

START_TEST(unique_across_threads)
{
        pthread_t th[MT_THREADS];
        int64_t *all = &mt_ids[0][0];
        size_t n = MT_THREADS * MT_EACH;

        mt_sf = sk_snowflake_new(9, 1000, NULL, NULL);
        sk_snowflake_set_mint_window(mt_sf, sk_now_ms() - 1000, sk_now_ms() + 600000);
        for (int i = 0; i < MT_THREADS; i++)
                pthread_create(&th[i], NULL, mt_mint, mt_ids[i]);
        for (int i = 0; i < MT_THREADS; i++)
                pthread_join(th[i], NULL);
        /* Each thread's ids increase; together they are all distinct. */
        for (int t = 0; t < MT_THREADS; t++)
                for (int i = 1; i < MT_EACH; i++)
                        ck_assert_int_gt(mt_ids[t][i], mt_ids[t][i - 1]);
        qsort(all, n, sizeof(int64_t), cmp_i64);
        ck_assert_int_gt(all[0], 0);
        for (size_t i = 1; i < n; i++)
                ck_assert_int_ne(all[i], all[i - 1]);
        sk_snowflake_destroy(mt_sf);
}
END_TEST

static Suite *snowflake_suite(void)
{
        Suite *s = suite_create("snowflake");
        TCase *tc = tcase_create("snowflake");

        tcase_add_test(tc, layout_and_worker_bits);
        tcase_add_test(tc, bad_args);
        tcase_add_test(tc, strictly_increasing_100k);
        tcase_add_test(tc, sequence_overflow_waits_for_next_ms);
        tcase_add_test(tc, sequence_overflow_frozen_clock_fails);
        tcase_add_test(tc, backwards_small_waits_and_succeeds);
        tcase_add_test(tc, backwards_large_fails_with_eagain);
        tcase_add_test(tc, window_gate);
        tcase_add_test(tc, rebind_switches_id_and_window);
        tcase_add_test(tc, window_end_reached_while_waiting_for_sequence);
        tcase_add_test(tc, unique_across_threads);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(snowflake_suite());
}
