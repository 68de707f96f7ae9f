/* rc_classify.c: the join of the voucher's Redis trace hash with the database and the
 * verdict on each DEDUCT (rc_pass.h), by the states of DESIGN.md 7 (T = DEDUCT entry,
 * T:r = RESTORE fence, T:c = claim record):
 *
 *   T, CREATED, order row, ids match      consistent; DEDUCT reconcile-log row -> 4
 *   T, CREATED, ids or order row differ   inconsistent: log row -> 3, alert
 *   T + T:r, CREATED                      inconsistent (Redis undid a created order):
 *                                         log row -> 3, alert; --repair rebuilds Redis
 *   outcome ids differ from the DEDUCT    collision: alert, never a decision
 *   T, FAILED, T:r                        consistent
 *   T, FAILED, no T:r                     act: rollback.lua with the stored reason's flags
 *   T + T:r, no outcome                   act: the front fenced it, FAILED front_rollback
 *   T, no outcome, no T:r                 act: undecided, the re-drive machinery
 *   T:r or T:c without T                  no purchase ran: ignored
 *   a stray take (rc_bucket.c, skip)      restored there, not judged
 *
 * Judging uses the T entry's ts; entries younger than --grace-seconds are left alone.
 * What it does not do: write anything (rc_act.c and rc_redrive.c act on the plan). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rc_pass.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/model.h"

sk_err_t rc_join(rc_ctx_t *ctx, int64_t voucher_id, int bucket, sk_traceset_t *set,
                 rc_vstat_t *st)
{
        char errstr[512], k_trace[SK_KEY_MAX];
        sk_err_t err;

        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, bucket, SK_KEY_TRACE);
        if ((err = sk_traceset_scan(ctx->r, k_trace, 1000, set, errstr, sizeof(errstr))) != SK_OK ||
            (err = sk_traceset_load_db(ctx->db, set, 0, errstr, sizeof(errstr))) != SK_OK) {
                st->errors++;
                rc_note(st, "join failed: %s", errstr);
        }
        return err;
}

/* A CREATED outcome: consistent when its order row matches and Redis kept the
 * admission; inconsistent otherwise. */
static void judge_created(rc_plan_t *plan, sk_trace_entry_t *e, rc_vstat_t *st)
{
        int64_t vid = e->msg.voucher_id;

        if (e->restore) {
                SK_LOG(SK_ERROR, "created_but_restored", "voucher=%" PRId64 " trace=%" PRId64
                       " order=%" PRId64, vid, e->trace_id, e->oc.order_id);
                st->inconsistent++;
                st->created_restored++;
                rc_note(st, "%s", "CREATED order whose Redis admission was rolled back");
                (void)sk_i64vec_push(&plan->bad3, e->trace_id);
        } else if (!e->order_id || e->order_id != e->msg.order_id ||
                   e->order_user_id != e->msg.user_id || e->order_voucher_id != vid) {
                SK_LOG(SK_ERROR, "order_mismatch", "voucher=%" PRId64 " trace=%" PRId64
                       " order=%" PRId64 " row=%" PRId64, vid, e->trace_id, e->msg.order_id,
                       e->order_id);
                st->inconsistent++;
                rc_note(st, "%s", "CREATED outcome without a matching order row");
                (void)sk_i64vec_push(&plan->bad3, e->trace_id);
        } else {
                st->consistent++;
                if (e->log_status && e->log_status != SK_RECON_CONSISTENT)
                        (void)sk_i64vec_push(&plan->ok4, e->trace_id);
        }
}

/* One DEDUCT entry older than grace with a valid message. */
static void judge(rc_plan_t *plan, sk_trace_entry_t *e, rc_vstat_t *st)
{
        st->checked++;
        if (e->outcome && !sk_outcome_matches(&e->oc, &e->msg)) {
                SK_LOG(SK_ERROR, "outcome_collision", "voucher=%" PRId64 " trace=%" PRId64
                       " order=%" PRId64 " row_order=%" PRId64, e->msg.voucher_id, e->trace_id,
                       e->msg.order_id, e->oc.order_id);
                st->collisions++;
                rc_note(st, "%s", "outcome id collision");
                if (e->outcome == SK_OUTCOME_CREATED)
                        (void)sk_i64vec_push(&plan->bad3, e->trace_id);
                return;
        }
        if (e->outcome == SK_OUTCOME_CREATED)
                judge_created(plan, e, st);
        else if (e->outcome == SK_OUTCOME_FAILED && e->restore)
                st->consistent++;
        else
                plan->act[plan->nact++] = e; /* rollback pending, fenced, or undecided */
}

sk_err_t rc_classify(rc_ctx_t *ctx, sk_traceset_t *set, int64_t now_ms, rc_plan_t *plan,
                     rc_vstat_t *st)
{
        int64_t grace_ms = (int64_t)ctx->opts.grace_s * 1000;
        size_t i;

        memset(plan, 0, sizeof(*plan));
        if (set->n && !(plan->act = calloc(set->n, sizeof(*plan->act)))) {
                st->errors++;
                rc_note(st, "%s", "out of memory");
                return SK_ENOMEM;
        }
        for (i = 0; i < set->n; i++) {
                sk_trace_entry_t *e = &set->v[i];

                if (!e->deduct || e->skip)
                        continue; /* T:r or T:c without T: no purchase ran; a stray take */
                st->entries++;
                if (!e->msg_ok) {
                        SK_LOG(SK_ERROR, "bad_trace_entry", "voucher=%" PRId64 " trace=%" PRId64,
                               st->voucher_id, e->trace_id);
                        st->checked++;
                        st->inconsistent++;
                        rc_note(st, "%s", "DEDUCT entry is not a valid message");
                        continue;
                }
                if (now_ms - e->msg.ts_ms < grace_ms) {
                        st->young++;
                        if (!e->outcome && !e->restore)
                                plan->undecided_left++;
                        continue;
                }
                judge(plan, e, st);
        }
        return SK_OK;
}

void rc_plan_free(rc_plan_t *plan)
{
        free(plan->act);
        free(plan->ok4.v);
        free(plan->bad3.v);
        memset(plan, 0, sizeof(*plan));
}
