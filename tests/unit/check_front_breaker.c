/* check_front_breaker.c: the Redis breaker state machine of DESIGN.md 12 (producer/breaker_fsm.h):
 * failures and slow commands open it, it stays open at least open_ms, half-open probes
 * once per probe period and never lets purchases through, a good probe closes it; the
 * no-flapping rule (successes interleaved with failures do not reset the count; a
 * healthy period does; a breaker closed by a probe reopens on the first bad command
 * within healthy_ms); which error replies count. And the per-node table of
 * producer/breaker_set.h (DESIGN.md 4b, 12): on a Cluster a dead master opens only its own
 * breaker, the others keep allowing, "Redis is down" only when every live one is open,
 * a node replaced by a failover is retired (its open breaker no longer counts), and one
 * server or Sentinel keeps the one breaker of before. Time is passed in, so no sleeps. */
#include <stdio.h>
#include <string.h>

#include "sk_test.h"
#include "breaker_fsm.h"
#include "breaker_set.h"

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

static const char *const M1 = "127.0.0.1:7000", *const M2 = "127.0.0.1:7001",
                         *const M3 = "127.0.0.1:7002", *const R1 = "127.0.0.1:7003";

/* @p n failures on node @p addr at *t; @returns the last event. */
static sk_brk_event_t set_fail_n(fr_brkset_t *s, const char *addr, int64_t *t, int n)
{
        sk_brk_event_t ev = SK_BRK_EV_NONE;

        for (int i = 0; i < n; i++)
                ev = fr_brkset_record(s, addr, (*t)++, 1, 0, NULL);
        return ev;
}

START_TEST(set_dead_master_opens_only_its_own)
{
        static fr_brkset_t s;
        int64_t t = 1000000;
        int idx = -1;

        fr_brkset_init(&s, &conf, 1, t);
        /* Traffic to the three masters, all healthy. */
        fr_brkset_record(&s, M1, t, 0, 1, NULL);
        fr_brkset_record(&s, M2, t, 0, 1, NULL);
        fr_brkset_record(&s, M3, t, 0, 1, &idx);
        ck_assert_int_eq(s.n, 4);
        ck_assert_str_eq(s.e[idx].addr, M3);
        /* M1 dies: failures on it open its breaker only. */
        ck_assert_int_eq(set_fail_n(&s, M1, &t, 4), SK_BRK_EV_NONE);
        ck_assert_int_eq(fr_brkset_allow(&s, M1), 1);
        ck_assert_int_eq(set_fail_n(&s, M1, &t, 1), SK_BRK_EV_OPENED);
        ck_assert_int_eq(fr_brkset_allow(&s, M1), 0);
        ck_assert_int_eq(fr_brkset_allow(&s, M2), 1);
        ck_assert_int_eq(fr_brkset_allow(&s, M3), 1);
        /* A node never seen (the replica about to be promoted) is allowed. */
        ck_assert_int_eq(fr_brkset_allow(&s, R1), 1);
        ck_assert_int_eq(fr_brkset_usable(&s), 1);
        ck_assert_int_eq(fr_brkset_open_count(&s), 1);
        ck_assert_int_eq(fr_brkset_healthy(&s, t), 0);
        /* Healthy masters' successes interleaved change nothing for M1. */
        fr_brkset_record(&s, M2, t++, 0, 1, NULL);
        ck_assert_int_eq(fr_brkset_allow(&s, M1), 0);
        /* M1's own half-open probe follows the usual rules. */
        ck_assert_int_eq(sk_breaker_probe_begin(&s.e[1].b, t), 0);
        ck_assert_int_eq(sk_breaker_probe_begin(&s.e[1].b, t + conf.open_ms), 1);
        ck_assert_int_eq(sk_breaker_probe_end(&s.e[1].b, t + conf.open_ms + 1, 1), SK_BRK_EV_CLOSED);
        ck_assert_int_eq(fr_brkset_allow(&s, M1), 1);
}
END_TEST

START_TEST(set_down_only_when_every_master_is)
{
        static fr_brkset_t s;
        int64_t t = 5000;

        fr_brkset_init(&s, &conf, 1, t);
        /* No node known yet: entry 0 alone decides. */
        ck_assert_int_eq(fr_brkset_usable(&s), 1);
        set_fail_n(&s, M1, &t, 5);
        ck_assert_int_eq(fr_brkset_usable(&s), 0); /* the only node known is open */
        fr_brkset_record(&s, M2, t++, 0, 1, NULL);
        ck_assert_int_eq(fr_brkset_usable(&s), 1);
        set_fail_n(&s, M2, &t, 5);
        ck_assert_int_eq(fr_brkset_usable(&s), 0);
        ck_assert_int_eq(fr_brkset_open_count(&s), 2);
        /* Entry 0 (no seed answers) stops every node. */
        fr_brkset_init(&s, &conf, 1, t);
        fr_brkset_record(&s, M2, t++, 0, 1, NULL);
        ck_assert_int_eq(set_fail_n(&s, NULL, &t, 5), SK_BRK_EV_OPENED);
        ck_assert_int_eq(fr_brkset_allow(&s, M2), 0);
        ck_assert_int_eq(fr_brkset_allow(&s, ""), 0);
        ck_assert_int_eq(fr_brkset_usable(&s), 0);
}
END_TEST

/* The breaker thread's follow: which live node entries serve no slot in a map. */
START_TEST(set_moved_nodes_are_the_absent_masters)
{
        static fr_brkset_t s;
        const char *before[] = { M1, M2, M3 }, *after[] = { R1, M2, M3 };
        int64_t t = 90000;
        int idx[8] = { 0 };

        fr_brkset_init(&s, &conf, 1, t);
        fr_brkset_record(&s, M1, t, 0, 1, NULL);
        fr_brkset_record(&s, M2, t, 0, 1, NULL);
        fr_brkset_record(&s, M3, t, 0, 1, NULL);
        set_fail_n(&s, M1, &t, 5);
        ck_assert_int_eq(fr_brkset_allow(&s, M1), 0);
        /* M1 dead, not yet replaced: nothing moved. */
        ck_assert_int_eq(fr_brkset_moved(&s, before, 3, idx, 8), 0);
        /* An unreadable map (no master) is no evidence. */
        ck_assert_int_eq(fr_brkset_moved(&s, after, 0, idx, 8), 0);
        /* R1 promoted in M1's place: M1's entry (index 1) moved, R1 starts closed. */
        ck_assert_int_eq(fr_brkset_moved(&s, after, 3, idx, 8), 1);
        ck_assert_int_eq(idx[0], 1);
        ck_assert_int_eq(fr_brkset_allow(&s, R1), 1);
        ck_assert_int_eq(fr_brkset_retire(&s, idx[0], t), 1);
        /* Retired: not reported again; room for one only reports one. */
        ck_assert_int_eq(fr_brkset_moved(&s, after, 3, idx, 8), 0);
        ck_assert_int_eq(fr_brkset_moved(&s, (const char *[]){ R1 }, 1, idx, 1), 1);
        ck_assert_int_eq(idx[0], 2);
        /* Entry 0 (the topology) is never a node that moved. */
        ck_assert_int_eq(fr_brkset_moved(&s, (const char *[]){ R1 }, 1, idx, 8), 2);
        ck_assert_int_eq(idx[0], 2);
        ck_assert_int_eq(idx[1], 3);
}
END_TEST

START_TEST(set_retired_node_no_longer_counts)
{
        static fr_brkset_t s;
        int64_t t = 77000;
        int i;

        fr_brkset_init(&s, &conf, 1, t);
        fr_brkset_record(&s, M2, t++, 0, 1, NULL);
        fr_brkset_record(&s, M3, t++, 0, 1, NULL);
        set_fail_n(&s, M1, &t, 5);
        i = fr_brkset_entry(&s, M1, t);
        ck_assert_int_eq(i, 3);
        ck_assert_int_eq(fr_brkset_open_count(&s), 1);
        /* The replica R1 took M1's slots: M1 is retired, R1 gets traffic. */
        ck_assert_int_eq(fr_brkset_retire(&s, i, t), 1);
        ck_assert_int_eq(fr_brkset_retire(&s, i, t), 0);
        ck_assert_int_eq(fr_brkset_retire(&s, 0, t), 0); /* entry 0 is never retired */
        fr_brkset_record(&s, R1, t++, 0, 1, NULL);
        ck_assert_int_eq(fr_brkset_open_count(&s), 0);
        ck_assert_int_eq(fr_brkset_healthy(&s, t + conf.healthy_ms), 1);
        /* Every live master open: down, whatever the retired one says. */
        set_fail_n(&s, M2, &t, 5);
        set_fail_n(&s, M3, &t, 5);
        ck_assert_int_eq(fr_brkset_usable(&s), 1);
        set_fail_n(&s, R1, &t, 5);
        ck_assert_int_eq(fr_brkset_usable(&s), 0);
        /* Traffic routed to a retired node makes it live again (failed back). */
        fr_brkset_record(&s, M1, t++, 0, 1, NULL);
        ck_assert_int_eq(s.e[i].live, 1);
        ck_assert_int_eq(fr_brkset_usable(&s), 1);
}
END_TEST

START_TEST(set_one_node_topologies_keep_one_breaker)
{
        static fr_brkset_t s;
        int64_t t = 9000;
        int idx = -1;

        fr_brkset_init(&s, &conf, 0, t);
        /* Standalone / Sentinel: every address is the one breaker (a Sentinel failover
         * changes the address, not the breaker). */
        fr_brkset_record(&s, "127.0.0.1:6390", t++, 1, 0, &idx);
        ck_assert_int_eq(idx, 0);
        set_fail_n(&s, "127.0.0.1:6391", &t, 3);
        ck_assert_int_eq(fr_brkset_allow(&s, "127.0.0.1:6390"), 1);
        ck_assert_int_eq(set_fail_n(&s, NULL, &t, 1), SK_BRK_EV_OPENED);
        ck_assert_int_eq(s.n, 1);
        ck_assert_int_eq(fr_brkset_allow(&s, "127.0.0.1:6391"), 0);
        ck_assert_int_eq(fr_brkset_usable(&s), 0);
        ck_assert_int_eq(fr_brkset_open_count(&s), 1);
}
END_TEST

START_TEST(set_full_table_shares_entry_zero)
{
        static fr_brkset_t s;
        char addr[64];
        int64_t t = 1;

        fr_brkset_init(&s, &conf, 1, t);
        for (int i = 1; i < FR_BRKSET_MAX; i++) {
                snprintf(addr, sizeof(addr), "10.0.0.%d:7000", i);
                ck_assert_int_eq(fr_brkset_entry(&s, addr, t), i);
        }
        ck_assert_int_eq(fr_brkset_entry(&s, "10.0.1.1:7000", t), 0);
        ck_assert_int_eq(fr_brkset_entry(&s, "10.0.0.5:7000", t), 5);
        ck_assert_int_eq(s.n, FR_BRKSET_MAX);
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
        tcase_add_test(tc, set_dead_master_opens_only_its_own);
        tcase_add_test(tc, set_down_only_when_every_master_is);
        tcase_add_test(tc, set_moved_nodes_are_the_absent_masters);
        tcase_add_test(tc, set_retired_node_no_longer_counts);
        tcase_add_test(tc, set_one_node_topologies_keep_one_breaker);
        tcase_add_test(tc, set_full_table_shares_entry_zero);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
