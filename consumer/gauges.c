/* gauges.c: gauges that sum one value per worker (consumer_lag_messages: messages
 * between the positions and the high watermarks; consumer_carry_messages: messages
 * kept on the carry lists while partitions are paused, DESIGN.md 8). Each worker
 * writes its own slot at most once a second; the gauge is the sum. Thread-safe
 * (atomics). */
#include <stdatomic.h>
#include <stdint.h>
#include "sk/clock.h"
#include "worker.h"

#define MAX_WORKERS 64
static _Atomic int64_t g_lag[MAX_WORKERS];
static _Atomic int64_t g_carry[MAX_WORKERS];

static int64_t lag_of(worker_t *w)
{
        rd_kafka_topic_partition_list_t *parts = NULL;
        int64_t lag = 0;

        if (rd_kafka_assignment(w->rk, &parts) || !parts)
                return -1;
        rd_kafka_position(w->rk, parts);
        for (int i = 0; i < parts->cnt; i++) {
                int64_t lo = -1, hi = -1, pos = parts->elems[i].offset;
                if (rd_kafka_get_watermark_offsets(w->rk, parts->elems[i].topic, parts->elems[i].partition,
                                                   &lo, &hi) || hi < 0)
                        continue;
                if (pos < 0)
                        pos = lo >= 0 ? lo : 0;
                if (hi > pos)
                        lag += hi - pos;
        }
        rd_kafka_topic_partition_list_destroy(parts);
        return lag;
}

static int64_t sum(_Atomic int64_t *slots, int workers)
{
        int64_t total = 0;

        for (int i = 0; i < workers && i < MAX_WORKERS; i++)
                total += atomic_load(&slots[i]);
        return total;
}

void cons_gauges_update(worker_t *w, int carried)
{
        int64_t lag;

        if (sk_mono_ms() < w->next_gauge_ms)
                return;
        w->next_gauge_ms = sk_mono_ms() + 1000;
        atomic_store(&g_carry[w->idx % MAX_WORKERS], carried);
        sk_metric_set(w->m->carry, sum(g_carry, w->opts->workers));
        if ((lag = lag_of(w)) < 0)
                return;
        atomic_store(&g_lag[w->idx % MAX_WORKERS], lag);
        sk_metric_set(w->m->lag, sum(g_lag, w->opts->workers));
}
