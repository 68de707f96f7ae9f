/* 0509_decide.c: sk/decide.h, the one implementation of "record FAILED, compare ids on
 * a duplicate, follow CREATED or FAILED" (DESIGN.md 7) and of the sold_out clamp
 * (DESIGN.md 4, 8), against the real MariaDB and Redis:
 *   - FAILED lost recorded, then rollback.lua: stock restored, user released, fenced;
 *   - a duplicate whose row is CREATED is followed: no rollback, no fence;
 *   - a duplicate whose row names other ids is a collision: nothing written;
 *   - a duplicate whose row is FAILED sold_out is followed with the clamp;
 *   - sold_out: a restock committed while rollback.lua runs waits for the shared lock
 *     of the stock read (the clamp never undoes it), and the clamp used the stock read;
 *   - a stock read failing every time: rollback.lua never runs (no fence);
 *   - proceed() saying stop: nothing written. */
#include <pthread.h>
#include "sk_test.h"
#include "sk/decide.h"
#include "sk/failpoint.h"

static void set_stock(int64_t vid, int64_t stock)
{
        char sql[256], errstr[256];
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = %" PRId64
                 " WHERE voucher_id = %" PRId64, stock, vid);
        ck_assert_int_eq(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)), SK_OK);
}

START_TEST(records_then_rolls_back)
{
        char json[SK_MSG_MAX], errstr[512] = "";
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        sk_order_msg_t msg;
        sk_decider_t d;
        sk_decision_t dec;

        trace = sk_test_admit(vid, user, NULL, NULL, json);
        sk_test_parse_msg(json, &msg);
        sk_test_decider(&d);
        ck_assert_msg(sk_decide_failed(&d, &msg, SK_REASON_LOST, "test", &dec, errstr,
                                       sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(dec.how, SK_DECIDED_RECORDED);
        ck_assert_int_eq(dec.rolled_back, 1);
        ck_assert_int_eq(dec.res.restored, 1);
        ck_assert_int_eq(sk_test_outcome(trace), SK_OUTCOME_FAILED);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 1);
        ck_assert_int_eq(sk_test_has_user(vid, user), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
        /* Again: the duplicate is followed, rollback.lua answers ALREADY. */
        ck_assert_int_eq(sk_decide_failed(&d, &msg, SK_REASON_LOST, "test", &dec, errstr,
                                          sizeof(errstr)), SK_OK);
        ck_assert_int_eq(dec.how, SK_DECIDED_FOLLOWED_FAILED);
        ck_assert_int_eq(dec.res.already, 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
}
END_TEST

START_TEST(created_followed_collision_refused)
{
        char json[SK_MSG_MAX], errstr[512] = "", sql[512];
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        sk_order_msg_t msg, other;
        sk_decider_t d;
        sk_decision_t dec;

        trace = sk_test_admit(vid, user, NULL, NULL, json);
        sk_test_parse_msg(json, &msg);
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id,"
                 " voucher_id, outcome) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                 ", 1)", msg.trace_id, msg.order_id, msg.user_id, msg.voucher_id);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        sk_test_decider(&d);
        ck_assert_int_eq(sk_decide_failed(&d, &msg, SK_REASON_LOST, "test", &dec, errstr,
                                          sizeof(errstr)), SK_OK);
        ck_assert_int_eq(dec.how, SK_DECIDED_FOLLOWED_CREATED);
        ck_assert_int_eq(dec.rolled_back, 0);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);

        other = msg;
        other.order_id = msg.order_id + 1;
        ck_assert_int_eq(sk_decide_failed(&d, &other, SK_REASON_LOST, "test", &dec, errstr,
                                          sizeof(errstr)), SK_EEXIST);
        ck_assert_int_eq(dec.how, SK_DECIDED_COLLISION);
        ck_assert_ptr_nonnull(strstr(errstr, "collision"));
        ck_assert_int_eq(sk_test_fenced(vid, trace), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        ck_assert_int_eq(sk_test_outcome(trace), SK_OUTCOME_CREATED);
}
END_TEST

/* A restock issued while rollback.lua is held back by a failpoint sleep. */
typedef struct restock {
        int64_t vid;
        int64_t done_ms;
        char errstr[256];
        sk_err_t err;
} restock_t;

static void *restock_thread(void *arg)
{
        restock_t *rs = arg;
        char sql[256];
        sk_db_t *db;

        /* Into the follower's 1.5 s sleep (after its stock-row write and read): started
         * at once, on a loaded host the restock sometimes committed before the follower
         * even reached the row (cluster pass: clamp_to 4, nothing to clamp). */
        sk_sleep_ms(500, NULL);
        db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 20, rs->errstr, sizeof(rs->errstr));

        if (!db) {
                rs->err = SK_EAGAIN;
                return NULL;
        }
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = stock + 3"
                 " WHERE voucher_id = %" PRId64, rs->vid);
        rs->err = sk_db_exec(db, sql, rs->errstr, sizeof(rs->errstr));
        rs->done_ms = sk_mono_ms();
        sk_db_close(db);
        return NULL;
}

START_TEST(sold_out_clamp_holds_the_stock_row)
{
        char json[SK_MSG_MAX], errstr[512] = "";
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace,
                                                            rolled_ms;
        sk_order_msg_t msg;
        sk_decider_t d;
        sk_decision_t dec;
        restock_t rs;
        pthread_t th;

        trace = sk_test_admit(vid, user, NULL, NULL, json);
        sk_test_parse_msg(json, &msg);
        set_stock(vid, 1);
        sk_test_decider(&d);
        d.failpoint = "test.before_rollback";
        ck_assert_int_eq(sk_failpoint_setup("test.before_rollback=1*sleep(1500)", errstr,
                                            sizeof(errstr)), 0);
        memset(&rs, 0, sizeof(rs));
        rs.vid = vid;
        /* FAILED sold_out committed; the restock starts while the follower sleeps (after
         * its stock read, before rollback.lua). */
        ck_assert_int_eq(sk_outcome_fail(sk_test_fx.db, &msg, SK_REASON_SOLD_OUT, "test",
                                         &dec.row, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(pthread_create(&th, NULL, restock_thread, &rs), 0);
        ck_assert_int_eq(sk_decide_follow(&d, &msg, &(sk_outcome_t){ .trace_id = msg.trace_id,
                         .order_id = msg.order_id, .user_id = msg.user_id,
                         .voucher_id = msg.voucher_id, .outcome = SK_OUTCOME_FAILED,
                         .reason = SK_REASON_SOLD_OUT }, &dec, errstr, sizeof(errstr)), SK_OK);
        rolled_ms = sk_mono_ms();
        pthread_join(th, NULL);
        ck_assert_msg(rs.err == SK_OK, "restock: %s", rs.errstr);
        (void)sk_failpoint_setup("", errstr, sizeof(errstr));
        fprintf(stderr, "clamp_to %" PRId64 ", restock done %" PRId64 " ms after the follow\n",
                dec.clamp_to, rs.done_ms - rolled_ms);
        ck_assert_int_eq(dec.how, SK_DECIDED_FOLLOWED_FAILED);
        ck_assert_int_eq(dec.res.clamped, 1);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 1);
        ck_assert_int_eq(sk_test_has_user(vid, user), 0);
        if (dec.clamp_to == 1) {
                /* The read came first: the restock waited for the transaction's end. */
                ck_assert_int_ge(rs.done_ms, rolled_ms - 200);
                ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        } else {
                /* The restock committed before the read: the clamp saw it. */
                ck_assert_int_eq(dec.clamp_to, 4);
                ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        }
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);
}
END_TEST

static int say_stop(void *arg)
{
        (void)arg;
        return 0;
}

START_TEST(unreadable_stock_or_stop_writes_nothing)
{
        char json[SK_MSG_MAX], errstr[512] = "";
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        sk_order_msg_t msg;
        sk_decider_t d;
        sk_decision_t dec;
        sk_err_t err;

        trace = sk_test_admit(vid, user, NULL, NULL, json);
        sk_test_parse_msg(json, &msg);
        sk_test_decider(&d);
        d.proceed = say_stop;
        ck_assert_int_eq(sk_decide_failed(&d, &msg, SK_REASON_SOLD_OUT, "test", &dec, errstr,
                                          sizeof(errstr)), SK_ESTOP);
        ck_assert_int_eq(sk_test_outcome(trace), 0);

        sk_test_decider(&d);
        ck_assert_int_eq(sk_failpoint_setup("reconciler.clamp_read=error", errstr, sizeof(errstr)), 0);
        err = sk_decide_failed(&d, &msg, SK_REASON_SOLD_OUT, "test", &dec, errstr, sizeof(errstr));
        (void)sk_failpoint_setup("", errstr, sizeof(errstr));
        ck_assert_int_eq(err, SK_EFAIL);
        ck_assert_int_eq(dec.how, SK_DECIDED_RECORDED);
        ck_assert_int_eq(dec.rolled_back, 0);
        ck_assert_int_eq(sk_test_outcome(trace), SK_OUTCOME_FAILED);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 0);   /* no fence for an unapplied clamp */
        ck_assert_int_eq(sk_test_has_user(vid, user), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0509_decide");
        TCase *tc = tcase_create("decide");
        int rc;

        sk_test_fix_setup("decide", &(sk_test_fix_opts_t){ .partitions = 2,
                                                           .delivery_timeout_ms = 500,
                                                           .lock_wait_s = 5 });
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, records_then_rolls_back);
        tcase_add_test(tc, created_followed_collision_refused);
        tcase_add_test(tc, sold_out_clamp_holds_the_stock_row);
        tcase_add_test(tc, unreadable_stock_or_stop_writes_nothing);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
