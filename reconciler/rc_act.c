/* rc_act.c: the reconciler's acts on traces that are decided or must be decided now
 * (rc_pass.h): a FAILED outcome without its T:r fence is followed (rollback.lua with the
 * stored reason's flags), a DEDUCT fenced by the front gets FAILED front_rollback, an
 * exhausted re-drive gets FAILED lost -- always FAILED first, then rollback.lua, a
 * duplicate key followed after comparing ids (DESIGN.md 7), the sold_out clamp as
 * DESIGN.md 4 and 8 say: all through sk/decide.h. Then the DEDUCT reconcile-log rows
 * are marked 4 (consistent) or 3 (inconsistent).
 *
 * The stop flag and the run lock are checked before every batch and, through the
 * decider's proceed hook, before every write; never inside a DB transaction. */
#include <inttypes.h>
#include <string.h>

#include "rc_pass.h"
#include "sk/decide.h"
#include "sk/log.h"
#include "sk/model.h"

#define BATCH_TRACES 500    /* traces acted on between two looks at the stop flag */
#define DECIDE_ATTEMPTS 3   /* stock reads and rollback.lua runs per decision */

static int decider_proceed(void *arg)
{
        return !rc_must_stop(arg);
}

static void decider_init(rc_ctx_t *ctx, sk_decider_t *d)
{
        memset(d, 0, sizeof(*d));
        d->db = ctx->db;
        d->r = ctx->r;
        d->prefix = ctx->conf->redis_prefix;
        d->mode = "reconciler";
        d->expire_extra_ms = rc_expire_extra_ms(ctx);
        d->attempts = DECIDE_ATTEMPTS;
        d->proceed = decider_proceed;
        d->arg = ctx;
}

/* Count what rollback.lua did (it ran: dec->rolled_back). */
static void count_rollback(const sk_trace_entry_t *e, const sk_decision_t *dec, rc_vstat_t *st)
{
        SK_LOG(SK_INFO, "rolled_back", "voucher=%" PRId64 " trace=%" PRId64 " reason=%s"
               " already=%d restored=%d released=%d clamped=%d clamp_to=%" PRId64,
               e->msg.voucher_id, e->trace_id, sk_reason_str(dec->reason), dec->res.already,
               dec->res.restored, dec->res.released, dec->res.clamped, dec->clamp_to);
        if (dec->res.already)
                st->consistent++; /* the front's fence (or an earlier run) did it */
        else
                st->rolled_back++;
}

/* The result of sk_decide_failed / sk_decide_follow into @p st. */
static void count_decision(sk_trace_entry_t *e, const sk_decision_t *dec, sk_err_t err,
                           const char *errstr, rc_vstat_t *st)
{
        if (dec->how == SK_DECIDED_COLLISION) {
                SK_LOG(SK_ERROR, "outcome_collision", "voucher=%" PRId64 " trace=%" PRId64
                       " err=\"%s\"", e->msg.voucher_id, e->trace_id, errstr);
                st->collisions++;
                rc_note(st, "%s", "outcome id collision");
                return;
        }
        if (dec->how != SK_DECIDED_NONE) {
                e->outcome = dec->how == SK_DECIDED_FOLLOWED_CREATED ? SK_OUTCOME_CREATED
                                                                     : SK_OUTCOME_FAILED;
        }
        if (dec->how == SK_DECIDED_FOLLOWED_CREATED) {
                st->consistent++; /* the order won: nothing to undo */
                return;
        }
        if (dec->rolled_back) {
                count_rollback(e, dec, st);
                return;
        }
        if (err == SK_ESTOP)
                return; /* the act loop reports the stop */
        if (dec->how == SK_DECIDED_FOLLOWED_FAILED && err == SK_EINVAL) {
                /* An unknown reason has unknown flags: a human decides. */
                SK_LOG(SK_ERROR, "unknown_failure_reason", "voucher=%" PRId64 " trace=%" PRId64
                       " reason=\"%s\"", e->msg.voucher_id, e->trace_id, dec->row.reason_str);
                st->inconsistent++;
                rc_note(st, "FAILED outcome with unknown reason %s", dec->row.reason_str);
                return;
        }
        SK_LOG(SK_ERROR, dec->how == SK_DECIDED_NONE ? "outcome_fail_failed" : "rollback_failed",
               "voucher=%" PRId64 " trace=%" PRId64 " reason=%s err=\"%s\"", e->msg.voucher_id,
               e->trace_id, sk_reason_str(dec->reason), errstr);
        st->errors++;
        rc_note(st, dec->how == SK_DECIDED_NONE ? "recording FAILED: %s" : "rollback failed: %s",
                errstr);
}

void rc_decide_failed(rc_ctx_t *ctx, sk_trace_entry_t *e, sk_reason_t reason,
                      const char *detail, rc_vstat_t *st)
{
        sk_decider_t d;
        sk_decision_t dec;
        char errstr[512] = "";
        sk_err_t err;

        decider_init(ctx, &d);
        err = sk_decide_failed(&d, &e->msg, reason, detail, &dec, errstr, sizeof(errstr));
        if (dec.how == SK_DECIDED_RECORDED) {
                SK_LOG(SK_INFO, "outcome_failed_recorded", "voucher=%" PRId64 " trace=%" PRId64
                       " reason=%s", e->msg.voucher_id, e->trace_id, sk_reason_str(reason));
                if (reason == SK_REASON_FRONT_ROLLBACK)
                        st->fenced++;
                else if (reason == SK_REASON_LOST)
                        st->lost++;
        }
        if (dec.how == SK_DECIDED_NONE)
                dec.reason = reason;
        count_decision(e, &dec, err, errstr, st);
}

/* A FAILED outcome without its fence: rollback.lua with the stored reason's flags. */
static void follow_failed(rc_ctx_t *ctx, sk_trace_entry_t *e, rc_vstat_t *st)
{
        sk_decider_t d;
        sk_decision_t dec;
        char errstr[512] = "";
        sk_err_t err;

        decider_init(ctx, &d);
        err = sk_decide_follow(&d, &e->msg, &e->oc, &dec, errstr, sizeof(errstr));
        count_decision(e, &dec, err, errstr, st);
}

/* Mark the DEDUCT reconcile-log rows of @p ids with @p status (SK_RECON_CONSISTENT or
 * SK_RECON_INCONSISTENT). */
static void mark_log(rc_ctx_t *ctx, const sk_i64vec_t *ids, sk_recon_status_t status,
                     rc_vstat_t *st)
{
        char errstr[512];
        int64_t affected = 0;
        sk_err_t err;

        if (!ids->n || rc_must_stop(ctx))
                return;
        err = sk_traceset_exec_in(ctx->db, status == SK_RECON_CONSISTENT
                        ? "UPDATE tb_voucher_reconcile_log SET reconciliation_status = "
                          SK_SQL_RECON_CONSISTENT
                          " WHERE log_type = " SK_SQL_LOG_DEDUCT " AND reconciliation_status <> "
                          SK_SQL_RECON_CONSISTENT " AND trace_id IN "
                        : "UPDATE tb_voucher_reconcile_log SET reconciliation_status = "
                          SK_SQL_RECON_INCONSISTENT
                          " WHERE log_type = " SK_SQL_LOG_DEDUCT " AND reconciliation_status <> "
                          SK_SQL_RECON_INCONSISTENT " AND trace_id IN ",
                        ids->v, ids->n, &affected, errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                rc_note(st, "reconcile-log update failed: %s", errstr);
                return;
        }
        if (status == SK_RECON_CONSISTENT)
                st->log_marked += affected;
}

sk_err_t rc_act(rc_ctx_t *ctx, rc_plan_t *plan, rc_vstat_t *st)
{
        size_t i;

        for (i = 0; i < plan->nact; i += BATCH_TRACES) {
                size_t m = plan->nact - i < BATCH_TRACES ? plan->nact - i : BATCH_TRACES, j, k = 0;
                sk_trace_entry_t **batch = plan->act + i;

                if (rc_must_stop(ctx))
                        return SK_ESTOP;
                for (j = 0; j < m && !rc_must_stop(ctx); j++) {
                        sk_trace_entry_t *e = batch[j];
                        if (e->outcome == SK_OUTCOME_FAILED)
                                follow_failed(ctx, e, st);
                        else if (e->restore)
                                rc_decide_failed(ctx, e, SK_REASON_FRONT_ROLLBACK,
                                                 "fenced by the front", st);
                        else
                                batch[k++] = e; /* compact the undecided ones in place */
                }
                if (rc_must_stop(ctx))
                        return SK_ESTOP;
                if (k)
                        rc_redrive_undecided(ctx, batch, k, st);
        }
        mark_log(ctx, &plan->ok4, SK_RECON_CONSISTENT, st);
        mark_log(ctx, &plan->bad3, SK_RECON_INCONSISTENT, st);
        return rc_must_stop(ctx) ? SK_ESTOP : SK_OK;
}
