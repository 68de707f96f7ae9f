/* reconcile.c: one pass over one voucher (reconcile.h). The rules, by the states of
 * DESIGN.md 7 (T = DEDUCT entry, T:r = RESTORE fence, T:c = claim record):
 *
 *   T, CREATED, order row, ids match      consistent; DEDUCT reconcile-log row -> 4
 *   T, CREATED, ids or order row differ   inconsistent: log row -> 3, alert
 *   T + T:r, CREATED                      inconsistent (Redis undid a created order):
 *                                         log row -> 3, alert; --repair rebuilds Redis
 *   T, FAILED, T:r                        consistent
 *   T, FAILED, no T:r                     rollback.lua with the stored reason's flags
 *                                         (sold_out: clamp to the DB stock read now)
 *   T + T:r, no outcome                   the front fenced it: FAILED front_rollback
 *   T, no outcome, no T:r                 undecided: the re-drive machinery below
 *   T:r without T                         no purchase ran: ignored
 *   CREATED outcome, trace gone           drift (Redis lost data), reported
 *
 * Re-drive machinery (DESIGN.md 8 "re-drive bookkeeping"), for an undecided T older
 * than the grace period, with c = the claim record:
 *   - traceId in the DLQ topic: re-driven once per pass, never counted, never rolled
 *     back, reported (exit 2);
 *   - a re-drive outstanding (c has partition P and offset O and redrives > failed):
 *     the group's committed offset on P is read FIRST, then the outcome again; no
 *     outcome and committed > O -> claim.lua failed (counted); else waiting (exit 2);
 *   - failed >= --max-redrive: FAILED (lost) committed, then rollback.lua;
 *   - otherwise: claim.lua claim (RESTORED: the front fenced it -> FAILED
 *     front_rollback), publish the stored entry again (key = voucherId), wait for the
 *     delivery report, claim.lua sent P O when PERSISTED.
 * Judging uses the T entry's ts; entries younger than --grace-seconds are left alone.
 * The stop flag and the run lock are checked between batches, never inside a DB
 * transaction (every transaction here is one sk_outcome_fail call).
 *
 * What it does not do: print (main.c does), or retry a whole voucher (the next pass
 * will; cron runs it again). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rc_kafka.h"
#include "reconcile.h"
#include "rc_release.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/outcome.h"
#include "sk/rebuild.h"
#include "sk/traceset.h"
#include "sk/vec.h"
#include "sk/verify.h"

#define BATCH_TRACES 500                    /* traces acted on between stop checks */
#define EXPIRY_ALERT_MS (6 * 3600 * 1000LL) /* issue 5: undecided and < 6 h of life left */
#define KAFKA_TIMEOUT_MS 10000              /* committed offsets, DLQ read */

/* Keep the first problem of the voucher for the table (@p what is cut to 160 bytes). */
static void note(rc_vstat_t *st, const char *fmt, const char *what)
{
        char w[160];
        size_t len = strlen(what);

        if (st->note[0])
                return;
        if (len >= sizeof(w))
                len = sizeof(w) - 1;
        memcpy(w, what, len);
        w[len] = '\0';
        snprintf(st->note, sizeof(st->note), fmt, w);
}

/* 1 when the pass must stop now (signal or lost run lock). */
static int must_stop(rc_ctx_t *ctx)
{
        if (ctx->stop && *ctx->stop)
                return 1;
        if (ctx->lock_ok && !ctx->lock_ok(ctx->lock_arg)) {
                ctx->lock_lost = 1;
                return 1;
        }
        return 0;
}

static int64_t expire_extra_ms(rc_ctx_t *ctx)
{
        return sk_expire_extra_ms(ctx->conf->reconcile_window_hours);
}

/* ---- scope ---- */

typedef struct scope_acc {
        sk_i64vec_t ids;
        int oom;
} scope_acc_t;

static int scope_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        scope_acc_t *a = arg;

        (void)nulls;
        (void)ncols;
        if (sk_i64vec_push(&a->ids, cols[0]) != 0) {
                a->oom = 1;
                return 1;
        }
        return 0;
}

sk_err_t rc_scope(rc_ctx_t *ctx, int64_t **ids, size_t *n, char *errstr, size_t errstr_size)
{
        scope_acc_t a = { { 0 }, 0 };
        int64_t hours = (int64_t)ctx->opts.window_hours + 24;
        sk_err_t err;

        *ids = NULL;
        *n = 0;
        if (ctx->opts.voucher_id > 0) {
                if (!(*ids = malloc(sizeof(**ids)))) {
                        sk_seterr(errstr, errstr_size, "out of memory");
                        return SK_ENOMEM;
                }
                (*ids)[0] = ctx->opts.voucher_id;
                *n = 1;
                return SK_OK;
        }
        /* On sale or ended within the life of its trace hash (window + 24 h). Vouchers
         * not started yet have no purchases to reconcile. The session time zone is UTC
         * (sk_db_connect), as every DATETIME column is. */
        err = sk_traceset_rows(ctx->db,
                               "SELECT voucher_id FROM tb_seckill_voucher"
                               " WHERE begin_time <= UTC_TIMESTAMP(3)"
                               " AND end_time >= UTC_TIMESTAMP(3) - INTERVAL ? HOUR"
                               " ORDER BY voucher_id",
                               &hours, 1, 1, scope_row, &a, errstr, errstr_size);
        if (err == SK_OK && a.oom) {
                sk_seterr(errstr, errstr_size, "out of memory");
                err = SK_ENOMEM;
        }
        if (err != SK_OK) {
                free(a.ids.v);
                return err;
        }
        *ids = a.ids.v;
        *n = a.ids.n;
        return SK_OK;
}

/* ---- Redis helpers ---- */

typedef struct claim_res {
        int restored;          /* RESTORED: T:r exists, nothing written */
        sk_claim_rec_t rec;    /* the record after the call */
} claim_res_t;

static sk_err_t claim_call(rc_ctx_t *ctx, int64_t voucher_id, const char *op, int64_t trace_id,
                           int32_t partition, int64_t offset, claim_res_t *res,
                           char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_trace[SK_KEY_MAX], extra[32], tid[SK_ID_STRLEN];
        char part_s[16], off_s[32];
        const char *keys[2] = { k_meta, k_trace };
        const char *args[5];
        int nargs = 3;
        redisReply *reply = NULL;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        sk_key_voucher(k_meta, ctx->conf->redis_prefix, voucher_id, SK_KEY_META);
        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, SK_KEY_TRACE);
        snprintf(extra, sizeof(extra), "%" PRId64, expire_extra_ms(ctx));
        sk_id_format(trace_id, tid);
        args[0] = op;
        args[1] = extra;
        args[2] = tid;
        if (strcmp(op, "sent") == 0) {
                snprintf(part_s, sizeof(part_s), "%d", (int)partition);
                snprintf(off_s, sizeof(off_s), "%" PRId64, offset);
                args[3] = part_s;
                args[4] = off_s;
                nargs = 5;
        }
        err = sk_redis_evalsha(ctx->r, SK_SCRIPT_CLAIM, 2, keys, nargs, args, &reply, errstr,
                               errstr_size);
        if (err != SK_OK)
                return err;
        err = SK_EREDIS;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
            reply->element[0]->type != REDIS_REPLY_STRING) {
                sk_seterr(errstr, errstr_size, "claim.lua %s: unexpected reply", op);
                goto done;
        }
        if (strcmp(reply->element[0]->str, "RESTORED") == 0) {
                res->restored = 1;
                err = SK_OK;
                goto done;
        }
        if (strcmp(reply->element[0]->str, "OK") != 0 || reply->elements < 6) {
                sk_seterr(errstr, errstr_size, "claim.lua %s: unexpected reply %s", op,
                          reply->element[0]->str);
                goto done;
        }
        res->rec.redrives = reply->element[1]->integer;
        res->rec.failed = reply->element[2]->integer;
        res->rec.consumed = reply->element[3]->integer != 0;
        res->rec.partition = -1;
        res->rec.offset = -1;
        if (reply->element[4]->type == REDIS_REPLY_STRING && reply->element[4]->len > 0 &&
            reply->element[5]->type == REDIS_REPLY_STRING && reply->element[5]->len > 0) {
                long p;
                int64_t o;
                if (sk_parse_long(reply->element[4]->str, 0, INT32_MAX, &p) == 0 &&
                    (strcmp(reply->element[5]->str, "0") == 0 ||
                     sk_id_parse_cstr(reply->element[5]->str, &o) == 0)) {
                        res->rec.partition = (int32_t)p;
                        res->rec.offset = strcmp(reply->element[5]->str, "0") == 0 ? 0 : o;
                }
        }
        err = SK_OK;
done:
        freeReplyObject(reply);
        return err;
}

/* ---- decisions ---- */

/* The DB stock now (for the sold_out clamp), or -1 when it cannot be read. */
static int64_t db_stock_now(rc_ctx_t *ctx, int64_t voucher_id)
{
        sk_voucher_row_t row;
        char errstr[256];

        if (sk_voucher_get(ctx->db, voucher_id, 0, &row, errstr, sizeof(errstr)) != SK_OK)
                return -1;
        return row.stock;
}

/* rollback.lua mode reconciler with the flags of @p reason. */
static sk_err_t do_rollback(rc_ctx_t *ctx, const sk_trace_entry_t *e, sk_reason_t reason,
                            rc_vstat_t *st, sk_rollback_res_t *res)
{
        char errstr[512];
        int restore, release, clamp;
        int64_t clamp_to = -1;
        sk_err_t err;
        int attempt;

        sk_reason_flags(reason, &restore, &release, &clamp);
        if (clamp && (clamp_to = db_stock_now(ctx, e->msg.voucher_id)) < 0) {
                /* Clamping to an unknown figure is impossible; try again next pass. */
                st->errors++;
                note(st, "%s", "DB stock unreadable for a sold_out clamp");
                return SK_EAGAIN;
        }
        /* rollback.lua is idempotent per traceId: an unknown outcome is retried once on a
         * fresh connection (sk_redis reconnects by itself). */
        for (attempt = 0; attempt < 2; attempt++) {
                err = sk_rollback_run(ctx->r, ctx->conf->redis_prefix, e->msg.voucher_id,
                                      e->trace_id, e->msg.user_id, "reconciler", reason, clamp_to,
                                      expire_extra_ms(ctx), res, errstr, sizeof(errstr));
                if (err != SK_EUNKNOWN)
                        break;
        }
        if (err != SK_OK) {
                SK_LOG(SK_ERROR, "rollback_failed", "voucher=%" PRId64 " trace=%" PRId64
                       " reason=%s err=\"%s\"", e->msg.voucher_id, e->trace_id,
                       sk_reason_str(reason), errstr);
                st->errors++;
                note(st, "rollback failed: %s", errstr);
                return err;
        }
        SK_LOG(SK_INFO, "rolled_back", "voucher=%" PRId64 " trace=%" PRId64 " reason=%s"
               " already=%d restored=%d released=%d clamped=%d", e->msg.voucher_id,
               e->trace_id, sk_reason_str(reason), res->already, res->restored, res->released,
               res->clamped);
        return SK_OK;
}

/* Follow an existing FAILED outcome: rollback.lua with its reason's flags. */
static void follow_failed(rc_ctx_t *ctx, sk_trace_entry_t *e, const sk_outcome_t *oc,
                          rc_vstat_t *st)
{
        sk_rollback_res_t res;

        if (oc->reason == SK_REASON_NONE) {
                /* An unknown reason has unknown flags: a human decides. */
                SK_LOG(SK_ERROR, "unknown_failure_reason", "voucher=%" PRId64 " trace=%" PRId64
                       " reason=\"%s\"", e->msg.voucher_id, e->trace_id, oc->reason_str);
                st->inconsistent++;
                note(st, "FAILED outcome with unknown reason %s", oc->reason_str);
                return;
        }
        if (do_rollback(ctx, e, oc->reason, st, &res) == SK_OK) {
                if (res.already)
                        st->consistent++;
                else
                        st->rolled_back++;
        }
}

/* Insert FAILED(@p reason) then run the rollback (DESIGN.md 7: the outcome first).
 * A duplicate key means someone decided first: follow that row, or report a collision. */
static void decide_failed(rc_ctx_t *ctx, sk_trace_entry_t *e, sk_reason_t reason,
                          const char *detail, rc_vstat_t *st)
{
        sk_outcome_t existing;
        sk_rollback_res_t res;
        char errstr[512];
        sk_err_t err;

        memset(&existing, 0, sizeof(existing));
        err = sk_outcome_fail(ctx->db, &e->msg, reason, detail, &existing, errstr, sizeof(errstr));
        if (err == SK_EEXIST) {
                if (!sk_outcome_matches(&existing, &e->msg)) {
                        SK_LOG(SK_ERROR, "outcome_collision", "voucher=%" PRId64 " trace=%" PRId64
                               " order=%" PRId64 " row_order=%" PRId64 " user=%" PRId64
                               " row_user=%" PRId64, e->msg.voucher_id, e->trace_id,
                               e->msg.order_id, existing.order_id, e->msg.user_id,
                               existing.user_id);
                        st->collisions++;
                        note(st, "%s", "outcome id collision");
                        return;
                }
                e->outcome = existing.outcome;
                e->oc = existing;
                if (existing.outcome == SK_OUTCOME_CREATED) {
                        st->consistent++; /* the order won: nothing to undo */
                        return;
                }
                follow_failed(ctx, e, &existing, st);
                return;
        }
        if (err != SK_OK) {
                SK_LOG(SK_ERROR, "outcome_fail_failed", "voucher=%" PRId64 " trace=%" PRId64
                       " reason=%s err=\"%s\"", e->msg.voucher_id, e->trace_id,
                       sk_reason_str(reason), errstr);
                st->errors++;
                note(st, "recording FAILED: %s", errstr);
                return;
        }
        SK_LOG(SK_INFO, "outcome_failed_recorded", "voucher=%" PRId64 " trace=%" PRId64
               " reason=%s", e->msg.voucher_id, e->trace_id, sk_reason_str(reason));
        e->outcome = SK_OUTCOME_FAILED;
        if (reason == SK_REASON_FRONT_ROLLBACK)
                st->fenced++;
        else if (reason == SK_REASON_LOST)
                st->lost++;
        if (do_rollback(ctx, e, reason, st, &res) == SK_OK) {
                if (res.already)
                        st->consistent++; /* the front's fence already did the rollback */
                else
                        st->rolled_back++;
        }
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
 * pass (it may be fixed by now), never counted, never rolled back, reported. */
static void dlq_redrive(rc_ctx_t *ctx, const sk_trace_entry_t *e, rc_vstat_t *st)
{
        (void)ctx;
        st->dlq++;
        SK_LOG(SK_WARN, "trace_in_dlq", "voucher=%" PRId64 " trace=%" PRId64,
               e->msg.voucher_id, e->trace_id);
        note(st, "%s", "undecided trace found in the DLQ");
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
                note(st, "Kafka unavailable: %s", errstr);
                return -1;
        }
        return 0;
}

/* Re-drive the entries @p list[0..n): claim, publish, wait, record. */
static void redrive_batch(rc_ctx_t *ctx, sk_trace_entry_t **list, size_t n, rc_vstat_t *st)
{
        redrive_t *rd = calloc(n ? n : 1, sizeof(*rd));
        char errstr[512], key[SK_ID_STRLEN];
        size_t i, m = 0;

        if (!rd) {
                st->errors++;
                note(st, "%s", "out of memory");
                return;
        }
        if (ensure_producer(ctx, st) != 0) {
                st->not_persisted += (int64_t)n;
                goto done;
        }
        for (i = 0; i < n; i++) {
                sk_trace_entry_t *e = list[i];
                claim_res_t cr;
                sk_err_t err;

                err = claim_call(ctx, e->msg.voucher_id, "claim", e->trace_id, -1, -1, &cr,
                                 errstr, sizeof(errstr));
                if (err != SK_OK) {
                        SK_LOG(SK_ERROR, "claim_failed", "voucher=%" PRId64 " trace=%" PRId64
                               " err=\"%s\"", e->msg.voucher_id, e->trace_id, errstr);
                        st->errors++;
                        note(st, "claim failed: %s", errstr);
                        continue;
                }
                if (cr.restored) {
                        /* The front fenced it after our scan: record its decision. */
                        decide_failed(ctx, e, SK_REASON_FRONT_ROLLBACK, "fenced by the front", st);
                        continue;
                }
                rd[m].e = e;
                sk_id_format(e->msg.voucher_id, key);
                if (rc_producer_send(ctx->prod, key, e->deduct, &rd[m].dr, errstr,
                                     sizeof(errstr)) == SK_OK)
                        rd[m].sent = 1;
                m++;
        }
        /* Reports arrive within message.timeout.ms; allow a margin for the poll loop. */
        (void)rc_producer_wait(ctx->prod, ctx->conf->kafka_delivery_timeout_ms + 2000);
        for (i = 0; i < m; i++) {
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
                        note(st, "%s", "re-drive not persisted");
                        continue;
                }
                if (claim_call(ctx, e->msg.voucher_id, "sent", e->trace_id, rd[i].dr.partition,
                               rd[i].dr.offset, &cr, errstr, sizeof(errstr)) != SK_OK) {
                        /* Published but not recorded: the next pass re-drives it again
                         * (a duplicate is harmless: the outcome key decides once). */
                        SK_LOG(SK_WARN, "claim_sent_failed", "voucher=%" PRId64 " trace=%" PRId64
                               " err=\"%s\"", e->msg.voucher_id, e->trace_id, errstr);
                }
                SK_LOG(SK_INFO, "redriven", "voucher=%" PRId64 " trace=%" PRId64
                       " partition=%d offset=%" PRId64 " dlq=%d", e->msg.voucher_id, e->trace_id,
                       (int)rd[i].dr.partition, rd[i].dr.offset, in_dlq(ctx, e->trace_id));
                st->redriven++;
                if (SK_FAILPOINT("reconciler.after_redrive")) {
                        st->errors++;
                        note(st, "%s", "failpoint reconciler.after_redrive");
                        break;
                }
        }
done:
        if (ctx->prod && rc_producer_outstanding(ctx->prod) > 0) {
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

/* The undecided traces (T, no T:r, no outcome, older than grace) of one batch. */
static void handle_undecided(rc_ctx_t *ctx, sk_trace_entry_t **und, size_t n, rc_vstat_t *st)
{
        sk_trace_entry_t **redrive = calloc(n ? n : 1, sizeof(*redrive));
        sk_trace_entry_t **check = calloc(n ? n : 1, sizeof(*check));
        committed_t *cache = calloc(n ? n : 1, sizeof(*cache));
        size_t nr = 0, nc = 0, ncache = 0, i;
        char errstr[512];

        if (!redrive || !check || !cache) {
                st->errors++;
                note(st, "%s", "out of memory");
                goto done;
        }
        ensure_dlq(ctx, 0);
        for (i = 0; i < n; i++) {
                sk_trace_entry_t *e = und[i];
                sk_claim_rec_t c;

                sk_claim_parse(e->claim, &c);
                if (c.partition >= 0 && c.redrives > c.failed) {
                        check[nc++] = e; /* the DLQ is consulted again below */
                } else if (in_dlq(ctx, e->trace_id)) {
                        dlq_redrive(ctx, e, st);
                        redrive[nr++] = e;
                } else if (c.failed >= ctx->opts.max_redrive && ctx->dlq_err) {
                        /* Counted out, but the DLQ is unreadable: it may be poison. */
                        st->waiting++;
                        note(st, "%s", "DLQ unreadable: not declaring a purchase lost");
                } else if (c.failed >= ctx->opts.max_redrive) {
                        /* Counted out in an earlier pass that stopped before deciding. */
                        decide_failed(ctx, e, SK_REASON_LOST, "re-drives exhausted", st);
                } else {
                        redrive[nr++] = e;
                }
        }

        /* Outstanding re-drives: the committed offset first, then the outcome. */
        for (i = 0; i < nc; i++) {
                sk_claim_rec_t c;
                sk_claim_parse(check[i]->claim, &c);
                (void)committed_get(ctx, cache, &ncache, c.partition);
        }
        /* Every offset above was read before the DLQ and the outcomes below (DESIGN.md 8):
         * a message the group committed past was settled by then -- decided in the DB or
         * PERSISTED to the DLQ -- so a fresh read of both cannot miss why. */
        if (nc)
                ensure_dlq(ctx, 1);
        for (i = 0; i < nc; i++) {
                sk_trace_entry_t *e = check[i];
                sk_outcome_t oc;
                sk_claim_rec_t c;
                claim_res_t cr;
                int64_t committed;
                sk_err_t err;

                sk_claim_parse(e->claim, &c);
                committed = committed_get(ctx, cache, &ncache, c.partition);
                if (in_dlq(ctx, e->trace_id)) {
                        dlq_redrive(ctx, e, st);
                        redrive[nr++] = e;
                        continue;
                }
                err = sk_outcome_get(ctx->db, e->trace_id, &oc, errstr, sizeof(errstr));
                if (err == SK_OK) {
                        /* Decided meanwhile by a consumer. */
                        if (!sk_outcome_matches(&oc, &e->msg)) {
                                st->collisions++;
                                note(st, "%s", "outcome id collision");
                        } else {
                                st->consistent++;
                        }
                        continue;
                }
                if (err != SK_ENOTFOUND) {
                        st->errors++;
                        note(st, "outcome read failed: %s", errstr);
                        continue;
                }
                if (committed == -2 || ctx->dlq_err || committed <= c.offset) {
                        /* Consumers are behind, absent, or we cannot tell: wait, report,
                         * never roll back (DESIGN.md 8). */
                        st->waiting++;
                        SK_LOG(SK_WARN, "waiting_on_consumers", "voucher=%" PRId64 " trace=%" PRId64
                               " partition=%d redrive_offset=%" PRId64 " committed=%" PRId64,
                               e->msg.voucher_id, e->trace_id, (int)c.partition, c.offset,
                               committed);
                        note(st, "%s", "waiting on consumers");
                        continue;
                }
                /* The group consumed past the re-drive and still no outcome: count it. */
                if (claim_call(ctx, e->msg.voucher_id, "failed", e->trace_id, -1, -1, &cr, errstr,
                               sizeof(errstr)) != SK_OK) {
                        st->errors++;
                        note(st, "claim failed: %s", errstr);
                        continue;
                }
                if (cr.restored) {
                        decide_failed(ctx, e, SK_REASON_FRONT_ROLLBACK, "fenced by the front", st);
                        continue;
                }
                st->failed_counted++;
                SK_LOG(SK_WARN, "redrive_counted_failed", "voucher=%" PRId64 " trace=%" PRId64
                       " failed=%" PRId64 " max=%d partition=%d offset=%" PRId64
                       " committed=%" PRId64, e->msg.voucher_id, e->trace_id, cr.rec.failed,
                       ctx->opts.max_redrive, (int)c.partition, c.offset, committed);
                if (cr.rec.failed >= ctx->opts.max_redrive)
                        decide_failed(ctx, e, SK_REASON_LOST, "re-drives exhausted", st);
                else
                        redrive[nr++] = e;
        }
        if (nr)
                redrive_batch(ctx, redrive, nr, st);
done:
        free(redrive);
        free(check);
        free(cache);
}

/* ---- drift ---- */

typedef struct drift_acc {
        sk_traceset_t *set;
        sk_i64vec_t gone;
        int oom;
} drift_acc_t;

static int created_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        drift_acc_t *a = arg;
        sk_trace_entry_t *e;

        (void)nulls;
        (void)ncols;
        e = sk_traceset_get(a->set, cols[0], 0);
        if (!e || !e->deduct) {
                if (sk_i64vec_push(&a->gone, cols[0]) != 0) {
                        a->oom = 1;
                        return 1;
                }
        }
        return 0;
}

/* CREATED outcomes of the voucher whose DEDUCT entry is not in Redis (re-checked with
 * HEXISTS: the scan may have missed a field written during it). */
static void drift_rows(rc_ctx_t *ctx, int64_t voucher_id, sk_traceset_t *set, rc_vstat_t *st)
{
        drift_acc_t a;
        char errstr[512], k_trace[SK_KEY_MAX], f[SK_KEY_MAX];
        size_t i;
        sk_err_t err;

        memset(&a, 0, sizeof(a));
        a.set = set;
        err = sk_traceset_rows(ctx->db,
                               "SELECT trace_id FROM tb_seckill_outcome"
                               " WHERE voucher_id = ? AND outcome = 1",
                               &voucher_id, 1, 1, created_row, &a, errstr, sizeof(errstr));
        if (err != SK_OK || a.oom) {
                st->errors++;
                note(st, "drift query failed: %s", a.oom ? "out of memory" : errstr);
                free(a.gone.v);
                return;
        }
        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, SK_KEY_TRACE);
        for (i = 0; i < a.gone.n; i++) {
                redisReply *reply = NULL;
                sk_field_trace(f, a.gone.v[i], 0);
                if (sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr), "HEXISTS %s %s",
                                  k_trace, f) != SK_OK) {
                        st->errors++;
                        note(st, "HEXISTS failed: %s", errstr);
                        break;
                }
                if (reply->type == REDIS_REPLY_INTEGER && reply->integer == 0)
                        st->drift_rows++;
                freeReplyObject(reply);
        }
        if (st->drift_rows)
                SK_LOG(SK_WARN, "drift_trace_gone", "voucher=%" PRId64 " created_without_trace=%"
                       PRId64, voucher_id, st->drift_rows);
        free(a.gone.v);
}

/* Invariant 3 of DESIGN.md 9 (sk_verify_voucher_conn); with --repair, the rebuild. */
static void stock_users_drift(rc_ctx_t *ctx, int64_t voucher_id, int undecided_left, rc_vstat_t *st)
{
        sk_verify_report_t vr;
        sk_rebuild_report_t rr;
        char errstr[512];
        sk_err_t err;

        err = sk_verify_voucher_conn(ctx->db, ctx->r, ctx->conf->redis_prefix, voucher_id, 3, &vr,
                                     errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                note(st, "verify failed: %s", errstr);
                return;
        }
        if (!vr.redis_stable) {
                /* Traffic is flowing: the figures are not one snapshot; judge next pass. */
                SK_LOG(SK_INFO, "drift_not_judged", "voucher=%" PRId64 " reason=redis_changing",
                       voucher_id);
                return;
        }
        st->stock_drift = !vr.inv3_stock_ok;
        st->users_drift = !vr.inv3_users_ok;
        if (!st->stock_drift && !st->users_drift) {
                st->redis_ok = 1;
                return;
        }
        SK_LOG(SK_WARN, "drift", "voucher=%" PRId64 " redis_stock=%" PRId64 " missing=%d"
               " expected_stock=%" PRId64 " db_stock=%" PRId64 " held=%" PRId64
               " users_in_hash=%" PRId64 " users_not_active=%" PRId64 " active_not_in_hash=%"
               PRId64, voucher_id, vr.redis_stock, vr.redis_stock_missing,
               vr.expected_redis_stock, vr.db_stock, vr.held_qty, vr.users_in_hash,
               vr.users_not_active, vr.active_not_in_hash);
        if (!ctx->opts.repair) {
                note(st, "%s", "Redis stock/users drift (run with --repair)");
                return;
        }
        (void)undecided_left;
        memset(&rr, 0, sizeof(rr));
        err = sk_rebuild_voucher_with(ctx->conf, ctx->db, ctx->r, voucher_id, 0, &rr, errstr,
                                      sizeof(errstr));
        if (err != SK_OK) {
                SK_LOG(SK_ERROR, "rebuild_failed", "voucher=%" PRId64 " err=\"%s\" detail=\"%s\"",
                       voucher_id, errstr, rr.detail);
                st->errors++;
                note(st, "rebuild failed: %s", errstr);
                return;
        }
        SK_LOG(SK_INFO, "rebuilt", "voucher=%" PRId64 " stock=%" PRId64 " users=%" PRId64
               " status=%d fenced_failed=%" PRId64, voucher_id, rr.stock, rr.users, rr.status,
               rr.fenced_failed);
        st->rebuilt = 1;
        st->redis_ok = 1;
}

/* ---- the voucher ---- */

static void mark_log(rc_ctx_t *ctx, sk_i64vec_t *ids, int status, rc_vstat_t *st)
{
        char errstr[512];
        int64_t affected = 0;
        sk_err_t err;

        if (!ids->n)
                return;
        err = sk_traceset_exec_in(ctx->db, status == 4
                        ? "UPDATE tb_voucher_reconcile_log SET reconciliation_status = 4"
                          " WHERE log_type = -1 AND reconciliation_status <> 4 AND trace_id IN "
                        : "UPDATE tb_voucher_reconcile_log SET reconciliation_status = 3"
                          " WHERE log_type = -1 AND reconciliation_status <> 3 AND trace_id IN ",
                        ids->v, ids->n, &affected, errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                note(st, "reconcile-log update failed: %s", errstr);
                return;
        }
        if (status == 4)
                st->log_marked += affected;
}

static int meta_status(rc_ctx_t *ctx, int64_t voucher_id)
{
        char k_meta[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int status = 0;

        sk_key_voucher(k_meta, ctx->conf->redis_prefix, voucher_id, SK_KEY_META);
        if (sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr), "HGET %s status", k_meta) != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_STRING)
                (void)sk_parse_int(reply->str, 0, 100, &status);
        freeReplyObject(reply);
        return status;
}

static int64_t trace_pttl(rc_ctx_t *ctx, int64_t voucher_id)
{
        char k_trace[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int64_t v = -3;

        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, SK_KEY_TRACE);
        if (sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr), "PTTL %s", k_trace) != SK_OK)
                return -3;
        if (reply->type == REDIS_REPLY_INTEGER)
                v = reply->integer;
        freeReplyObject(reply);
        return v;
}

sk_err_t rc_voucher(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st)
{
        sk_traceset_t set;
        sk_voucher_row_t row;
        char errstr[512], k_trace[SK_KEY_MAX];
        sk_trace_entry_t **und = NULL;
        sk_i64vec_t ok4 = { 0 }, bad3 = { 0 };
        int64_t now_ms, grace_ms = (int64_t)ctx->opts.grace_s * 1000;
        size_t i, nund = 0, undecided_left = 0;
        sk_err_t err, ret = SK_OK;
        int ms;

        memset(st, 0, sizeof(*st));
        st->voucher_id = voucher_id;
        sk_traceset_init(&set);
        if (must_stop(ctx))
                return SK_ESTOP;

        err = sk_voucher_get(ctx->db, voucher_id, 0, &row, errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                note(st, err == SK_ENOTFOUND ? "%s" : "voucher read failed: %s",
                     err == SK_ENOTFOUND ? "voucher not in the database" : errstr);
                return SK_OK;
        }

        /* A rebuild that died half-way leaves meta status 4 (DESIGN.md 8). */
        ms = meta_status(ctx, voucher_id);
        if (ms == 4 && row.status != 4) {
                int written = 0;
                err = sk_voucher_reset_meta_with(ctx->conf, ctx->db, ctx->r, voucher_id, &written,
                                                 errstr, sizeof(errstr));
                if (err == SK_OK && written) {
                        SK_LOG(SK_WARN, "meta_reset", "voucher=%" PRId64 " status=%d", voucher_id,
                               row.status);
                        st->meta_reset = 1;
                } else if (err == SK_EAGAIN) {
                        SK_LOG(SK_INFO, "rebuild_in_progress", "voucher=%" PRId64, voucher_id);
                        st->waiting++;
                        note(st, "%s", "paused: a rebuild holds the voucher lock");
                } else if (err != SK_OK) {
                        st->errors++;
                        note(st, "meta reset failed: %s", errstr);
                }
        }

        rc_release_pending(ctx, voucher_id, st); /* before the drift check (DESIGN.md 13) */
        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, SK_KEY_TRACE);
        if ((err = sk_traceset_scan(ctx->r, k_trace, 1000, &set, errstr, sizeof(errstr))) != SK_OK ||
            (err = sk_traceset_load_db(ctx->db, &set, 0, errstr, sizeof(errstr))) != SK_OK) {
                st->errors++;
                note(st, "join failed: %s", errstr);
                goto done;
        }
        if (set.n && !(und = calloc(set.n, sizeof(*und)))) {
                st->errors++;
                note(st, "%s", "out of memory");
                goto done;
        }

        now_ms = sk_now_ms();
        for (i = 0; i < set.n; i++) {
                sk_trace_entry_t *e = &set.v[i];

                if (!e->deduct)
                        continue; /* T:r or T:c without T: no purchase ran */
                st->entries++;
                if (!e->msg_ok) {
                        SK_LOG(SK_ERROR, "bad_trace_entry", "voucher=%" PRId64 " trace=%" PRId64,
                               voucher_id, e->trace_id);
                        st->checked++;
                        st->inconsistent++;
                        note(st, "%s", "DEDUCT entry is not a valid message");
                        continue;
                }
                if (now_ms - e->msg.ts_ms < grace_ms) {
                        st->young++;
                        if (!e->outcome && !e->restore)
                                undecided_left++;
                        continue;
                }
                st->checked++;
                if (e->outcome && !sk_outcome_matches(&e->oc, &e->msg)) {
                        SK_LOG(SK_ERROR, "outcome_collision", "voucher=%" PRId64 " trace=%" PRId64
                               " order=%" PRId64 " row_order=%" PRId64, voucher_id, e->trace_id,
                               e->msg.order_id, e->oc.order_id);
                        st->collisions++;
                        note(st, "%s", "outcome id collision");
                        if (e->outcome == SK_OUTCOME_CREATED)
                                (void)sk_i64vec_push(&bad3, e->trace_id);
                        continue;
                }
                if (e->outcome == SK_OUTCOME_CREATED) {
                        if (e->restore) {
                                SK_LOG(SK_ERROR, "created_but_restored", "voucher=%" PRId64
                                       " trace=%" PRId64 " order=%" PRId64, voucher_id,
                                       e->trace_id, e->oc.order_id);
                                st->inconsistent++;
                                st->created_restored++;
                                note(st, "%s", "CREATED order whose Redis admission was rolled back");
                                (void)sk_i64vec_push(&bad3, e->trace_id);
                        } else if (!e->order_id || e->order_id != e->msg.order_id ||
                                   e->order_user_id != e->msg.user_id ||
                                   e->order_voucher_id != e->msg.voucher_id) {
                                SK_LOG(SK_ERROR, "order_mismatch", "voucher=%" PRId64
                                       " trace=%" PRId64 " order=%" PRId64 " row=%" PRId64,
                                       voucher_id, e->trace_id, e->msg.order_id, e->order_id);
                                st->inconsistent++;
                                note(st, "%s", "CREATED outcome without a matching order row");
                                (void)sk_i64vec_push(&bad3, e->trace_id);
                        } else {
                                st->consistent++;
                                if (e->log_status && e->log_status != 4)
                                        (void)sk_i64vec_push(&ok4, e->trace_id);
                        }
                } else if (e->outcome == SK_OUTCOME_FAILED) {
                        if (e->restore)
                                st->consistent++;
                        else
                                und[nund++] = e; /* rollback pending: acted on below */
                } else if (e->restore) {
                        und[nund++] = e;         /* fenced by the front: record FAILED */
                } else {
                        und[nund++] = e;         /* undecided: re-drive machinery */
                }
        }

        /* Actions, by batches, with the stop flag and the run lock checked in between. */
        for (i = 0; i < nund; i += BATCH_TRACES) {
                size_t m = nund - i < BATCH_TRACES ? nund - i : BATCH_TRACES, j, k = 0;
                sk_trace_entry_t **batch = und + i;

                if (must_stop(ctx)) {
                        ret = SK_ESTOP;
                        goto done;
                }
                for (j = 0; j < m; j++) {
                        sk_trace_entry_t *e = batch[j];
                        if (e->outcome == SK_OUTCOME_FAILED)
                                follow_failed(ctx, e, &e->oc, st);
                        else if (e->restore)
                                decide_failed(ctx, e, SK_REASON_FRONT_ROLLBACK,
                                              "fenced by the front", st);
                        else
                                batch[k++] = e; /* compact the undecided ones in place */
                }
                if (k)
                        handle_undecided(ctx, batch, k, st);
        }

        mark_log(ctx, &ok4, 4, st);
        mark_log(ctx, &bad3, 3, st);
        if (must_stop(ctx)) {
                ret = SK_ESTOP;
                goto done;
        }

        drift_rows(ctx, voucher_id, &set, st);
        /* Keys that expire within the hour (end + window + 1 day) are not judged:
         * a key that has just expired is not Redis losing data. */
        if (row.end_ms + expire_extra_ms(ctx) - now_ms >= 3600 * 1000LL)
                stock_users_drift(ctx, voucher_id, (int)undecided_left, st);
        st->drift = st->drift_rows + (st->stock_drift || st->users_drift ? 1 : 0);

        /* Undecided purchases whose trace hash is about to expire (issue 5). */
        undecided_left += (size_t)(st->waiting + st->dlq + st->not_persisted + st->redriven);
        if (undecided_left) {
                int64_t pttl = trace_pttl(ctx, voucher_id);
                if (pttl >= 0 && pttl < EXPIRY_ALERT_MS) {
                        SK_LOG(SK_ERROR, "undecided_near_expiry", "voucher=%" PRId64
                               " undecided=%zu pttl_ms=%" PRId64, voucher_id, undecided_left, pttl);
                        st->expiry_alert = 1;
                        note(st, "%s", "undecided traces and the trace hash expires within 6 h");
                }
        }
done:
        free(und);
        free(ok4.v);
        free(bad3.v);
        sk_traceset_free(&set);
        return ret;
}

void rc_ctx_release(rc_ctx_t *ctx)
{
        rc_producer_destroy(ctx->prod);
        ctx->prod = NULL;
        free(ctx->dlq_ids);
        ctx->dlq_ids = NULL;
        ctx->ndlq = 0;
        ctx->dlq_loaded = 0;
        ctx->dlq_err = 0;
}

int rc_vstat_exit(const rc_vstat_t *st)
{
        int drift_open = (st->stock_drift || st->users_drift) && !st->rebuilt;
        /* A CREATED order whose admission Redis rolled back is settled once Redis agrees
         * with the DB again (the rebuild of --repair did it, now or in an earlier pass);
         * it stays reported (log row 3) but no longer alerts. */
        int64_t open_inconsistent = st->inconsistent - (st->redis_ok ? st->created_restored : 0);

        if (open_inconsistent || st->waiting || st->dlq || st->collisions || st->not_persisted ||
            st->errors || st->expiry_alert || drift_open)
                return 2;
        if (st->redriven || st->rolled_back || st->lost || st->rebuilt || st->meta_reset ||
            st->failed_counted || st->released)
                return 1;
        return 0;
}
