/* check_front_soldout.c: producer/soldout_table.h, the front's local sold-out cache (no network): expiry
 * at the ttl, every bucket needed for a hit, marks never moving back, a new bucket
 * count starting over, bad arguments ignored, eviction never giving another voucher's
 * marks, and a threaded smoke test in which slots change hands under lock-free lookups
 * while no voucher that was never fully marked may ever hit. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>
#include "sk_test.h"
#include "soldout_table.h"

START_TEST(new_refuses_bad_sizes)
{
        ck_assert_ptr_null(sk_soldout_new(64, 0));       /* 0 = off */
        ck_assert_ptr_null(sk_soldout_new(64, -5));
        ck_assert_ptr_null(sk_soldout_new(0, 1000));
        ck_assert_ptr_null(sk_soldout_new(((size_t)1 << 20) + 1, 1000));
        /* A NULL cache never hits and ignores marks. */
        sk_soldout_mark(NULL, 7, 0, 1, 100);
        ck_assert_int_eq(sk_soldout_all_empty(NULL, 7, 100), 0);
        ck_assert_int_eq(sk_soldout_bucket_empty(NULL, 7, 0, 100), 0);
        sk_soldout_free(NULL);
}
END_TEST

START_TEST(expires_after_ttl)
{
        sk_soldout_t *c = sk_soldout_new(64, 1000);

        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 5000), 0);  /* never marked */
        sk_soldout_mark(c, 42, 0, 1, 5000);
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 5000), 1);
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 4990), 1);  /* a reader's older clock */
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 5999), 1);
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 6000), 0);  /* ttl reached */
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 42, 0, 5999), 1);
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 42, 0, 6000), 0);
        ck_assert_int_eq(sk_soldout_all_empty(c, 43, 5000), 0);  /* another voucher */
        /* A newer mark renews it; an older one never moves it back. */
        sk_soldout_mark(c, 42, 0, 1, 6500);
        sk_soldout_mark(c, 42, 0, 1, 5200);
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 7499), 1);
        ck_assert_int_eq(sk_soldout_all_empty(c, 42, 7500), 0);
        sk_soldout_free(c);
}
END_TEST

START_TEST(every_bucket_needed)
{
        sk_soldout_t *c = sk_soldout_new(64, 1000);
        int b;

        for (b = 0; b < 3; b++) {
                sk_soldout_mark(c, 9, b, 4, 1000 + b * 100);
                ck_assert_int_eq(sk_soldout_all_empty(c, 9, 1300), 0);
                ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, b, 1300), 1);
        }
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, 3, 1300), 0);
        sk_soldout_mark(c, 9, 3, 4, 1300);
        ck_assert_int_eq(sk_soldout_all_empty(c, 9, 1300), 1);
        /* The oldest mark (bucket 0, at 1000) expires first and ends the hit. */
        ck_assert_int_eq(sk_soldout_all_empty(c, 9, 1999), 1);
        ck_assert_int_eq(sk_soldout_all_empty(c, 9, 2000), 0);
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, 0, 2000), 0);
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, 1, 2000), 1);
        /* Buckets beyond the count are never empty. */
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, 4, 1300), 0);
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, 16, 1300), 0);
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, -1, 1300), 0);
        /* The same voucher with another bucket count starts over. */
        sk_soldout_mark(c, 9, 0, 2, 1500);
        ck_assert_int_eq(sk_soldout_all_empty(c, 9, 1500), 0);
        ck_assert_int_eq(sk_soldout_bucket_empty(c, 9, 1, 1500), 0);
        sk_soldout_mark(c, 9, 1, 2, 1500);
        ck_assert_int_eq(sk_soldout_all_empty(c, 9, 1500), 1);
        /* Sixteen buckets, the most DESIGN.md 14 allows. */
        for (b = 0; b < SK_SOLDOUT_MAX_BUCKETS; b++) {
                ck_assert_int_eq(sk_soldout_all_empty(c, 10, 100), 0);
                sk_soldout_mark(c, 10, b, SK_SOLDOUT_MAX_BUCKETS, 100);
        }
        ck_assert_int_eq(sk_soldout_all_empty(c, 10, 100), 1);
        sk_soldout_free(c);
}
END_TEST

START_TEST(bad_marks_ignored)
{
        sk_soldout_t *c = sk_soldout_new(16, 1000);

        sk_soldout_mark(c, 0, 0, 1, 100);                       /* voucher id */
        sk_soldout_mark(c, -3, 0, 1, 100);
        sk_soldout_mark(c, 5, 1, 1, 100);                       /* bucket >= count */
        sk_soldout_mark(c, 5, -1, 1, 100);
        sk_soldout_mark(c, 5, 0, 0, 100);                       /* count */
        sk_soldout_mark(c, 5, 0, SK_SOLDOUT_MAX_BUCKETS + 1, 100);
        sk_soldout_mark(c, 5, 0, 1, INT64_MIN);                 /* the "never" time */
        ck_assert_int_eq(sk_soldout_all_empty(c, 0, 100), 0);
        ck_assert_int_eq(sk_soldout_all_empty(c, -3, 100), 0);
        ck_assert_int_eq(sk_soldout_all_empty(c, 5, 100), 0);
        sk_soldout_free(c);
}
END_TEST

/* More vouchers than slots: the stalest entries are evicted, and no voucher ever
 * reports a hit it was not marked for. */
START_TEST(eviction_is_only_a_miss)
{
        sk_soldout_t *c = sk_soldout_new(16, 1000000);
        int64_t v, hits = 0;

        for (v = 1; v <= 200; v++)
                sk_soldout_mark(c, v * 1000003, 0, v % 2 ? 1 : 2, 1000 + v);
        for (v = 1; v <= 200; v++) {
                /* Odd vouchers have one bucket (marked): a hit if still held. Even ones
                 * have two, only bucket 0 marked: never a hit. */
                int h = sk_soldout_all_empty(c, v * 1000003, 2000);

                if (v % 2 == 0)
                        ck_assert_int_eq(h, 0);
                hits += h;
                ck_assert_int_eq(sk_soldout_all_empty(c, v * 1000003 + 1, 2000), 0);
        }
        ck_assert_int_gt(hits, 0);
        ck_assert_int_le(hits, 16);
        /* The newest voucher is kept: its window's stalest slot was evicted. */
        ck_assert_int_eq(sk_soldout_all_empty(c, 199 * 1000003, 2000), 1);
        sk_soldout_free(c);
}
END_TEST

/* Threaded smoke test: markers keep handing the slots of a tiny table between "full"
 * vouchers (every bucket marked: may hit) and "partial" ones (bucket 0 of 2 marked:
 * must never hit). Readers look both up all the time. A lookup that mixed one
 * voucher's id with another's marks would make a partial voucher hit. */
#define NFULL 40
#define NPART 40
static sk_soldout_t *smoke_c;
static atomic_int smoke_stop, smoke_bad;
static atomic_long smoke_hits;

static int64_t full_id(int i) { return 1000 + i; }
static int64_t part_id(int i) { return 5000 + i; }

static void *smoke_marker(void *arg)
{
        int64_t t = 1;
        int i, seed = (int)(intptr_t)arg;

        while (!atomic_load(&smoke_stop)) {
                for (i = 0; i < NFULL; i++) {
                        int k = (i * 7 + seed) % NFULL;

                        sk_soldout_mark(smoke_c, full_id(k), 0, 2, t);
                        sk_soldout_mark(smoke_c, full_id(k), 1, 2, t);
                        sk_soldout_mark(smoke_c, part_id(k % NPART), 0, 2, t);
                }
                t++;
        }
        return NULL;
}

static void *smoke_reader(void *arg)
{
        long n = 0;
        int i;

        (void)arg;
        while (!atomic_load(&smoke_stop)) {
                for (i = 0; i < NPART; i++)
                        if (sk_soldout_all_empty(smoke_c, part_id(i), 1))
                                atomic_fetch_add(&smoke_bad, 1);
                for (i = 0; i < NFULL; i++)
                        n += sk_soldout_all_empty(smoke_c, full_id(i), 1);
        }
        atomic_fetch_add(&smoke_hits, n);
        return NULL;
}

START_TEST(threads_never_mix_vouchers)
{
        pthread_t m[2], r[3];
        int i, bad;
        long hits;

        /* A huge ttl: every mark stays fresh, so only a mix-up could make a partial hit. */
        smoke_c = sk_soldout_new(16, INT64_MAX / 4);
        ck_assert_ptr_nonnull(smoke_c);
        for (i = 0; i < 2; i++)
                ck_assert_int_eq(pthread_create(&m[i], NULL, smoke_marker, (void *)(intptr_t)i), 0);
        for (i = 0; i < 3; i++)
                ck_assert_int_eq(pthread_create(&r[i], NULL, smoke_reader, NULL), 0);
        usleep(700 * 1000);
        atomic_store(&smoke_stop, 1);
        for (i = 0; i < 2; i++)
                pthread_join(m[i], NULL);
        for (i = 0; i < 3; i++)
                pthread_join(r[i], NULL);
        bad = atomic_load(&smoke_bad);
        hits = atomic_load(&smoke_hits);
        ck_assert_int_eq(bad, 0);
        ck_assert_int_gt(hits, 0);      /* the readers did see hits */
        sk_soldout_free(smoke_c);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("soldout");
        TCase *tc = tcase_create("cache");

        tcase_add_test(tc, new_refuses_bad_sizes);
        tcase_add_test(tc, expires_after_ttl);
        tcase_add_test(tc, every_bucket_needed);
        tcase_add_test(tc, bad_marks_ignored);
        tcase_add_test(tc, eviction_is_only_a_miss);
        tcase_add_test(tc, threads_never_mix_vouchers);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
