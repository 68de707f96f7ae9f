/* rc_redrive.c: the re-drive machinery for undecided traces (rc_pass.h; DESIGN.md 8
 * "re-drive bookkeeping"), for an undecided T older than the grace period, with c = the
 * claim record (T:c, lua/claim.lua):
 *   - traceId in the DLQ topic (read from the start each pass): re-driven once per pass,
 *     never counted, never rolled back, reported (exit 2); one already re-driven by an
 *     earlier pass is stuck in the DLQ re-drive loop (counted: dlq_loop);
 *   - a re-drive outstanding (c has partition P and offset O and redrives > failed):
 *     the group's committed offset on P is read FIRST, then the DLQ and the outcome
 *     again; no outcome and committed > O -> claim.lua failed (counted); else waiting
 *     (exit 2): never roll back because consumers are behind;
 *   - failed >= --max-redrive: FAILED (lost) committed, then rollback.lua (rc_act.c);
 *   - otherwise: claim.lua claim (RESTORED: the front fenced it -> FAILED
 *     front_rollback), publish the stored entry again (key = voucherId), wait for the
 *     delivery report, claim.lua sent P O when PERSISTED.
 * The run lock is checked before every claim.lua call and publish (rc_must_stop): a pass
 * that lost its lock records nothing more. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rc_kafka.h"
#include "rc_pass.h"
#include "sk/claim.h"
#include "sk/failpoint.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/log.h"
#include "sk/msg.h"

#define KAFKA_TIMEOUT_MS 10000 /* committed offsets, DLQ read, topic check */

/* ---- claim.lua (sk/claim.h) ---- */

typedef struct claim_res {
        int restored;          /* RESTORED: T:r exists, nothing written */
        sk_claim_rec_t rec;    /* the record after the call */
} claim_res_t;

/* claim.lua @p op for one trace of @p voucher_id in its bucket @p bucket (partition/offset: SK_CLAIM_OP_SENT). */
static sk_err_t claim_call(rc_ctx_t *ctx, int64_t voucher_id, int bucket, sk_claim_op_t op, int64_t trace_id,
                           int32_t partition, int64_t offset, claim_res_t *res,
                           char *errstr, size_t errstr_size)
{
        sk_claim_call_t call;
        redisReply *reply = NULL;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        memset(&call, 0, sizeof(call));
        err = sk_claim_op_init(&call, ctx->conf->redis_prefix, voucher_id, bucket, op,
                               rc_expire_extra_ms(ctx), trace_id, partition, offset, errstr,
                               errstr_size);
        if (err == SK_OK)
                err = sk_claim_run(ctx->r, &call, &reply, errstr, errstr_size);
        if (err == SK_OK)
                err = sk_claim_parse_op(reply, &res->restored, &res->rec, errstr, errstr_size);
        if (reply)
                freeReplyObject(reply);
        sk_claim_call_free(&call);
        return err;
}

/* ---- the DLQ set ---- */

static void ensure_dlq(rc_ctx_t *ctx, int reload)
{
        char errstr[512];
        sk_err_t err;

        if (ctx->dlq_loaded && !reload)
                return;
        free(ctx->dlq_ids);
        ctx->dlq_ids = NULL;
        ctx->ndlq = 0;
        ctx->dlq_err = 0;
        ctx->dlq_loaded = 1;
        err = rc_dlq_read(ctx->conf, ctx->conf->dlq_topic, KAFKA_TIMEOUT_MS, &ctx->dlq_ids,
                          &ctx->ndlq, errstr, sizeof(errstr));
        if (err != SK_OK) {
                /* Without the DLQ we cannot tell poison from lost: count no failure. */
                ctx->dlq_err = 1;
                SK_LOG(SK_WARN, "dlq_read_failed", "topic=%s err=\"%s\"", ctx->conf->dlq_topic,
                       errstr);
        } else {
                SK_LOG(SK_INFO, "dlq_read", "topic=%s traces=%zu", ctx->conf->dlq_topic,
                       ctx->ndlq);
        }
}

static int in_dlq(rc_ctx_t *ctx, int64_t trace_id)
{
        return ctx->ndlq && bsearch(&trace_id, ctx->dlq_ids, ctx->ndlq, sizeof(int64_t),
                                    sk_i64_cmp) != NULL;
}

/* A DLQ'd purchase (poison, or a DB error the consumer gave up on): re-driven once per
 * pass (it may be fixed by now), never counted, never rolled back, reported. One that an
 * earlier pass already re-drove (@p c->redrives > 0) came back: it is stuck in the DLQ
 * re-drive loop until someone fixes it (counted apart so it can be alerted on). */
static void dlq_redrive(const sk_trace_entry_t *e, const sk_claim_rec_t *c, rc_vstat_t *st)
{
        st->dlq++;
        if (c->redrives > 0)
                st->dlq_loop++;
        SK_LOG(SK_WARN, "trace_in_dlq", "voucher=%" PRId64 " trace=%" PRId64 " redrives=%" PRId64
               " redrive_loop=%d", e->msg.voucher_id, e->trace_id, c->redrives, c->redrives > 0);
        rc_note(st, "%s", "undecided trace found in the DLQ");
}

/* ---- re-drives ---- */

typedef struct redrive {
        sk_trace_entry_t *e;   /* index is stable: the set is not grown during actions */
        rc_delivery_t dr;
        int sent;              /* produce accepted */
} redrive_t;

static int ensure_producer(rc_ctx_t *ctx, rc_vstat_t *st)
{
        char errstr[512];

        if (ctx->prod)
                return 0;
        if (sk_kafka_ensure_topics(ctx->conf, KAFKA_TIMEOUT_MS, errstr, sizeof(errstr)) != SK_OK ||
            !(ctx->prod = rc_producer_new(ctx->conf, errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "producer_unavailable", "err=\"%s\"", errstr);
                st->errors++;
                rc_note(st, "Kafka unavailable: %s", errstr);
                return -1;
        }
        return 0;
}

/* claim.lua claim then publish, for each of @p list[0..n) while the lock holds; the
 * published ones land in @p rd. @returns how many. */
static size_t claim_and_send(rc_ctx_t *ctx, sk_trace_entry_t **list, size_t n, redrive_t *rd,
                             rc_vstat_t *st)
{
        char errstr[512], key[SK_MSG_KEY_MAX];
        size_t i, m = 0;

        for (i = 0; i < n && !rc_must_stop(ctx); i++) {
                sk_trace_entry_t *e = list[i];
                claim_res_t cr;
                sk_err_t err;

                err = claim_call(ctx, e->msg.voucher_id, e->msg.bucket, SK_CLAIM_OP_CLAIM, e->trace_id, -1, -1, &cr,
                                 errstr, sizeof(errstr));
                if (err != SK_OK) {
                        SK_LOG(SK_ERROR, "claim_failed", "voucher=%" PRId64 " trace=%" PRId64
                               " err=\"%s\"", e->msg.voucher_id, e->trace_id, errstr);
                        st->errors++;
                        rc_note(st, "claim failed: %s", errstr);
                        continue;
                }
                if (cr.restored) {
                        /* The front fenced it after our scan: record its decision. */
                        rc_decide_failed(ctx, e, SK_REASON_FRONT_ROLLBACK, "fenced by the front", st);
                        continue;
                }
                rd[m].e = e;
                sk_msg_key(key, sizeof(key), e->msg.voucher_id, e->msg.bucket); /* "V:b", DESIGN.md 5 */
                if (rc_producer_send(ctx->prod, key, e->deduct, &rd[m].dr, errstr,
                                     sizeof(errstr)) == SK_OK)
                        rd[m].sent = 1;
                m++;
        }
        return m;
}

/* After the delivery reports: claim.lua sent P O for each PERSISTED re-drive, while the
 * lock holds (a re-drive published but not recorded is re-driven by the next pass: a
 * duplicate is harmless, the outcome key decides once). */
static void record_sent(rc_ctx_t *ctx, redrive_t *rd, size_t m, rc_vstat_t *st)
{
        char errstr[512];
        size_t i;

        for (i = 0; i < m && !rc_must_stop(ctx); i++) {
                sk_trace_entry_t *e = rd[i].e;
                claim_res_t cr;

                if (!rd[i].dr.done || rd[i].dr.err != RD_KAFKA_RESP_ERR_NO_ERROR ||
                    rd[i].dr.status != RD_KAFKA_MSG_STATUS_PERSISTED) {
                        SK_LOG(SK_WARN, "redrive_not_persisted", "voucher=%" PRId64 " trace=%" PRId64
                               " err=\"%s\"", e->msg.voucher_id, e->trace_id,
                               rd[i].dr.done ? rd[i].dr.err ? rd_kafka_err2str(rd[i].dr.err)
                                                            : "possibly persisted"
                                             : "no delivery report");
                        st->not_persisted++;
                        rc_note(st, "%s", "re-drive not persisted");
                        continue;
                }
                if (claim_call(ctx, e->msg.voucher_id, e->msg.bucket, SK_CLAIM_OP_SENT, e->trace_id, rd[i].dr.partition,
                               rd[i].dr.offset, &cr, errstr, sizeof(errstr)) != SK_OK) {
                        SK_LOG(SK_WARN, "claim_sent_failed", "voucher=%" PRId64 " trace=%" PRId64
                               " err=\"%s\"", e->msg.voucher_id, e->trace_id, errstr);
                }
                SK_LOG(SK_INFO, "redriven", "voucher=%" PRId64 " trace=%" PRId64
                       " partition=%d offset=%" PRId64 " dlq=%d", e->msg.voucher_id, e->trace_id,
                       (int)rd[i].dr.partition, rd[i].dr.offset, in_dlq(ctx, e->trace_id));
                st->redriven++;
                if (SK_FAILPOINT("reconciler.after_redrive")) {
                        st->errors++;
                        rc_note(st, "%s", "failpoint reconciler.after_redrive");
                        break;
                }
        }
}

/* Re-drive the entries @p list[0..n): claim, publish, wait, record. */
static void redrive_batch(rc_ctx_t *ctx, sk_trace_entry_t **list, size_t n, rc_vstat_t *st)
{
        redrive_t *rd = calloc(n ? n : 1, sizeof(*rd));
        size_t m;

        if (!rd) {
                st->errors++;
                rc_note(st, "%s", "out of memory");
                return;
        }
        if (ensure_producer(ctx, st) != 0) {
                st->not_persisted += (int64_t)n;
                free(rd);
                return;
        }
        m = claim_and_send(ctx, list, n, rd, st);
        /* Reports arrive within message.timeout.ms; allow a margin for the poll loop. */
        (void)rc_producer_wait(ctx->prod, ctx->conf->kafka_delivery_timeout_ms + 2000);
        record_sent(ctx, rd, m, st);
        if (rc_producer_outstanding(ctx->prod) > 0) {
                /* A report could still write into rd: keep it (a bounded leak beats a
                 * write into freed memory). Never seen: the purge reports everything. */
                SK_LOG(SK_ERROR, "delivery_reports_outstanding", "count=%d",
                       rc_producer_outstanding(ctx->prod));
                return;
        }
        free(rd);
}

/* Committed offsets of the group per partition, read once per voucher evaluation. */
typedef struct committed {
        int32_t partition;
        int64_t offset;        /* -1 none; -2 unreadable */
} committed_t;

static int64_t committed_get(rc_ctx_t *ctx, committed_t *cache, size_t *ncache, int32_t partition)
{
        char errstr[512];
        size_t i;
        int64_t off = -1;

        for (i = 0; i < *ncache; i++)
                if (cache[i].partition == partition)
                        return cache[i].offset;
        if (sk_kafka_committed(ctx->conf, ctx->conf->topic, partition, &off, KAFKA_TIMEOUT_MS,
                               errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "committed_unreadable", "topic=%s partition=%d err=\"%s\"",
                       ctx->conf->topic, (int)partition, errstr);
                off = -2;
        }
        cache[*ncache].partition = partition;
        cache[*ncache].offset = off;
        (*ncache)++;
        return off;
}


/* Lists of one batch of undecided traces. */
typedef struct und_lists {
        sk_trace_entry_t **redrive, **check;
        size_t nr, nc;
        committed_t *cache;
        size_t ncache;
} und_lists_t;

/* First look at each undecided trace: outstanding re-drive to check, DLQ, exhausted, or
 * to re-drive. */
static void sort_undecided(rc_ctx_t *ctx, sk_trace_entry_t **und, size_t n, und_lists_t *l,
                           rc_vstat_t *st)
{
        size_t i;

        for (i = 0; i < n && !rc_must_stop(ctx); i++) {
                sk_trace_entry_t *e = und[i];
                sk_claim_rec_t c;

                sk_claim_parse(e->claim, &c);
                if (c.partition >= 0 && c.redrives > c.failed) {
                        l->check[l->nc++] = e; /* the DLQ is consulted again below */
                } else if (in_dlq(ctx, e->trace_id)) {
                        dlq_redrive(e, &c, st);
                        l->redrive[l->nr++] = e;
                } else if (c.failed >= ctx->opts.max_redrive && ctx->dlq_err) {
                        /* Counted out, but the DLQ is unreadable: it may be poison. */
                        st->waiting++;
                        rc_note(st, "%s", "DLQ unreadable: not declaring a purchase lost");
                } else if (c.failed >= ctx->opts.max_redrive) {
                        /* Counted out in an earlier pass that stopped before deciding. */
                        rc_decide_failed(ctx, e, SK_REASON_LOST, "re-drives exhausted", st);
                } else {
                        l->redrive[l->nr++] = e;
                }
        }
}

/* An outstanding re-drive of @p e whose committed offset is in the cache: decided
 * meanwhile, waiting on consumers, or counted failed (then lost or re-driven again). */
static void judge_outstanding(rc_ctx_t *ctx, sk_trace_entry_t *e, und_lists_t *l,
                              rc_vstat_t *st)
{
        char errstr[512];
        sk_outcome_t oc;
        sk_claim_rec_t c;
        claim_res_t cr;
        int64_t committed;
        sk_err_t err;

        sk_claim_parse(e->claim, &c);
        committed = committed_get(ctx, l->cache, &l->ncache, c.partition);
        if (in_dlq(ctx, e->trace_id)) {
                dlq_redrive(e, &c, st);
                l->redrive[l->nr++] = e;
                return;
        }
        err = sk_outcome_get(ctx->db, e->trace_id, &oc, errstr, sizeof(errstr));
        if (err == SK_OK) {
                /* Decided meanwhile by a consumer. */
                if (!sk_outcome_matches(&oc, &e->msg)) {
                        st->collisions++;
                        rc_note(st, "%s", "outcome id collision");
                } else {
                        st->consistent++;
                }
                return;
        }
        if (err != SK_ENOTFOUND) {
                st->errors++;
                rc_note(st, "outcome read failed: %s", errstr);
                return;
        }
        if (committed == -2 || ctx->dlq_err || committed <= c.offset) {
                /* Consumers are behind, absent, or we cannot tell: wait, report, never
                 * roll back (DESIGN.md 8). */
                st->waiting++;
                SK_LOG(SK_WARN, "waiting_on_consumers", "voucher=%" PRId64 " trace=%" PRId64
                       " partition=%d redrive_offset=%" PRId64 " committed=%" PRId64,
                       e->msg.voucher_id, e->trace_id, (int)c.partition, c.offset, committed);
                rc_note(st, "%s", "waiting on consumers");
                return;
        }
        /* The group consumed past the re-drive and still no outcome: count it. */
        if (rc_must_stop(ctx))
                return;
        if (claim_call(ctx, e->msg.voucher_id, e->msg.bucket, SK_CLAIM_OP_FAILED, e->trace_id, -1, -1, &cr, errstr,
                       sizeof(errstr)) != SK_OK) {
                st->errors++;
                rc_note(st, "claim failed: %s", errstr);
                return;
        }
        if (cr.restored) {
                rc_decide_failed(ctx, e, SK_REASON_FRONT_ROLLBACK, "fenced by the front", st);
                return;
        }
        st->failed_counted++;
        SK_LOG(SK_WARN, "redrive_counted_failed", "voucher=%" PRId64 " trace=%" PRId64
               " failed=%" PRId64 " max=%d partition=%d offset=%" PRId64 " committed=%" PRId64,
               e->msg.voucher_id, e->trace_id, cr.rec.failed, ctx->opts.max_redrive,
               (int)c.partition, c.offset, committed);
        if (cr.rec.failed >= ctx->opts.max_redrive)
                rc_decide_failed(ctx, e, SK_REASON_LOST, "re-drives exhausted", st);
        else
                l->redrive[l->nr++] = e;
}

void rc_redrive_undecided(rc_ctx_t *ctx, sk_trace_entry_t **und, size_t n, rc_vstat_t *st)
{
        und_lists_t l;
        size_t i;

        memset(&l, 0, sizeof(l));
        l.redrive = calloc(n ? n : 1, sizeof(*l.redrive));
        l.check = calloc(n ? n : 1, sizeof(*l.check));
        l.cache = calloc(n ? n : 1, sizeof(*l.cache));
        if (!l.redrive || !l.check || !l.cache) {
                st->errors++;
                rc_note(st, "%s", "out of memory");
                goto done;
        }
        ensure_dlq(ctx, 0);
        sort_undecided(ctx, und, n, &l, st);

        /* Outstanding re-drives: the committed offsets first, then the DLQ and outcomes.
         * Every offset is read before them (DESIGN.md 8): a message the group committed
         * past was settled by then -- decided in the DB or PERSISTED to the DLQ -- so a
         * fresh read of both cannot miss why. */
        for (i = 0; i < l.nc; i++) {
                sk_claim_rec_t c;
                sk_claim_parse(l.check[i]->claim, &c);
                (void)committed_get(ctx, l.cache, &l.ncache, c.partition);
        }
        if (l.nc)
                ensure_dlq(ctx, 1);
        for (i = 0; i < l.nc && !rc_must_stop(ctx); i++)
                judge_outstanding(ctx, l.check[i], &l, st);
        if (l.nr && !rc_must_stop(ctx))
                redrive_batch(ctx, l.redrive, l.nr, st);
done:
        free(l.redrive);
        free(l.check);
        free(l.cache);
}

void rc_redrive_release(rc_ctx_t *ctx)
{
        rc_producer_destroy(ctx->prod);
        ctx->prod = NULL;
        free(ctx->dlq_ids);
        ctx->dlq_ids = NULL;
        ctx->ndlq = 0;
        ctx->dlq_loaded = 0;
        ctx->dlq_err = 0;
}
