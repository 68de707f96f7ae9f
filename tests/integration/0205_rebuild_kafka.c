/* 0205_rebuild_kafka.c: the rebuild of DESIGN.md 8 (sk/rebuild.h) against the real
 * broker, MariaDB and Redis. A unique topic (2 partitions), group, database and prefix.
 * Checks: a message the group has not consumed keeps the rebuild waiting (SK_EAGAIN,
 * lag reported, meta status put back); once the group's committed offsets reach the
 * high watermarks the rebuild copies the DB state; the voucher's advisory lock (its
 * tb_lock row) held live by another holder makes the rebuild and the meta reset give up
 * (SK_EAGAIN) without writing; the meta reset rewrites a stuck status 4 from the DB once
 * nobody holds the lock. */
#include "sk_test.h"
#include "sk/rebuild.h"
#include "sk/vstatus.h"

static int64_t g_voucher;

START_TEST(rebuild_waits_for_the_group)
{
        char errstr[512] = "", meta[SK_KEY_MAX], stock[SK_KEY_MAX], val[64], lock[256];
        char key[32];
        int32_t part;
        sk_rebuild_report_t rep;
        sk_redis_t *r;
        sk_db_t *db;
        sk_dblock_t *other;
        redisReply *reply = NULL;
        int written = -1;
        sk_err_t err;

        r = sk_redis_connect(&sk_test_fx.conf.redis, 5000, errstr, sizeof(errstr));
        ck_assert_msg(r != NULL, "%s", errstr);
        db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 1, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "%s", errstr);
        sk_key_voucher(meta, sk_test_fx.conf.redis_prefix, g_voucher, 0, SK_KEY_META);
        sk_key_voucher(stock, sk_test_fx.conf.redis_prefix, g_voucher, 0, SK_KEY_STOCK);

        err = sk_voucher_preheat(&sk_test_fx.conf, g_voucher, 0, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);
        ck_assert_int_eq(rep.rebuilt, 0);
        ck_assert_int_eq(rep.stock, 10);

        /* One message the group has not consumed: the rebuild waits, then gives up. */
        snprintf(key, sizeof(key), "%" PRId64, g_voucher);
        part = sk_test_produce_key(key, "{}");
        err = sk_rebuild_voucher(&sk_test_fx.conf, g_voucher, 1500, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN, "rebuild with lag: %d %s", err, errstr);
        ck_assert_int_eq(rep.lag, 1);
        ck_assert_ptr_nonnull(strstr(rep.detail, "left to consume"));
        ck_assert_int_eq(rep.prev_status, 1);
        sk_test_get_str(meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "1");

        /* The DB moved on meanwhile (a consumer sold 3); once the group caught up, the
         * rebuild copies it. */
        ck_assert_int_eq(sk_db_exec(db, "UPDATE tb_seckill_stock SET stock = 7", errstr,
                                    sizeof(errstr)), SK_OK);
        sk_test_commit_hwm(part);
        err = sk_rebuild_voucher(&sk_test_fx.conf, g_voucher, 10000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "rebuild: %d %s", err, errstr);
        ck_assert_int_eq(rep.lag, 0);
        ck_assert_int_eq(rep.stock, 7);
        ck_assert_int_eq(sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "GET %s", stock), SK_OK);
        ck_assert_str_eq(reply->str, "7");
        freeReplyObject(reply);

        /* Someone holds the voucher's lock: rebuild and meta reset leave it alone. */
        sk_voucher_lock_name(lock, sizeof(lock), &sk_test_fx.conf, g_voucher);
        other = sk_dblock_open(&sk_test_fx.conf.mysql, lock, 60000, errstr, sizeof(errstr));
        ck_assert_msg(other != NULL, "%s", errstr);
        ck_assert_int_eq(sk_dblock_take(other, 0, errstr, sizeof(errstr)), SK_OK);
        err = sk_rebuild_voucher(&sk_test_fx.conf, g_voucher, 1000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN && strstr(errstr, "is held by"), "%d %s", err, errstr);
        ck_assert_int_eq(sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "HSET %s status 4",
                                       meta), SK_OK);
        freeReplyObject(reply);
        ck_assert_int_eq(sk_voucher_reset_meta_with(&sk_test_fx.conf, db, r, g_voucher, &written, errstr,
                                                    sizeof(errstr)), SK_EAGAIN);
        sk_test_get_str(meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "4");
        sk_dblock_release(other);
        /* Status 4 with nobody holding the lock: reset from the DB. */
        ck_assert_int_eq(sk_voucher_reset_meta_with(&sk_test_fx.conf, db, r, g_voucher, &written, errstr,
                                                    sizeof(errstr)), SK_OK);
        ck_assert_int_eq(written, 1);
        sk_test_get_str(meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "1");

        sk_dblock_close(other);
        sk_db_close(db);
        sk_redis_close(r);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("rebuild_kafka", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 2000,
                                                                  .lock_wait_s = 5 });
        g_voucher = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 10, .db_stock = 10,
                                                          .stock = -1, .db_status = 1 });
}

int main(void)
{
        Suite *s = suite_create("rebuild_kafka");
        TCase *tc = tcase_create("rebuild");

        sk_db_library_init();
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, rebuild_waits_for_the_group);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
