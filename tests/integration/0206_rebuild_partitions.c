/* 0206_rebuild_partitions.c: the rebuild waits only for the partitions that carry the
 * voucher's messages (DESIGN.md 5 and 8: keys "V" and "V:b" under the murmur2_random
 * partitioner), so `--repair` and `--rebuild-from-db` finish while other vouchers sell.
 * A topic with 6 partitions; another voucher's message waits, unconsumed, on a partition
 * that is not one of V's: the rebuild of V finishes (before the fix it waited for every
 * partition and gave up). A message on V's own partition still holds the rebuild back.
 * The partition the voucher's key lands on is the one the project's producer chose (the
 * delivery report), and equals sk_voucher_partition (the murmur2 of the Java client). */
#include "sk_test.h"
#include "sk/rebuild.h"
#include "sk/vkafka.h"

START_TEST(other_vouchers_backlog_does_not_hold_the_rebuild)
{
        char errstr[512] = "", stock[SK_KEY_MAX], meta[SK_KEY_MAX], val[64], key[48];
        sk_rebuild_report_t rep;
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 10, .db_stock = 10,
                                                            .stock = -1, .db_status = 1 }),
                                                            other = 0;
        int32_t pv, pvb, po = -1;
        sk_err_t err;

        sk_test_key(stock, vid, SK_KEY_STOCK);
        sk_test_key(meta, vid, SK_KEY_META);
        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);

        /* V's messages (keys "V" and "V:0"), consumed by the group. */
        snprintf(key, sizeof(key), "%" PRId64, vid);
        pv = sk_test_produce_key(key, "{}");
        snprintf(key, sizeof(key), "%" PRId64 ":0", vid);
        pvb = sk_test_produce_key(key, "{}");
        ck_assert_int_eq(sk_key_partition(key, strlen(key), 6), pvb);
        snprintf(key, sizeof(key), "%" PRId64, vid);
        ck_assert_int_eq(sk_key_partition(key, strlen(key), 6), pv);
        {
                int32_t parts[SK_VKAFKA_MAXPARTS];
                size_t n = sk_voucher_partitions(vid, 1, 6, parts);
                ck_assert_uint_eq(n, pv == pvb ? 1 : 2);
                ck_assert(parts[0] == (pv < pvb ? pv : pvb));
        }
        /* Another voucher's backlog on a partition of its own, never consumed. */
        for (int i = 0; i < 50 && po < 0; i++) {
                int32_t p;
                other = sk_test_rand_id();
                snprintf(key, sizeof(key), "%" PRId64, other);
                p = sk_test_produce_key(key, "{}");
                if (p != pv && p != pvb)
                        po = p;
        }
        ck_assert_msg(po >= 0, "no partition apart from V's found");
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(sk_test_produce_key(key, "{}"), po);
        /* Everything on V's partitions (V's and the search's messages) is consumed. */
        sk_test_commit_hwm(pv);
        sk_test_commit_hwm(pvb);

        /* The DB moved (a consumer sold 2 of V): the rebuild copies it, lag elsewhere. */
        sk_test_exec("UPDATE tb_seckill_stock SET stock = 8");
        err = sk_rebuild_voucher(&sk_test_fx.conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "rebuild with another voucher's backlog: %d %s", err, errstr);
        ck_assert_int_eq(rep.lag, 0);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "8");
        sk_test_get_str(meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "1");

        /* A message of V not consumed yet: the rebuild waits, then gives up. */
        snprintf(key, sizeof(key), "%" PRId64, vid);
        ck_assert_int_eq(sk_test_produce_key(key, "{}"), pv);
        err = sk_rebuild_voucher(&sk_test_fx.conf, vid, 1500, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN, "rebuild with V's own lag: %d %s", err, errstr);
        ck_assert_int_eq(rep.lag, 1);
        sk_test_get_str(meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "1");
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("rebuild_parts", &(sk_test_fix_opts_t){ .partitions = 6,
                                                                  .delivery_timeout_ms = 2000,
                                                                  .lock_wait_s = 5 });
}

int main(void)
{
        Suite *s = suite_create("rebuild_partitions");
        TCase *tc = tcase_create("rebuild");

        sk_db_library_init();
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, other_vouchers_backlog_does_not_hold_the_rebuild);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
