/* 0204_preheat_wiped.c: a plain preheat of a voucher that could have sales anywhere is a
 * rebuild, never a fresh SET (DESIGN.md 8, last sentence of the rebuild row).
 *  - Redis lost every key of V while its purchase still waits in Kafka (DB stock = init,
 *    no outcome yet): before the fix `voucher preheat` SET the full stock with an empty
 *    users hash and re-admitted the in-flight purchase; now it runs the rebuild, which
 *    waits for the message and gives up (exit 2) without writing stock.
 *  - V2 has an outcome row only (DB stock = init, no keys, nothing in Kafka): the preheat
 *    is a rebuild too, and it finishes.
 *  - V3 has nothing anywhere: a plain preheat (fresh SET); so has V4 while V's message
 *    waits (only a message keyed by the voucher itself counts). */
#include "sk_test.h"
#include "sk/rebuild.h"

static void wipe(int64_t vid)
{
        char k[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        sk_key_kind_t kinds[4] = { SK_KEY_META, SK_KEY_STOCK, SK_KEY_USERS, SK_KEY_TRACE };

        for (int i = 0; i < 4; i++) {
                sk_test_key(k, vid, kinds[i]);
                ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "DEL %s", k),
                                 SK_OK);
                freeReplyObject(reply);
        }
}

START_TEST(preheat_of_a_wiped_voucher_with_purchases_in_flight)
{
        char errstr[512] = "", json[SK_MSG_MAX], key[32], stock[SK_KEY_MAX], val[64];
        sk_rebuild_report_t rep;
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 10, .db_stock = 10,
                                                            .stock = -1, .db_status = 1 });
        sk_err_t err;

        sk_test_key(stock, vid, SK_KEY_STOCK);
        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK && rep.rebuilt == 0, "first preheat: %d %s", err, errstr);
        /* A purchase admitted and published; the consumers lag. Then Redis loses V. */
        sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, json);
        snprintf(key, sizeof(key), "%" PRId64, vid);
        sk_test_produce_key(key, json);
        wipe(vid);

        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 1500, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN, "preheat re-admitted in-flight purchases: %d %s", err,
                      errstr);
        ck_assert_int_eq(rep.rebuilt, 1);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "(nil)");

        /* A new voucher: V's message on the partitions is not one of its purchases, so
         * its first preheat is a plain one (another voucher's backlog never makes it a
         * rebuild). */
        vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 3, .db_stock = 3, .stock = -1,
                                                    .db_status = 1 });
        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK && rep.rebuilt == 0, "new voucher: %d %s", err, errstr);
        sk_test_key(stock, vid, SK_KEY_STOCK);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "3");
}
END_TEST

START_TEST(preheat_with_outcome_rows_is_a_rebuild)
{
        char errstr[512] = "", sql[512], stock[SK_KEY_MAX], val[64];
        sk_rebuild_report_t rep;
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 10, .db_stock = 10,
                                                            .stock = -1, .db_status = 1 }),
                                                            fresh = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 7,
                                                                                                          .db_stock = 7,
                                                                                                          .stock = -1,
                                                                                                          .db_status = 1 });
        sk_err_t err;

        /* A decided purchase of V (FAILED: the DB stock did not move), no Redis keys. */
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id,"
                 " voucher_id, outcome, reason) VALUES (%" PRId64 ", 1, 2, %" PRId64
                 ", 2, 'lost')", sk_test_rand_id(), vid);
        sk_test_exec("%s", sql);
        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %d %s", err, errstr);
        ck_assert_int_eq(rep.rebuilt, 1);
        sk_test_key(stock, vid, SK_KEY_STOCK);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "10");

        /* Nothing anywhere (this test's topic has no message): a plain preheat. */
        err = sk_voucher_preheat(&sk_test_fx.conf, fresh, 3000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %d %s", err, errstr);
        ck_assert_int_eq(rep.rebuilt, 0);
        sk_test_key(stock, fresh, SK_KEY_STOCK);
        sk_test_get_str(stock, NULL, val, sizeof(val));
        ck_assert_str_eq(val, "7");
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("preheat_wiped", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 2000,
                                                                  .lock_wait_s = 5 });
}

int main(void)
{
        Suite *s = suite_create("preheat_wiped");
        TCase *tc = tcase_create("preheat");

        sk_db_library_init();
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 120);
        /* The second test needs a topic without messages: it runs first. */
        tcase_add_test(tc, preheat_with_outcome_rows_is_a_rebuild);
        tcase_add_test(tc, preheat_of_a_wiped_voucher_with_purchases_in_flight);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
