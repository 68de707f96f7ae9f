/* 0508_recon_lock_mid_pass.c: a pass whose run lock dies mid-pass stops at once
 * (DESIGN.md 8 "re-drive bookkeeping": one reconciler at a time per deployment).
 * Reconciler A re-drives three traces and sleeps after recording the first one
 * (failpoint reconciler.after_redrive=1*sleep); the test makes A's tb_lock row expire
 * (as if A had stalled past its ttl), runs reconciler B (it takes the expired row and
 * works), and then checks that A, once awake, acted no more: its re-check before the
 * next write finds the row naming B, so it recorded one re-drive, not three, and exited
 * 2 saying the run lock was lost (DESIGN.md 16). */
#include "sk_test.h"
#include "sk/claim.h"
#include "sk/traceset.h"

/* The claim record of @p trace. */
static void claim_of(int64_t vid, int64_t trace, sk_claim_rec_t *c)
{
        char key[SK_KEY_MAX], f[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;

        sk_key_voucher(key, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(f, trace, 'c');
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HGET %s %s", key, f), SK_OK);
        sk_claim_parse(reply->type == REDIS_REPLY_STRING ? reply->str : NULL, c);
        freeReplyObject(reply);
}

/* How many of @p traces have a re-drive recorded (claim.lua sent). */
static int sent_count(int64_t vid, const int64_t *traces, int n)
{
        sk_claim_rec_t c;
        int i, k = 0;

        for (i = 0; i < n; i++) {
                claim_of(vid, traces[i], &c);
                k += c.partition >= 0;
        }
        return k;
}

/* The first idempotent producer of a fresh broker may time out with the test's short
 * delivery timeout: re-drive a warm-up purchase until Kafka persists it. */
static void warm_up(void)
{
        char out[65536], vs[SK_ID_STRLEN];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 1, .db_stock = 1,
                                                            .db_status = 1, .preheat = 1 });
        int i;

        sk_id_format(vid, vs);
        (void)sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        for (i = 0; i < 10; i++) {
                (void)sk_test_reconcile(args, NULL, out, sizeof(out));
                if (sk_test_report_field(out, vid, "redriven") == 1)
                        return;
                sk_sleep_ms(1000, NULL);
        }
        ck_abort_msg("Kafka never persisted the warm-up re-drive");
}

START_TEST(lost_lock_mid_pass_acts_no_more)
{
        char out_a[65536], out_b[65536], vs[SK_ID_STRLEN], fitted[256];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 10, .db_stock = 10,
                                                            .db_status = 1, .preheat = 1 }),
                                                            traces[3], live, deadline;
        sk_claim_rec_t c;
        int fd = -1, rc_a, rc_b, i;
        pid_t a;

        warm_up();
        sk_id_format(vid, vs);
        for (i = 0; i < 3; i++)
                traces[i] = sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        sk_test_reconcile_lock(fitted, sizeof(fitted), 1);
        a = sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-reconciler", .args = args, .out_fd = &fd, .failpoints = "reconciler.after_redrive=1*sleep(8000)" });
        /* A is inside the sleep once it recorded its first re-drive. */
        deadline = sk_mono_ms() + 60000;
        while (sent_count(vid, traces, 3) < 1 && sk_mono_ms() < deadline)
                sk_sleep_ms(50, NULL);
        ck_assert_int_eq(sent_count(vid, traces, 3), 1);
        live = sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = '%s' AND until >= NOW(3)",
                           fitted);
        ck_assert_msg(live == 1, "the reconciler does not hold %s", fitted);
        sk_test_exec("UPDATE tb_lock SET until = NOW(3) - INTERVAL 1 SECOND WHERE name = '%s'",
                     fitted);

        /* B runs while A sleeps: the row has expired, B takes it and works. */
        rc_b = sk_test_reconcile(args, NULL, out_b, sizeof(out_b));
        ck_assert_ptr_null(strstr(out_b, "another seckill-reconciler run holds the lock"));
        ck_assert_int_eq(sk_test_report_field(out_b, vid, "redriven"), 2);
        ck_assert_int_eq(rc_b, 2); /* the first trace's re-drive waits on consumers */

        sk_test_read_all(fd, out_a, sizeof(out_a), 120);
        rc_a = sk_test_wait_exit(a, 10);
        fprintf(stderr, "A exit %d: %s", rc_a, out_a);
        ck_assert_int_eq(rc_a, 2);
        ck_assert_ptr_nonnull(strstr(out_a, "run lock lost"));
        /* A stopped at once: one re-drive recorded, nothing after the kill. */
        ck_assert_int_eq(sk_test_report_field(out_a, vid, "redriven"), 1);
        for (i = 0; i < 3; i++) {
                claim_of(vid, traces[i], &c);
                ck_assert_int_eq(c.failed, 0);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0508_recon_lock_mid_pass");
        TCase *tc = tcase_create("lock");
        int rc;

        sk_test_fix_setup("recon_lockmid", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 500,
                                                                  .lock_wait_s = 5 });
        tcase_set_timeout(tc, 180);
        tcase_add_test(tc, lost_lock_mid_pass_acts_no_more);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
