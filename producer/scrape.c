/* producer/scrape.c: the text of GET /metrics (producer/metrics.h). The queue depths,
 * the purchases in flight and the count of retired producers are gauges read from
 * their owners here, so they are exact at scrape time; the degrade switch's rows follow
 * the registry's text. */
#include <stdlib.h>
#include <string.h>

#include "dbonly.h"
#include "deduct.h"
#include "degrade.h"
#include "kprod.h"
#include "lookup.h"
#include "metrics.h"
#include "probe.h"
#include "req.h"
#include "rollback.h"

char *fr_metrics_render(void)
{
        sk_metric_set(fr_m.inflight, fr_inflight());
        sk_metric_set(fr_m.q_deduct, (int64_t)fr_deduct_depth());
        sk_metric_set(fr_m.q_rollback, (int64_t)fr_rollback_depth());
        sk_metric_set(fr_m.q_lookup, (int64_t)fr_lookup_depth());
        sk_metric_set(fr_m.retired, fr_kprod_retired());
        sk_metric_set(fr_m.q_dbonly, (int64_t)fr_dbonly_depth());
        sk_metric_set(fr_m.q_probe, (int64_t)fr_probe_depth());
        {
                char *base = sk_metrics_render(fr_m.reg), *out;
                size_t blen, cap = 64 * 1024;

                if (!base || !(out = malloc(strlen(base) + cap)))
                        return base;
                blen = strlen(base);
                memcpy(out, base, blen);
                fr_degrade_metrics(out + blen, cap);
                free(base);
                return out;
        }
}
