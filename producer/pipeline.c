/* producer/pipeline.c: start and stop order of the purchase pipeline (producer/
 * pipeline.h). The parts own their state and threads (the files and their jobs:
 * producer/README.md); this file only starts and stops them in order. */
#include "breaker.h"
#include "dbonly.h"
#include "degrade.h"
#include "deadline.h"
#include "deduct.h"
#include "health.h"
#include "kprod.h"
#include "probe.h"
#include "pipeline.h"
#include "publish.h"
#include "rollback.h"
#include "sk/err.h"

int fr_pipeline_start(char *errstr, size_t errstr_size)
{
        /* The rollback worker first: the poll thread (fr_kprod_start) may hand it work. */
        if (fr_rollback_start() != 0) {
                sk_seterr(errstr, errstr_size, "cannot start the rollback worker");
                return -1;
        }
        if (fr_kprod_start(fr_delivery_report, errstr, errstr_size) != 0)
                return -1;
        if (fr_breaker_start() != 0 || fr_probe_start() != 0 || fr_deduct_start() != 0 ||
            fr_deadline_start() != 0 || fr_health_start() != 0 || fr_dbonly_start() != 0 ||
            fr_degrade_start() != 0) {
                sk_seterr(errstr, errstr_size, "cannot start the pipeline threads");
                return -1;
        }
        return 0;
}

/* Stop order: the deduct workers (they drain their queue), the timer and the health
 * thread first; then nothing is parked any more (re-produces still parked are answered
 * 503 PENDING, no rollback); then the poll thread, so every admitted purchase still gets
 * its delivery report served; the rollback worker last: its queue is closed only once
 * nothing can push to it any more (deduct workers and the poll thread joined), and it
 * drains the queue before exiting, so a NOT_PERSISTED report served by the poll
 * thread's last poll still gets its fence. */
void fr_pipeline_stop(void)
{
        fr_degrade_stop();
        fr_dbonly_stop();
        fr_deduct_stop();
        fr_probe_stop();        /* after the deduct workers: they hand it OVERFLOWs */
        fr_deadline_stop();
        fr_health_stop();
        fr_publish_close_deferred();
        fr_kprod_stop_poll();
        fr_rollback_stop();
        fr_breaker_stop();
}
