/* check_lease_plan.c: the worker-id lease's timing (sk/lease_plan.h, DESIGN.md 2): the
 * period, window and attempt timeout a lease length gives, the waits between attempts,
 * and a model of the renewal thread (lease.c's loop: an attempt, the next node at once
 * after a failure, sk_lease_plan_delay_ms between attempts) against a database stall: a
 * writer node that dies or freezes while every node stalls its commits until Galera has
 * evicted it. The model checks that the confirmed window never runs out during a stall
 * longer than the local stack's eviction time (5-6 s, docs/SCALING.md) with the default
 * lease, whatever the phase of the renewals, and that a database gone for good still
 * closes the window. */
#include "sk_test.h"
#include "sk/lease_plan.h"

START_TEST(plan_of_the_default_lease)
{
        sk_lease_plan_t p;

        sk_lease_plan_init(&p, 30000, 3);
        ck_assert_int_eq(p.period_ms, 10000);
        ck_assert_int_eq(p.window_ms, 20000);
        ck_assert_int_eq(p.attempt_timeout_s, 3);
        ck_assert_int_eq(p.nodes, 3);
        ck_assert_int_eq(sk_lease_plan_reach_min_ms(&p), 10000);
        /* the window confirmed by each renewal reaches 3 x a 6.5 s eviction (the stack's:
         * 5-6 s) */
        ck_assert_int_ge(p.window_ms, 3 * 6500 - 500);
}
END_TEST

START_TEST(attempt_timeout_bounds)
{
        sk_lease_plan_t p;

        sk_lease_plan_init(&p, 900, 1);          /* the tests' short lease */
        ck_assert_int_eq(p.attempt_timeout_s, 1);
        ck_assert_int_eq(p.period_ms, 300);
        ck_assert_int_eq(p.window_ms, 600);
        sk_lease_plan_init(&p, 3000, 3);
        ck_assert_int_eq(p.attempt_timeout_s, 1);
        sk_lease_plan_init(&p, 20000, 3);
        ck_assert_int_eq(p.attempt_timeout_s, 2);
        sk_lease_plan_init(&p, 3600000, 3);      /* the longest lease: never above 5 s */
        ck_assert_int_eq(p.attempt_timeout_s, 5);
        sk_lease_plan_init(&p, 0, 0);            /* nonsense is clamped, never a 0 period */
        ck_assert_int_eq(p.lease_ms, 3);
        ck_assert_int_eq(p.period_ms, 1);
        ck_assert_int_eq(p.nodes, 1);
        ck_assert_int_eq(p.attempt_timeout_s, 1);
}
END_TEST

START_TEST(delays_next_node_at_once_then_backoff)
{
        sk_lease_plan_t p;

        sk_lease_plan_init(&p, 30000, 3);
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 0), 10000);  /* renewed: one period */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 1), 0);      /* node 2 at once */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 2), 0);      /* node 3 at once */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 3), 250);    /* every node failed */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 4), 500);
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 5), 1000);
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 8), 8000);
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 9), 10000);  /* never above the period */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 1000), 10000);
        sk_lease_plan_init(&p, 30000, 1);        /* one node: backoff from the first failure */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 1), 250);
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 2), 500);
        sk_lease_plan_init(&p, 600, 3);          /* a period shorter than the backoff base */
        ck_assert_int_eq(sk_lease_plan_delay_ms(&p, 3), 200);
}
END_TEST

/* ------------------------------------------------------------ the renewal model */

enum { LIVE, FROZEN, DEAD };
#define EPS_MS 5      /* a statement or connect to a node that answers */

typedef struct model {
        sk_lease_plan_t p;
        int64_t fault_at_ms;   /* node 0 (the writer) dies or freezes then */
        int fault;             /* FROZEN or DEAD */
        int64_t stall_ms;      /* every node stalls commits until fault_at + stall */
        int64_t forever;       /* 1: the stall never ends (the database is gone) */
} model_t;

static int node_state(const model_t *m, int node, int64_t t)
{
        return node == 0 && t >= m->fault_at_ms ? m->fault : LIVE;
}

/* One attempt starting at @p t on connection node *@p c (after a failure: reconnect
 * first, the nodes after *c in list order, as sk_db_prefer_next_node). @returns 1 with
 * *@p end = when it renewed, or 0 with *@p end = when it gave up. */
static int attempt(const model_t *m, int *c, int reconnect, int64_t t, int64_t *end)
{
        int64_t tmo = (int64_t)m->p.attempt_timeout_s * 1000, stall_end;

        if (reconnect) {
                int found = 0;

                for (int k = 1; k <= m->p.nodes && !found; k++) {
                        int n = (*c + k) % m->p.nodes, st = node_state(m, n, t);

                        if (st == LIVE) {
                                *c = n;
                                found = 1;
                        }
                        t += st == FROZEN ? tmo : EPS_MS;   /* no greeting: the connect timeout */
                }
                if (!found) {
                        *end = t;
                        return 0;
                }
        }
        switch (node_state(m, *c, t)) {
        case FROZEN:
                *end = t + tmo;
                return 0;
        case DEAD:
                *end = t + EPS_MS;
                return 0;
        }
        stall_end = m->forever ? INT64_MAX : m->fault_at_ms + m->stall_ms;
        if (t < m->fault_at_ms || t >= stall_end) {
                *end = t + EPS_MS;
                return 1;
        }
        if (stall_end - t <= tmo) {        /* the COMMIT waits out the eviction */
                *end = stall_end + EPS_MS;
                return 1;
        }
        *end = t + tmo;
        return 0;
}

/* Runs the renewal loop from a renewal at 0 until @p until_ms. @returns the first moment
 * the confirmed window had run out (a gap in the minting), or -1 for none. */
static int64_t run(const model_t *m, int64_t until_ms)
{
        int64_t t = 0, win_end = m->p.window_ms, end;
        int c = 0, failures = 0;

        while (t < until_ms) {
                t += sk_lease_plan_delay_ms(&m->p, failures);
                if (attempt(m, &c, failures > 0, t, &end)) {
                        if (end > win_end)
                                return win_end;
                        win_end = end + m->p.window_ms;
                        failures = 0;
                } else {
                        failures++;
                }
                t = end;
        }
        return win_end < until_ms ? win_end : -1;
}

/* A stall longer than the local Galera stack's (a writer SIGKILLed or SIGSTOPped: 5-6 s
 * until the two others evict it), starting at every phase of the renewal period, with
 * the default lease: the window never runs out. */
START_TEST(galera_eviction_never_closes_the_window)
{
        model_t m = { .stall_ms = 6500 };

        sk_lease_plan_init(&m.p, 30000, 3);
        for (int f = 0; f < 2; f++) {
                m.fault = f ? FROZEN : DEAD;
                for (int64_t at = 0; at <= 3 * m.p.period_ms; at += 50) {
                        m.fault_at_ms = at;
                        ck_assert_msg(run(&m, at + 10 * m.p.period_ms) < 0,
                                      "%s writer at %lld ms: the window ran out",
                                      f ? "frozen" : "dead", (long long)at);
                }
        }
        /* a 2 s slower eviction (a loaded machine) too */
        m.stall_ms = 8500;
        for (int64_t at = 0; at <= 3 * m.p.period_ms; at += 50) {
                m.fault_at_ms = at;
                m.fault = FROZEN;
                ck_assert_int_lt(run(&m, at + 10 * m.p.period_ms), 0);
        }
}
END_TEST

/* What the window cannot cover still stops: the database gone for good closes the
 * window at most 2/3 lease after the last renewal, and a stall longer than the window's
 * reach is seen. */
START_TEST(database_gone_still_stops)
{
        model_t m = { .fault = DEAD, .forever = 1 };
        int64_t gap;

        sk_lease_plan_init(&m.p, 30000, 3);
        for (int64_t at = 0; at <= m.p.period_ms; at += 250) {
                m.fault_at_ms = at;
                gap = run(&m, at + 10 * m.p.period_ms);
                ck_assert_int_ge(gap, at);
                ck_assert_int_le(gap, at + m.p.window_ms);
        }
        m.forever = 0;
        m.fault = FROZEN;
        m.stall_ms = m.p.window_ms + 1000;
        m.fault_at_ms = 1;
        ck_assert_int_ge(run(&m, 10 * m.p.period_ms), 0);
}
END_TEST

/* The fault cases' short lease (3 s: a window of 1-2 s) cannot outlast an eviction:
 * why the Galera cases run with the default lease. */
START_TEST(short_lease_does_not_cover_an_eviction)
{
        model_t m = { .fault = DEAD, .stall_ms = 6500, .fault_at_ms = 1 };

        sk_lease_plan_init(&m.p, 3000, 3);
        ck_assert_int_ge(run(&m, 60000), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("lease_plan");
        TCase *tc = tcase_create("plan");

        tcase_add_test(tc, plan_of_the_default_lease);
        tcase_add_test(tc, attempt_timeout_bounds);
        tcase_add_test(tc, delays_next_node_at_once_then_backoff);
        tcase_add_test(tc, galera_eviction_never_closes_the_window);
        tcase_add_test(tc, database_gone_still_stops);
        tcase_add_test(tc, short_lease_does_not_cover_an_eviction);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
