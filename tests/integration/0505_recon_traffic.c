/* 0505_recon_traffic.c: reconciler passes while purchases flow (DESIGN.md 8, 9:
 * a pass while traffic flows finds no false inconsistency). A child process plays the
 * front (deduct.lua + publish, ~100 purchases/s) while the real consumer creates the
 * orders and the test runs passes back to back: no pass reports an inconsistency, a
 * collision, a rollback or a stock/users drift. Once the traffic stops and the consumer
 * caught up, a pass exits 0 and verify passes. */
#include "sk_test.h"
#include "sk/verify.h"

#define TRAFFIC_MS 8000

/* The "front": runs in a child with its own connections. */
static void traffic(int64_t vid)
{
        char errstr[512] = "", key[SK_ID_STRLEN];
        rd_kafka_conf_t *kconf;
        rd_kafka_t *rk;
        int64_t t0 = sk_mono_ms();
        int n = 0;

        sk_test_fx.r = sk_redis_connect(&sk_test_fx.conf.redis, 5000, errstr, sizeof(errstr));
        kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr));
        if (!sk_test_fx.r || !kconf || !(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr)))) {
                fprintf(stderr, "traffic: %s\n", errstr);
                _exit(1);
        }
        sk_id_format(vid, key);
        while (sk_mono_ms() - t0 < TRAFFIC_MS) {
                char json[SK_MSG_MAX];
                int i;
                for (i = 0; i < 10; i++, n++) {
                        (void)sk_test_admit(vid, sk_test_rand_id(), NULL, NULL, json);
                        if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(sk_test_fx.conf.topic), RD_KAFKA_V_KEY(key, strlen(key)),
                                              RD_KAFKA_V_VALUE(json, strlen(json)),
                                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END) != 0)
                                _exit(1);
                }
                rd_kafka_poll(rk, 100 /* ms */);
        }
        rd_kafka_flush(rk, 10000);
        rd_kafka_destroy(rk);
        fprintf(stderr, "traffic: %d purchases\n", n);
        _exit(0);
}

START_TEST(passes_during_traffic)
{
        char out[65536], vs[SK_ID_STRLEN], errstr[512] = "";
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 100000, .db_stock = 100000,
                                                            .db_status = 1, .preheat = 1 }),
                                                            deadline;
        sk_verify_report_t vr;
        pid_t cons, front;
        int rc, passes = 0, status = 0;

        sk_id_format(vid, vs);
        cons = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 0);
        fflush(stderr);
        front = fork();
        ck_assert(front >= 0);
        if (front == 0)
                traffic(vid);
        while (waitpid(front, &status, WNOHANG) == 0) {
                rc = sk_test_reconcile(args, NULL, out, sizeof(out));
                passes++;
                ck_assert_int_eq(sk_test_report_field(out, vid, "inconsistent"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "collisions"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "stockDrift"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "usersDrift"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "errors"), 0);
                ck_assert_msg(rc == 0 || rc == 1, "pass %d exit %d", passes, rc);
        }
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "traffic child failed");
        ck_assert_int_gt(passes, 1);

        /* Quiescence: every purchase decided, then a clean pass and verify. */
        deadline = sk_mono_ms() + 60000;
        while (sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid) !=
               100000 - sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid) ||
               sk_test_stock(NULL, NULL, vid) != sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid)) {
                ck_assert_msg(sk_mono_ms() < deadline, "consumer did not catch up");
                sk_sleep_ms(300, NULL);
        }
        sk_sleep_ms(2500, NULL); /* every entry older than the grace period */
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "young"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), sk_test_report_field(out, vid, "entries"));
        ck_assert_int_eq(sk_verify_voucher(&sk_test_fx.conf, vid, &vr, errstr, sizeof(errstr)), SK_OK);
        ck_assert_msg(vr.ok, "verify after the traffic");
        ck_assert_int_eq(vr.active_orders, sk_test_report_field(out, vid, "entries"));
        sk_test_stop(cons, 30);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0505_recon_traffic");
        TCase *tc = tcase_create("traffic");
        int rc;

        sk_test_fix_setup("recon_traffic", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 500,
                                                                  .lock_wait_s = 5 });
        tcase_set_timeout(tc, 200);
        tcase_add_test(tc, passes_during_traffic);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
