/* lease_plan.c: the timing of the worker-id lease (DESIGN.md 2; the rules in
 * sk/lease_plan.h): period, window, attempt timeout and the wait between attempts.
 * Arithmetic only: no clock, no thread, no database. */
#include "sk/lease_plan.h"

#define ATTEMPT_TIMEOUT_MIN_S 1   /* the client's timeouts count whole seconds */
#define ATTEMPT_TIMEOUT_MAX_S 5

void sk_lease_plan_init(sk_lease_plan_t *p, int64_t lease_ms, int nodes)
{
        int64_t t_s;

        if (lease_ms < 3)
                lease_ms = 3;
        p->lease_ms = lease_ms;
        p->period_ms = lease_ms / 3;
        p->window_ms = lease_ms * 2 / 3;
        t_s = lease_ms / 10 / 1000;
        p->attempt_timeout_s = t_s < ATTEMPT_TIMEOUT_MIN_S ? ATTEMPT_TIMEOUT_MIN_S :
                               t_s > ATTEMPT_TIMEOUT_MAX_S ? ATTEMPT_TIMEOUT_MAX_S : (int)t_s;
        p->nodes = nodes < 1 ? 1 : nodes;
}

int64_t sk_lease_plan_delay_ms(const sk_lease_plan_t *p, int failures)
{
        int64_t d = SK_LEASE_RETRY_BASE_MS;

        if (failures <= 0)
                return p->period_ms;
        if (failures < p->nodes)
                return 0;               /* the next node of the URL, at once */
        for (int k = p->nodes; k < failures && d < p->period_ms; k++)
                d *= 2;
        return d < p->period_ms ? d : p->period_ms;
}

int64_t sk_lease_plan_reach_min_ms(const sk_lease_plan_t *p)
{
        return p->window_ms - p->period_ms;
}
