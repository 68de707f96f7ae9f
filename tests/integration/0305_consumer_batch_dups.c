/* 0305_consumer_batch_dups.c: a re-driven backlog keeps the batch (DESIGN.md 7), and
 * deductQty other than 1 is poison (DESIGN.md 5). One-partition topic.
 * 1. Two purchases are decided; then the consumer is stopped and a backlog is queued:
 *    both again (re-driven copies), eight new purchases, one of them twice. Restarted,
 *    the consumer settles the copies with the first copy or the stored outcome and
 *    applies the eight in ONE transaction: consumer_batch_fallbacks_total stays 0 and
 *    the batch-size histogram saw one transaction of 8; every purchase has one order.
 *    The restarted consumer has not seen a duplicate yet, so no pre-check runs: the
 *    outcome INSERT meets the two decided traceIds, rolls back, and the group is
 *    pre-checked and run again (consumer_precheck_retries_total 1). A second backlog
 *    in the same run (one more copy, two new purchases) is then pre-checked before its
 *    transaction (--precheck-groups 64, the default: retries stay 1; one transaction
 *    of 2), or, with --precheck-groups 0, met by the INSERT again (retries 2).
 * 2. A message with deductQty 2 (before/after consistent) goes to the DLQ as poison
 *    with a reason naming deductQty; no outcome, no order, DB stock unchanged. */
#include "sk_test.h"

#define WAIT_S 60

/* The consumer of the running case, stopped by main if an assertion left it running. */

static char g_metrics_addr[64];

/* --precheck-groups of the next consumer start (NULL: the default). */
static const char *g_precheck;

/* Flags of a consumer start, each with a fresh metrics port. */
static const char *const *consumer_flags(void)
{
        static const char *flags[8];
        int k = 0;

        /* A port the kernel just handed out free (a random one could be held). */
        snprintf(g_metrics_addr, sizeof(g_metrics_addr), "127.0.0.1:%d", sk_test_free_port());
        flags[k++] = "--batch-wait-ms";
        flags[k++] = "1000";
        flags[k++] = "--metrics-addr";
        flags[k++] = g_metrics_addr;
        if (g_precheck) {
                flags[k++] = "--precheck-groups";
                flags[k++] = g_precheck;
        }
        flags[k] = NULL;
        return flags;
}

/* The value of the sample line starting with @p sample ("name" or "name{labels}") on
 * the consumer's /metrics; -1 if missing. */
static int64_t metric(const char *sample)
{
        char cmd[256], line[1024];
        size_t n = strlen(sample);
        int64_t v = -1;
        FILE *p;

        snprintf(cmd, sizeof(cmd), "curl -s --max-time 5 http://%s/metrics", g_metrics_addr);
        ck_assert_ptr_nonnull(p = popen(cmd, "r"));
        while (fgets(line, sizeof(line), p))
                if (strncmp(line, sample, n) == 0 && line[n] == ' ')
                        v = strtoll(line + n + 1, NULL, 10);
        pclose(p);
        return v;
}

static int64_t wait_count(const char *fmt, int64_t vid, int64_t want)
{
        char sql[256];
        snprintf(sql, sizeof(sql), fmt, vid);
        return sk_test_wait_i64(WAIT_S, want, sql);
}

/* Part 1 with --precheck-groups @p precheck (NULL: the default); @p retries2: the
 * consumer_precheck_retries_total expected after the second backlog. */
static void redriven_backlog(const char *precheck, int64_t retries2)
{
        int64_t vid;
        sk_order_msg_t m[12];
        char json[12][SK_MSG_MAX];
        pid_t pid;
        int i;

        g_precheck = precheck;
        vid = sk_test_voucher_open(20);
        for (i = 0; i < 12; i++)
                ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &m[i], json[i]), 0);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .args = consumer_flags() }, 1);
        sk_test_produce(vid, json[0]);
        sk_test_produce(vid, json[1]);
        ck_assert_int_eq(wait_count("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64,
                                    vid, 2), 2);
        ck_assert_int_eq(WEXITSTATUS(sk_test_stop(pid, 30)), 0);

        /* The backlog: both decided purchases again, eight new ones, m[5] twice. */
        sk_test_produce_async(vid, json[0], strlen(json[0]));
        for (i = 2; i < 10; i++) {
                sk_test_produce_async(vid, json[i], strlen(json[i]));
                if (i == 5)
                        sk_test_produce_async(vid, json[i], strlen(json[i]));
        }
        sk_test_produce_async(vid, json[1], strlen(json[1]));
        sk_test_produce_wait();
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .args = consumer_flags() }, 1);
        ck_assert_int_eq(wait_count("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64,
                                    vid, 10), 10);
        /* The whole backlog (11 messages) was one batch with one transaction of 8. */
        for (i = 0; i < 50 && metric("seckill_consumer_duplicates_total") < 3; i++)
                sk_sleep_ms(100, NULL);
        ck_assert_int_eq(metric("seckill_consumer_duplicates_total"), 3);
        ck_assert_int_eq(metric("seckill_consumer_batch_fallbacks_total"), 0);
        ck_assert_int_eq(metric("seckill_consumer_precheck_retries_total"), 1);
        ck_assert_int_eq(metric("seckill_consumer_batch_size_count"), 1);
        ck_assert_int_eq(metric("seckill_consumer_batch_size_sum"), 8);
        ck_assert_int_eq(metric("seckill_consumer_carry_messages"), 0);

        /* A second backlog in the same run: m[2] again, two new purchases. */
        sk_test_produce_async(vid, json[10], strlen(json[10]));
        sk_test_produce_async(vid, json[2], strlen(json[2]));
        sk_test_produce_async(vid, json[11], strlen(json[11]));
        sk_test_produce_wait();
        ck_assert_int_eq(wait_count("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64,
                                    vid, 12), 12);
        for (i = 0; i < 50 && metric("seckill_consumer_duplicates_total") < 4; i++)
                sk_sleep_ms(100, NULL);
        ck_assert_int_eq(metric("seckill_consumer_duplicates_total"), 4);
        ck_assert_int_eq(metric("seckill_consumer_batch_fallbacks_total"), 0);
        ck_assert_int_eq(metric("seckill_consumer_precheck_retries_total"), retries2);
        ck_assert_int_eq(metric("seckill_consumer_batch_size_count"), 2);
        ck_assert_int_eq(metric("seckill_consumer_batch_size_sum"), 10);
        ck_assert_int_eq(WEXITSTATUS(sk_test_stop(pid, 30)), 0);

        for (i = 0; i < 12; i++) {
                ck_assert_int_eq(sk_test_i64("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                                        m[i].trace_id), SK_OUTCOME_CREATED);
                ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64,
                                        m[i].trace_id), 1);
                ck_assert(!sk_test_fenced(vid, m[i].trace_id));
        }
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 8);
        g_precheck = NULL;
}

START_TEST(redriven_backlog_keeps_the_batch)
{
        redriven_backlog(NULL, 1);
}
END_TEST

START_TEST(redriven_backlog_without_precheck)
{
        redriven_backlog("0", 2);
}
END_TEST

START_TEST(deduct_qty_2_is_poison)
{
        int64_t vid;
        sk_order_msg_t m;
        char json[SK_MSG_MAX];
        sk_test_dlq_msg_t dlq[4];
        pid_t pid;
        int got;

        vid = sk_test_voucher_open(5);
        memset(&m, 0, sizeof(m));
        m.trace_id = sk_test_rand_id();
        m.order_id = sk_test_rand_id();
        m.user_id = sk_test_rand_id();
        m.voucher_id = vid;
        m.before_qty = 5;
        m.deduct_qty = 2;
        m.after_qty = 3;
        m.ts_ms = sk_now_ms();
        sk_msg_format(&m, json, sizeof(json));
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ .args = consumer_flags() }, 1);
        sk_test_produce(vid, json);
        got = sk_test_read_dlq(dlq, 1, WAIT_S);
        ck_assert_int_ge(got, 1);
        ck_assert_str_eq(dlq[got - 1].kind, "poison");
        ck_assert_ptr_nonnull(strstr(dlq[got - 1].error, "deductQty"));
        ck_assert_int_eq(WEXITSTATUS(sk_test_stop(pid, 30)), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                                m.trace_id), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 0);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 5);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_batch_dups");
        TCase *tc = tcase_create("dups");

        sk_test_fix_setup("cons_dups", &(sk_test_fix_opts_t){ .partitions = 1 });
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, redriven_backlog_keeps_the_batch);
        tcase_add_test(tc, redriven_backlog_without_precheck);
        tcase_add_test(tc, deduct_qty_2_is_poison);
        suite_add_tcase(s, tc);
        {
                int rc = sk_test_run_nofork(s);
                sk_test_fix_teardown();
                return rc;
        }
}
