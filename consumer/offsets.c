/* offsets.c: which offsets a worker stores (DESIGN.md 5).
 *
 * Per partition the stored offset is the lowest offset of the batch (or of the carry
 * list) that is not settled, or the highest settled offset + 1 when all are; stored
 * with rd_kafka_offsets_store (as given, i.e. the next offset to read) and committed
 * by the auto-commit timer, by the sync commit at shutdown and on rebalance. A crash
 * only ever re-delivers messages, and the outcome key makes a re-delivery harmless.
 *
 * Never backwards: a partition revoked while its batch was being settled may come
 * back after another member committed further. On every assignment the rebalance
 * callback reads the group's committed offsets (the floors); an offset below a
 * partition's floor is never stored (its messages were settled by that member).
 * Owns cons_offsets_t. Not thread-safe (one per worker; the rebalance callback runs
 * inside this worker's rd_kafka_consumer_poll). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "sk/log.h"
#include "worker.h"

/* How long an assignment may wait for the committed offsets. */
#define COMMITTED_TIMEOUT_MS 5000

static int64_t *floor_slot(worker_t *w, int32_t partition)
{
        cons_offsets_t *o = &w->offs;

        if (partition < 0 || partition > 1000000)
                return NULL;
        if (partition >= o->nfloor) {
                int n = partition + 16;
                int64_t *f = realloc(o->floor, sizeof(*f) * (size_t)n);
                if (!f)
                        return NULL; /* no floor known: stores as before */
                for (int i = o->nfloor; i < n; i++)
                        f[i] = -1;
                o->floor = f;
                o->nfloor = n;
        }
        return &o->floor[partition];
}

/* Read the committed offsets of @p parts into the floors. */
static void read_floors(worker_t *w, rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *parts)
{
        rd_kafka_topic_partition_list_t *copy = rd_kafka_topic_partition_list_copy(parts);
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, copy, COMMITTED_TIMEOUT_MS);

        for (int i = 0; i < copy->cnt; i++) {
                int64_t *f = floor_slot(w, copy->elems[i].partition);
                if (!f)
                        continue;
                *f = (!e && !copy->elems[i].err && copy->elems[i].offset >= 0) ? copy->elems[i].offset : -1;
                SK_LOG(SK_DEBUG, "offset_floor", "worker=%d partition=%d committed=%" PRId64, w->idx,
                       (int)copy->elems[i].partition, *f);
        }
        if (e)
                SK_LOG(SK_WARN, "committed_read_failed", "worker=%d err=%s", w->idx, rd_kafka_err2name(e));
        rd_kafka_topic_partition_list_destroy(copy);
}

void cons_offsets_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        worker_t *w = opaque;
        int coop = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                read_floors(w, rk, parts);
                SK_LOG(SK_INFO, "partitions_assigned", "worker=%d count=%d", w->idx, parts->cnt);
                if (coop)
                        rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
                else
                        rd_kafka_assign(rk, parts);
                return;
        }
        for (int i = 0; i < parts->cnt; i++) {
                int64_t *f = floor_slot(w, parts->elems[i].partition);
                if (f)
                        *f = -1;
        }
        SK_LOG(SK_INFO, "partitions_revoked", "worker=%d count=%d err=%s", w->idx, parts->cnt,
               rd_kafka_err2name(err));
        if (coop)
                rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
        else
                rd_kafka_assign(rk, NULL);
}

typedef struct part_mark {
        int32_t partition;
        int64_t min_unsettled;  /* INT64_MAX if none */
        int64_t max_settled;    /* -1 if none */
        const char *topic;
} part_mark_t;

static part_mark_t *mark_for(part_mark_t *marks, int *nmarks, const rd_kafka_message_t *rkm)
{
        for (int i = 0; i < *nmarks; i++)
                if (marks[i].partition == rkm->partition)
                        return &marks[i];
        marks[*nmarks].partition = rkm->partition;
        marks[*nmarks].min_unsettled = INT64_MAX;
        marks[*nmarks].max_settled = -1;
        marks[*nmarks].topic = rd_kafka_topic_name(rkm->rkt);
        return &marks[(*nmarks)++];
}

/* The offset to store for @p pm, or -1 for none (nothing settled, or below the floor). */
static int64_t next_offset(worker_t *w, const part_mark_t *pm)
{
        int64_t carried = cons_flow_min_offset(w, pm->partition);
        int64_t min = pm->min_unsettled < carried ? pm->min_unsettled : carried;
        int64_t next = min != INT64_MAX ? min : pm->max_settled + 1;
        int64_t *f = floor_slot(w, pm->partition);

        if (next < 0)
                return -1;
        if (f && next < *f) {
                SK_LOG(SK_INFO, "offset_below_committed", "worker=%d partition=%d offset=%" PRId64
                       " committed=%" PRId64, w->idx, (int)pm->partition, next, *f);
                return -1;
        }
        return next;
}

static void store_list(worker_t *w, rd_kafka_topic_partition_list_t *parts)
{
        (void)rd_kafka_offsets_store(w->rk, parts);
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *p = &parts->elems[i];
                int64_t *f;
                if (p->err) {
                        SK_LOG(SK_INFO, "offset_store_skipped", "worker=%d partition=%d offset=%" PRId64
                               " err=%s", w->idx, (int)p->partition, p->offset, rd_kafka_err2name(p->err));
                        continue;
                }
                if ((f = floor_slot(w, p->partition)) && *f < p->offset)
                        *f = p->offset;
                SK_LOG(SK_DEBUG, "offset_stored", "worker=%d partition=%d offset=%" PRId64,
                       w->idx, (int)p->partition, p->offset);
        }
}

void cons_offsets_store(worker_t *w)
{
        part_mark_t *marks;
        rd_kafka_topic_partition_list_t *parts;
        int nmarks = 0, i;

        if (!w->nbatch)
                return;
        if (!(marks = calloc((size_t)w->nbatch, sizeof(*marks))))
                return;
        for (i = 0; i < w->nbatch; i++) {
                part_mark_t *pm = mark_for(marks, &nmarks, w->batch[i].rkm);
                int64_t off = w->batch[i].rkm->offset;
                if (w->batch[i].settled) {
                        if (off > pm->max_settled)
                                pm->max_settled = off;
                } else if (off < pm->min_unsettled) {
                        pm->min_unsettled = off;
                }
        }
        parts = rd_kafka_topic_partition_list_new(nmarks);
        for (i = 0; i < nmarks; i++) {
                int64_t next = next_offset(w, &marks[i]);
                if (next >= 0)
                        rd_kafka_topic_partition_list_add(parts, marks[i].topic, marks[i].partition)->offset = next;
        }
        if (parts->cnt)
                store_list(w, parts);
        rd_kafka_topic_partition_list_destroy(parts);
        free(marks);
}

void cons_offsets_close(worker_t *w)
{
        free(w->offs.floor);
        w->offs.floor = NULL;
        w->offs.nfloor = 0;
}
