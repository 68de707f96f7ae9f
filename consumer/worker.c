/* worker.c: one consumer worker thread of seckill-consumer (design in main.c; the
 * modules it drives are listed in consumer/README.md).
 *
 * Loop: collect a poll batch (up to --batch-max messages, waiting at most
 * --batch-wait-ms after the first; carried messages first), parse it (poison, which
 * includes a deductQty other than 1, goes to the DLQ), group it by voucher and settle
 * each group (group.c), store offsets (offsets.c), cache the new orders in Redis
 * (ordercache.c), resume paused partitions, repeat. "Settled" means the message has a
 * committed outcome (CREATED or FAILED, ours or an earlier decision) or a PERSISTED
 * DLQ copy. The worker's DB and Redis connections are set up here and kept by
 * conn.c.
 *
 * Not thread-safe: each worker owns its handles; only the metrics are shared. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/kafka.h"
#include "sk/log.h"
#include "worker.h"

/* ------------------------------------------------------------------ connections */

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
        (void)rk;
        (void)opaque;
        SK_LOG(SK_WARN, "kafka_error", "err=%s reason=\"%s\"",
               rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* ------------------------------------------------------------------ batch */

/* Parse @p c; poison (including deductQty other than 1, DESIGN.md 5) goes to the DLQ.
 * @returns SK_ESTOP if the worker is stopping, else SK_OK. */
static sk_err_t parse_one(worker_t *w, cmsg_t *c)
{
        char errstr[512];

        if (sk_msg_parse(c->rkm->payload, c->rkm->len, &c->msg, errstr, sizeof(errstr)) == SK_OK) {
                if (c->msg.deduct_qty == 1) {
                        c->parsed = 1;
                        return SK_OK;
                }
                snprintf(errstr, sizeof(errstr), "deductQty %" PRId64 " (must be exactly 1)",
                         c->msg.deduct_qty);
        }
        sk_metric_add(w->m->poison, 1);
        SK_LOG(SK_WARN, "poison", "worker=%d partition=%d offset=%" PRId64 " reason=\"%s\"",
               w->idx, (int)c->rkm->partition, (int64_t)c->rkm->offset, errstr);
        return cons_dlq_send(w, c, "poison", errstr) == SK_ESTOP ? SK_ESTOP : SK_OK;
}

/* Group the parsed, unsettled messages by voucher, in order of first appearance, into
 * w->grp / gstart / gcount. @returns the number of groups. */
static int group_by_voucher(worker_t *w)
{
        int ng = 0, pos = 0;

        for (int i = 0; i < w->nbatch; i++) {
                cmsg_t *c = &w->batch[i];

                if (!c->parsed || c->grouped || c->settled)
                        continue;
                w->gstart[ng] = pos;
                for (int j = i; j < w->nbatch; j++) {
                        cmsg_t *d = &w->batch[j];
                        if (d->parsed && !d->grouped && !d->settled && d->msg.voucher_id == c->msg.voucher_id &&
                            d->msg.bucket == c->msg.bucket) {
                                d->grouped = 1;
                                w->grp[pos++] = d;
                        }
                }
                w->gcount[ng] = pos - w->gstart[ng];
                ng++;
        }
        return ng;
}

static void process_batch(worker_t *w)
{
        int ng;

        for (int i = 0; i < w->nbatch; i++)
                if (parse_one(w, &w->batch[i]) == SK_ESTOP)
                        return;
        /* One transaction per group. A first signal lets the batch finish (without
         * waiting in retries); a second abandons it. */
        ng = group_by_voucher(w);
        for (int k = 0; k < ng && g_stop < 2; k++) {
                if (k + 1 < ng)
                        cons_claim_set_next(w, &w->grp[w->gstart[k + 1]], w->gcount[k + 1]);
                else
                        cons_claim_set_next(w, NULL, 0);
                cons_group_settle(w, &w->grp[w->gstart[k]], w->gcount[k]);
        }
        cons_claim_drain(w); /* nothing stays in flight across batches */
        /* On a drain, groups not reached stay unsettled: their offsets are not stored. */
}

static void free_batch(worker_t *w)
{
        for (int i = 0; i < w->nbatch; i++)
                rd_kafka_message_destroy(w->batch[i].rkm);
        w->nbatch = 0;
}

static void add_to_batch(worker_t *w, rd_kafka_message_t *rkm)
{
        cmsg_t *c = &w->batch[w->nbatch++];
        memset(c, 0, sizeof(*c));
        c->rkm = rkm;
}

/* Fill the batch: carried messages first, then poll. @returns the batch size. */
static int collect(worker_t *w)
{
        rd_kafka_message_t *rkm;
        int64_t deadline;

        while (w->nbatch < w->opts->batch_max && cons_flow_take(w, &rkm))
                add_to_batch(w, rkm);
        if (!w->nbatch) {
                rkm = rd_kafka_consumer_poll(w->rk, 100 /* ms */);
                if (!rkm || !cons_flow_is_message(w, rkm))
                        return 0;
                sk_metric_add(w->m->consumed, 1);
                add_to_batch(w, rkm);
        }
        deadline = sk_mono_ms() + w->opts->batch_wait_ms;
        while (w->nbatch < w->opts->batch_max && !g_stop) {
                int64_t left = deadline - sk_mono_ms();
                rkm = rd_kafka_consumer_poll(w->rk, left > 0 ? (int)left : 0);
                if (!rkm)
                        break;
                if (!cons_flow_is_message(w, rkm))
                        continue;
                sk_metric_add(w->m->consumed, 1);
                add_to_batch(w, rkm);
        }
        return w->nbatch;
}

/* ------------------------------------------------------------------ setup */

static int alloc_scratch(worker_t *w)
{
        size_t n = (size_t)w->opts->batch_max;

        w->rng = sk_backoff_seed() ^ ((uint64_t)w->idx << 32);
        w->batch = calloc(n, sizeof(*w->batch));
        w->msgs = calloc(n, sizeof(*w->msgs));
        w->grp = calloc(n, sizeof(*w->grp));
        w->gstart = calloc(n, sizeof(*w->gstart));
        w->gcount = calloc(n, sizeof(*w->gcount));
        w->known = calloc(n, sizeof(*w->known));
        if (!w->batch || !w->msgs || !w->grp || !w->gstart || !w->gcount || !w->known)
                return -1;
        return cons_claimer_init(w);
}

/* The database: retried until it answers (or we are told to stop). Statements give up
 * 1 s after the session's lock wait (the server's 1205 comes first when a row lock is
 * what they wait for): a writer node that froze (SIGSTOP, a hung host) holds the worker
 * that long, not 30 s; conn.c then steps to the next node (DESIGN.md 16). With the
 * default 3 s lock wait that is 4 s, no more than the survivors' eviction of the frozen
 * node takes (evs.suspect_timeout 4 s is its floor), so the worker's batch is waiting on
 * a live node when the eviction ends (docs/SCALING.md, fault case 0283). */
static int connect_db(worker_t *w)
{
        char errstr[512];
        int attempt = 0;

        while (!(w->db = sk_db_connect_io(&w->conf->mysql, 0, w->opts->lock_wait_s,
                                          w->opts->lock_wait_s + 1, errstr, sizeof(errstr)))) {
                SK_LOG(SK_WARN, "db_connect_failed", "worker=%d attempt=%d err=\"%s\"", w->idx, attempt, errstr);
                if (cons_stopping())
                        return -1;
                sk_sleep_ms(sk_backoff_ms(attempt++, 200, 5000, &w->rng), (volatile int *)&g_stop);
                if (cons_stopping())
                        return -1;
        }
        return (w->ap = cons_apply_new(w->db, w->opts->batch_max)) ? 0 : -1;
}

static int has_prop(const sk_conf_t *conf, const char *name)
{
        for (int i = 0; i < conf->nkafka_props; i++)
                if (strcmp(conf->kafka_props[i][0], name) == 0)
                        return 1;
        return 0;
}

static int subscribe(worker_t *w)
{
        char errstr[512], kbytes[16];
        rd_kafka_conf_t *kconf;
        rd_kafka_topic_partition_list_t *sub;
        rd_kafka_resp_err_t e;

        if (!(kconf = sk_kafka_conf_new(w->conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "kafka_conf_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        /* Split the prefetch budget between the workers (RSS target) unless set by -X. */
        if (!has_prop(w->conf, "queued.max.messages.kbytes")) {
                int kb = 8192 / (w->opts->workers ? w->opts->workers : 1);
                snprintf(kbytes, sizeof(kbytes), "%d", kb < 1024 ? 1024 : kb);
                sk_kafka_conf_set(kconf, "queued.max.messages.kbytes", kbytes, NULL, 0);
        }
        rd_kafka_conf_set_log_cb(kconf, sk_kafka_log_cb);
        rd_kafka_conf_set_error_cb(kconf, on_kafka_error);
        rd_kafka_conf_set_rebalance_cb(kconf, cons_offsets_rebalance);
        rd_kafka_conf_set_opaque(kconf, w);
        if (!(w->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr)))) {
                rd_kafka_conf_destroy(kconf);
                SK_LOG(SK_ERROR, "kafka_new_failed", "worker=%d err=\"%s\"", w->idx, errstr);
                return -1;
        }
        rd_kafka_poll_set_consumer(w->rk); /* rk owns kconf now */
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, w->conf->topic, RD_KAFKA_PARTITION_UA);
        e = rd_kafka_subscribe(w->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) {
                SK_LOG(SK_ERROR, "subscribe_failed", "worker=%d err=%s", w->idx, rd_kafka_err2str(e));
                return -1;
        }
        return 0;
}

static int setup(worker_t *w)
{
        if (alloc_scratch(w) != 0 || connect_db(w) != 0)
                return -1;
        (void)cons_worker_redis(w); /* lazily retried when needed */
        if (subscribe(w) != 0)
                return -1;
        SK_LOG(SK_INFO, "worker_started", "worker=%d topic=%s group=%s batch_max=%d batch_wait_ms=%d",
               w->idx, w->conf->topic, w->conf->group_id, w->opts->batch_max, w->opts->batch_wait_ms);
        return 0;
}

static void teardown(worker_t *w)
{
        cons_flow_close(w);
        free_batch(w);
        if (w->rk) {
                /* Offsets were stored after each batch; commit them now, synchronously. */
                rd_kafka_resp_err_t e = rd_kafka_commit(w->rk, NULL, 0 /* sync */);
                if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
                        SK_LOG(SK_WARN, "final_commit_failed", "worker=%d err=%s", w->idx, rd_kafka_err2str(e));
                rd_kafka_consumer_close(w->rk); /* leave the group */
                rd_kafka_destroy(w->rk);
        }
        cons_dlq_close(w);
        cons_apply_destroy(w->ap);
        sk_db_close(w->db);
        sk_redis_close(w->redis);
        cons_claimer_close(w);
        cons_offsets_close(w);
        free(w->batch);
        free(w->msgs);
        free(w->grp);
        free(w->gstart);
        free(w->gcount);
        free(w->known);
}

/* One batch: settle, store, cache, resume. */
static void run_batch(worker_t *w, int64_t t0)
{
        int64_t t1 = sk_mono_ms(), t2, t3, t4;
        int n = w->nbatch;

        process_batch(w);
        t2 = sk_mono_ms();
        cons_offsets_store(w);
        t3 = sk_mono_ms();
        cons_order_cache(w);
        t4 = sk_mono_ms();
        free_batch(w);
        cons_flow_resume_all(w);
        SK_LOG(SK_DEBUG, "batch_done", "worker=%d n=%d collect_ms=%" PRId64 " process_ms=%" PRId64
               " store_ms=%" PRId64 " cache_ms=%" PRId64, w->idx, n, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
}

int cons_worker_run(const cons_ctx_t *ctx, int idx)
{
        worker_t w;
        int rc = 0;

        memset(&w, 0, sizeof(w));
        w.ctx = ctx;
        w.conf = ctx->conf;
        w.opts = ctx->opts;
        w.m = ctx->m;
        w.idx = idx;
        if (setup(&w) != 0) {
                rc = cons_stopping() ? 0 : 1;
                goto done;
        }
        while (!cons_stopping()) {
                int64_t t0 = sk_mono_ms();
                if (collect(&w) > 0)
                        run_batch(&w, t0);
                cons_gauges_update(&w, cons_flow_carried(&w));
        }
        /* Drain: a batch being processed when the signal came was finished above (its
         * unsettled rest is left for the next owner); store what is settled. */
        cons_offsets_store(&w);
        free_batch(&w);
        SK_LOG(SK_INFO, "worker_stopping", "worker=%d", idx);
done:
        teardown(&w);
        return rc;
}
