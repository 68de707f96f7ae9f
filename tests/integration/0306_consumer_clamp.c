/* 0306_consumer_clamp.c: the sold_out clamp when the DB stock read fails (DESIGN.md 4
 * rollback.lua, 8 sold_out row). One-partition topic; both cases share a group, so the
 * second consumer starts after the first case's message.
 * 1. The clamp's stock read fails three times (failpoint consumer.clamp_read=3*error):
 *    it is retried, and Redis is clamped to the DB stock (0), the user released.
 * 2. The read never succeeds (consumer.clamp_read=error): FAILED sold_out is committed
 *    but rollback.lua is never run, so no `T:r` claims a clamp that was not applied:
 *    no fence, Redis stock and users untouched (the reconciler finishes it). */
#include "sk_test.h"

#define WAIT_S 60

/* The consumer of the running case, stopped by main if an assertion left it running. */

static int64_t wait_failed(int64_t trace)
{
        char sql[256];
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                 " AND outcome = 2 AND reason = 'sold_out'", trace);
        return sk_test_wait_i64(WAIT_S, 1, sql);
}

START_TEST(clamp_read_retried)
{
        int64_t vid = sk_test_rand_id(), uid = sk_test_rand_id();
        sk_order_msg_t m;
        char json[SK_MSG_MAX];
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 5, .db_stock = 0, .stock = 2,
                                              .status = 1, .db_status = 1 });
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .failpoints = "consumer.clamp_read=3*error" }, 1);
        sk_test_produce(vid, json);
        ck_assert_int_eq(wait_failed(m.trace_id), 1);
        for (int t = 0; t < 200 && !sk_test_fenced(vid, m.trace_id); t++)
                sk_sleep_ms(100, NULL);
        ck_assert(sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 0);               /* clamped after the retries */
        ck_assert(!sk_test_user_is(vid, uid, m.trace_id));      /* released */
        ck_assert_int_eq(WEXITSTATUS(sk_test_stop(pid, 30)), 0);
}
END_TEST

START_TEST(clamp_never_read_writes_no_fence)
{
        int64_t vid = sk_test_rand_id(), uid = sk_test_rand_id();
        sk_order_msg_t m, later;
        char json[SK_MSG_MAX], json2[SK_MSG_MAX], sql[256];
        pid_t pid;

        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 5, .db_stock = 0, .stock = 3,
                                              .status = 1, .db_status = 1 });
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &later, json2), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .failpoints = "consumer.clamp_read=error" }, 1);
        sk_test_produce(vid, json);
        sk_test_produce(vid, json2);
        ck_assert_int_eq(wait_failed(m.trace_id), 1);
        /* The second message is decided only after the first one's rollback gave up. */
        ck_assert_int_eq(wait_failed(later.trace_id), 1);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64, vid);
        ck_assert_int_eq(sk_test_i64("%s", sql), 2);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);                /* nothing clamped */
        ck_assert(sk_test_user_is(vid, uid, m.trace_id));        /* nothing released */
        ck_assert_int_eq(WEXITSTATUS(sk_test_stop(pid, 30)), 0);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        ck_assert(!sk_test_fenced(vid, later.trace_id));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_clamp");
        TCase *tc = tcase_create("clamp");
        int rc;

        sk_test_fix_setup("cons_clamp", &(sk_test_fix_opts_t){ .partitions = 1 });
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, clamp_read_retried);
        tcase_add_test(tc, clamp_never_read_writes_no_fence);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
