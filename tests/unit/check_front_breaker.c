/* check_front_breaker.c: the Redis breaker state machine of DESIGN.md 12 (producer/breaker_fsm.h):
 * failures and slow commands open it, it stays open at least open_ms, half-open probes
 * once per probe period and never lets purchases through, a good probe closes it; the
 * no-flapping rule (successes interleaved with failures do not reset the count; a
 * healthy period does; a breaker closed by a probe reopens on the first bad command
 * within healthy_ms); which error replies count. Time is passed in, so no sleeps. */
#include <string.h>

#include "sk_test.h"
#include "breaker_fsm.h"

static const sk_breaker_conf_t conf = { .failures = 5, .slow_ms = 300, .open_ms = 30000,
                                        .probe_ms = 1000, .healthy_ms = 10000 };

/* Record @p n failures at @p t (ms apart by @p step); @returns the last event. */
static sk_brk_event_t fail_n(sk_breaker_t *b, int64_t *t, int n, int step)
{
        sk_brk_event_t ev = SK_BRK_EV_NONE;

        for (int i = 0; i < n; i++) {
                ev = sk_breaker_record(b, *t, 1, 0);
                *t += step;
        }
        return ev;
}

START_TEST(opens_after_consecutive_failures)
{
        sk_breaker_t b;
        int64_t t = 1000000;

        sk_breaker_init(&b, &conf, t);
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        ck_assert_int_eq(fail_n(&b, &t, 4, 100), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        ck_assert_int_eq(sk_breaker_record(&b, t, 1, 0), SK_BRK_EV_OPENED);
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
        ck_assert_int_eq(b.state, SK_BRK_OPEN);
        ck_assert_uint_eq(b.opens, 1);
        /* Further failures while open are no new transition. */
        ck_assert_int_eq(fail_n(&b, &t, 10, 10), SK_BRK_EV_NONE);
        ck_assert_uint_eq(b.opens, 1);
}
END_TEST

START_TEST(slow_commands_open_it)
{
        sk_breaker_t b;
        int64_t t = 5000;
        int i;

        sk_breaker_init(&b, &conf, t);
        /* At the threshold is not slow; above it is. */
        for (i = 0; i < 10; i++)
                ck_assert_int_eq(sk_breaker_record(&b, t += 10, 0, 300), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        for (i = 0; i < 4; i++)
                ck_assert_int_eq(sk_breaker_record(&b, t += 10, 0, 301), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_record(&b, t += 10, 0, 2000), SK_BRK_EV_OPENED);
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
}
END_TEST

/* The no-flapping rule: a Redis that answers some commands and times out on others
 * keeps reaching the threshold; with "any success resets" it never would. */
START_TEST(interleaved_successes_do_not_reset)
{
        sk_breaker_t b;
        int64_t t = 0;
        int i, opened = 0;

        sk_breaker_init(&b, &conf, t);
        for (i = 0; i < 5; i++) {
                /* Many fast successes between failures 1 s apart. */
                for (int k = 0; k < 50; k++)
                        ck_assert_int_eq(sk_breaker_record(&b, t += 10, 0, 1), SK_BRK_EV_NONE);
                t += 500;
                if (sk_breaker_record(&b, t, 1, 1000) == SK_BRK_EV_OPENED)
                        opened = i + 1;
        }
        ck_assert_int_eq(opened, 5);
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
}
END_TEST

START_TEST(healthy_period_resets_the_count)
{
        sk_breaker_t b;
        int64_t t = 0;

        sk_breaker_init(&b, &conf, t);
        ck_assert_int_eq(fail_n(&b, &t, 4, 100), SK_BRK_EV_NONE);
        /* 10 s without a bad command (successes meanwhile): the count is forgotten. */
        t += conf.healthy_ms;
        ck_assert_int_eq(sk_breaker_record(&b, t, 0, 1), SK_BRK_EV_NONE);
        ck_assert_int_eq(fail_n(&b, &t, 4, 100), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        /* Also without a success in between: bad commands further apart than
         * healthy_ms never add up. */
        for (int i = 0; i < 20; i++) {
                t += conf.healthy_ms;
                ck_assert_int_eq(sk_breaker_record(&b, t, 1, 0), SK_BRK_EV_NONE);
        }
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        /* Just inside the window they do. */
        ck_assert_int_eq(fail_n(&b, &t, 4, conf.healthy_ms - 1), SK_BRK_EV_OPENED);
}
END_TEST

START_TEST(minimum_open_time_then_one_probe_a_second)
{
        sk_breaker_t b;
        int64_t t = 0, opened;

        sk_breaker_init(&b, &conf, t);
        fail_n(&b, &t, 5, 1);
        opened = t - 1;
        ck_assert_int_eq(b.state, SK_BRK_OPEN);
        ck_assert_int_eq(sk_breaker_probe_begin(&b, opened + conf.open_ms - 1), 0);
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
        t = opened + conf.open_ms;
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t), 1);
        ck_assert_int_eq(b.state, SK_BRK_HALF_OPEN);
        /* Half-open: still no purchase traffic, and never two probes at once. */
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t + 5000), 0);
        ck_assert_int_eq(sk_breaker_probe_end(&b, t + 1000, 0), SK_BRK_EV_NONE);
        ck_assert_int_eq(b.state, SK_BRK_HALF_OPEN);
        /* A failed probe: the next one a probe period after the previous began. */
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t + 999), 0);
        t += 1000;
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t), 1);
        /* Straggler results while half-open change nothing. */
        ck_assert_int_eq(sk_breaker_record(&b, t, 0, 1), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
        ck_assert_int_eq(sk_breaker_probe_end(&b, t + 2, 1), SK_BRK_EV_CLOSED);
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        ck_assert_uint_eq(b.opens, 1);
        ck_assert_uint_eq(b.closes, 1);
        /* Closed: no probes. */
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t + 100000), 0);
        ck_assert_int_eq(sk_breaker_probe_end(&b, t + 100000, 1), SK_BRK_EV_NONE);
}
END_TEST

/* A probe (PING, ROLE, INFO) can pass while writes hang: after the close, the first
 * bad command within healthy_ms reopens at once, for another full open time. */
START_TEST(probation_after_close)
{
        sk_breaker_t b;
        int64_t t = 0;

        sk_breaker_init(&b, &conf, t);
        fail_n(&b, &t, 5, 1);
        t += conf.open_ms;
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t), 1);
        ck_assert_int_eq(sk_breaker_probe_end(&b, t, 1), SK_BRK_EV_CLOSED);
        ck_assert_int_eq(sk_breaker_healthy(&b, t), 0);
        /* Successes do not end the probation early. */
        for (int i = 0; i < 100; i++)
                sk_breaker_record(&b, t += 10, 0, 1);
        ck_assert_int_eq(sk_breaker_record(&b, t += 10, 1, 0), SK_BRK_EV_OPENED);
        ck_assert_int_eq(sk_breaker_allow(&b), 0);
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t + conf.open_ms - 1), 0);
        /* Probe, close, then healthy_ms without a bad command: healthy, count reset. */
        t += conf.open_ms;
        ck_assert_int_eq(sk_breaker_probe_begin(&b, t), 1);
        ck_assert_int_eq(sk_breaker_probe_end(&b, t, 1), SK_BRK_EV_CLOSED);
        ck_assert_int_eq(sk_breaker_healthy(&b, t + conf.healthy_ms - 1), 0);
        t += conf.healthy_ms;
        ck_assert_int_eq(sk_breaker_healthy(&b, t), 1);
        ck_assert_int_eq(fail_n(&b, &t, 4, 10), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_allow(&b), 1);
        ck_assert_int_eq(sk_breaker_healthy(&b, t), 0);
}
END_TEST

START_TEST(one_failure_threshold)
{
        sk_breaker_conf_t c = conf;
        sk_breaker_t b;

        c.failures = 1;
        sk_breaker_init(&b, &c, 0);
        ck_assert_int_eq(sk_breaker_record(&b, 1, 1, 0), SK_BRK_EV_OPENED);
        ck_assert_int_eq(sk_breaker_probe_begin(&b, 1 + c.open_ms), 1);
        ck_assert_int_eq(sk_breaker_probe_end(&b, 2 + c.open_ms, 1), SK_BRK_EV_CLOSED);
        ck_assert_int_eq(sk_breaker_record(&b, 3 + c.open_ms, 0, 1), SK_BRK_EV_NONE);
        ck_assert_int_eq(sk_breaker_record(&b, 4 + c.open_ms, 1, 0), SK_BRK_EV_OPENED);
}
END_TEST

START_TEST(error_replies_that_count)
{
        static const struct { const char *s; int counts; } cases[] = {
                { "LOADING Redis is loading the dataset in memory", 1 },
                { "CLUSTERDOWN The cluster is down", 1 },
                { "LOADING", 1 },
                { "BUSY Redis is busy running a script", 0 },
                { "NOSCRIPT No matching script", 0 },
                { "ERR Error running script", 0 },
                { "LOADINGX", 0 },
                { "", 0 },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                ck_assert_msg(sk_breaker_error_counts(cases[i].s, strlen(cases[i].s)) == cases[i].counts,
                              "%s", cases[i].s);
        ck_assert_int_eq(sk_breaker_error_counts(NULL, 0), 0);
        ck_assert_int_eq(sk_breaker_error_counts("LOADING", 4), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("breaker");
        TCase *tc = tcase_create("breaker");

        tcase_add_test(tc, opens_after_consecutive_failures);
        tcase_add_test(tc, slow_commands_open_it);
        tcase_add_test(tc, interleaved_successes_do_not_reset);
        tcase_add_test(tc, healthy_period_resets_the_count);
        tcase_add_test(tc, minimum_open_time_then_one_probe_a_second);
        tcase_add_test(tc, probation_after_close);
        tcase_add_test(tc, one_failure_threshold);
        tcase_add_test(tc, error_replies_that_count);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
