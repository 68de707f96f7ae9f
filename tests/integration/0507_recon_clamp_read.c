/* 0507_recon_clamp_read.c: the reconciler's sold_out clamp when the DB stock read fails
 * (DESIGN.md 4 "rollback.lua", 8 "DB stock exhausted"): a FAILED (sold_out) outcome
 * whose rollback never ran is followed with rollback.lua clamp-to the DB stock read
 * FOR SHARE in a second transaction.
 *   - the read fails once (failpoint reconciler.clamp_read=1*error, "as if the DB
 *     had failed"): the read is retried and the clamp applied in the same pass;
 *   - the read fails every time: rollback.lua never runs (no T:r fence claims a clamp
 *     that was not applied, stock and user untouched), exit 2; the next pass clamps. */
#include "sk_test.h"

/* A voucher of 5 with one purchase of @p user whose FAILED (sold_out) is committed and
 * whose rollback never ran; DB stock set to 1 (the clamp target). Returns the trace. */
static int64_t sold_out_pending(int64_t vid, int64_t user)
{
        char json[SK_MSG_MAX], sql[256], errstr[512] = "";
        sk_order_msg_t msg;
        sk_outcome_t existing;
        int64_t trace = sk_test_admit(vid, user, NULL, NULL, json);

        sk_test_parse_msg(json, &msg);
        ck_assert_msg(sk_outcome_fail(sk_test_fx.db, &msg, SK_REASON_SOLD_OUT, "test", &existing, errstr,
                                      sizeof(errstr)) == SK_OK, "outcome_fail: %s", errstr);
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = 1 WHERE voucher_id = %" PRId64, vid);
        ck_assert_int_eq(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        sk_sleep_ms(2500, NULL);
        return trace;
}

/* The "clamped" flag of the T:r fence of @p trace, or -1 without a fence. */
static int fence_clamped(int64_t vid, int64_t trace)
{
        char key[SK_KEY_MAX], f[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int v = -1;

        sk_key_voucher(key, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(f, trace, 'r');
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HGET %s %s", key, f), SK_OK);
        if (reply->type == REDIS_REPLY_STRING)
                v = strstr(reply->str, "\"clamped\":1") ? 1 : 0;
        freeReplyObject(reply);
        return v;
}

START_TEST(read_failing_once_is_retried)
{
        char out[65536], vs[SK_ID_STRLEN];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        int rc;

        sk_id_format(vid, vs);
        trace = sold_out_pending(vid, user);
        rc = sk_test_reconcile(args, "reconciler.clamp_read=1*error", out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 1);
        ck_assert_int_eq(fence_clamped(vid, trace), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        ck_assert_int_eq(sk_test_has_user(vid, user), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "errors"), 0);
        ck_assert_int_eq(rc, 1);
}
END_TEST

START_TEST(read_failing_always_writes_no_fence)
{
        char out[65536], vs[SK_ID_STRLEN];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        int rc;

        sk_id_format(vid, vs);
        trace = sold_out_pending(vid, user);
        rc = sk_test_reconcile(args, "reconciler.clamp_read=error", out, sizeof(out));
        ck_assert_int_eq(rc, 2);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
        ck_assert_int_ge(sk_test_report_field(out, vid, "errors"), 1);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 0);     /* no T:r for an unapplied clamp */
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        ck_assert_int_eq(sk_test_has_user(vid, user), 1);

        /* The DB answers again: the next pass clamps. */
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 1);
        ck_assert_int_eq(fence_clamped(vid, trace), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        ck_assert_int_eq(sk_test_has_user(vid, user), 0);
        ck_assert_int_eq(rc, 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0507_recon_clamp_read");
        TCase *tc = tcase_create("clamp");
        int rc;

        sk_test_fix_setup("recon_clamp", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                .delivery_timeout_ms = 500,
                                                                .lock_wait_s = 5 });
        tcase_set_timeout(tc, 180);
        tcase_add_test(tc, read_failing_once_is_retried);
        tcase_add_test(tc, read_failing_always_writes_no_fence);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
