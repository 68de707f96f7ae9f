/* 0502_recon_lock.c: the reconciler's run lock (DESIGN.md 8, one pass at a time): a tb_lock row
 * (DESIGN.md 16) named with the database and the key prefix.
 *   - the lock held elsewhere (a live row of another holder): the run says so and exits 0
 *     without touching anything;
 *   - two reconcilers at once: one works, the other says so and exits 0;
 *   - the row taken over mid-run (another holder writes it, as a run would after the
 *     row expired): the run stops before its next write (exit 2, "lock lost"). */
#include "sk_test.h"

START_TEST(lock_held_elsewhere_exits_0)
{
        char out[65536], name[256], errstr[512] = "";
        sk_dblock_t *holder;
        const char *args[] = { "--grace-seconds", "2", NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }), trace;
        int rc;

        trace = sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        sk_test_reconcile_lock(name, sizeof(name), 0);
        holder = sk_dblock_open(&sk_test_fx.conf.mysql, name, 60000, errstr, sizeof(errstr));
        ck_assert_msg(holder != NULL, "%s", errstr);
        ck_assert_int_eq(sk_dblock_take(holder, 0, errstr, sizeof(errstr)), SK_OK);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_ptr_nonnull(strstr(out, "another seckill-reconciler run holds the lock"));
        /* Nothing was done: no claim record written. */
        ck_assert_int_eq(sk_test_trace_field(vid, trace, 'c'), 0);
        sk_dblock_close(holder); /* released: until in the past */
        /* Free again: the next run works (re-drives it). */
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 1);
}
END_TEST

START_TEST(two_at_once_one_works)
{
        char out_a[65536], out_b[65536], vs[SK_ID_STRLEN];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 });
        int fd_a = -1, rc_a, rc_b;
        pid_t a;

        sk_id_format(vid, vs);
        (void)sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        /* A sleeps 4 s after its re-drive, holding the lock; B starts meanwhile. */
        a = sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-reconciler", .args = args, .out_fd = &fd_a, .failpoints = "reconciler.after_redrive=sleep(4000)" });
        sk_sleep_ms(1500, NULL);
        rc_b = sk_test_reconcile(args, NULL, out_b, sizeof(out_b));
        sk_test_read_all(fd_a, out_a, sizeof(out_a), 120);
        rc_a = sk_test_wait_exit(a, 10);
        fprintf(stderr, "A exit %d: %s", rc_a, out_a);
        ck_assert_int_eq(rc_b, 0);
        ck_assert_ptr_nonnull(strstr(out_b, "another seckill-reconciler run holds the lock"));
        ck_assert_int_eq(rc_a, 1);
        ck_assert_int_eq(sk_test_report_field(out_a, vid, "redriven"), 1);
}
END_TEST

START_TEST(lost_lock_stops_the_run)
{
        char out[65536], fitted[256];
        const char *args[] = { "--grace-seconds", "2", "--json", NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            live = 0, deadline;
        int fd = -1, rc;
        pid_t a;

        (void)sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        sk_test_reconcile_lock(fitted, sizeof(fitted), 1);
        a = sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-reconciler", .args = args, .out_fd = &fd, .failpoints = "reconciler.after_redrive=sleep(4000)" });
        deadline = sk_mono_ms() + 20000;
        while (live <= 0 && sk_mono_ms() < deadline) {
                live = sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = '%s' AND "
                                   "until >= NOW(3)", fitted);
                if (live <= 0)
                        sk_sleep_ms(100, NULL);
        }
        ck_assert_msg(live > 0, "the reconciler never took %s", fitted);
        sk_sleep_ms(1000, NULL); /* inside the failpoint sleep */
        /* Another holder has the row now (as a run that found it expired would). */
        sk_test_exec("UPDATE tb_lock SET holder = 'intruder:1:1', until = NOW(3) + INTERVAL 60 "
                     "SECOND WHERE name = '%s'", fitted);
        sk_test_read_all(fd, out, sizeof(out), 120);
        rc = sk_test_wait_exit(a, 10);
        fprintf(stderr, "exit %d: %s", rc, out);
        ck_assert_int_eq(rc, 2);
        ck_assert_ptr_nonnull(strstr(out, "run lock lost"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0502_recon_lock");
        TCase *tc = tcase_create("lock");
        int rc;

        sk_test_fix_setup("recon_lock", &(sk_test_fix_opts_t){ .partitions = 2,
                                                               .delivery_timeout_ms = 500,
                                                               .lock_wait_s = 5 });
        tcase_set_timeout(tc, 180);
        tcase_add_test(tc, lock_held_elsewhere_exits_0);
        tcase_add_test(tc, two_at_once_one_works);
        tcase_add_test(tc, lost_lock_stops_the_run);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
