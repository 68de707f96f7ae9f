/* rc_decide.c: the reconciler's decisions on one trace (rc_pass.h), all through
 * sk/decide.h (DESIGN.md 7): FAILED recorded then rollback.lua, or an existing decision
 * followed (a FAILED outcome without its T:r fence: rollback.lua with the stored reason's
 * flags; a CREATED one: nothing to undo), a duplicate key followed after comparing ids,
 * the sold_out clamp as DESIGN.md 4 and 8 say; and what each did counted into the
 * voucher's figures. The decider's proceed hook checks the stop flag and the run lock
 * before every write. Used by rc_act.c and rc_redrive.c. */
#include <inttypes.h>
#include <string.h>

#include "rc_pass.h"
#include "sk/decide.h"
#include "sk/log.h"

#define DECIDE_ATTEMPTS 3   /* stock reads and rollback.lua runs per decision */

static int decider_proceed(void *arg)
{
        return !rc_must_stop(arg);
}

/* DESIGN.md 16 (d): the clamp's COMMIT failed after rollback.lua clamped Redis; the
 * drift mark (written by sk/decide.h) is read by this pass's drift step or the next. */
static void decider_clamp_lost(void *arg, const sk_order_msg_t *msg, int marked, const char *why)
{
        (void)arg;
        SK_LOG(marked ? SK_WARN : SK_ERROR, "clamp_commit_failed", "trace=%" PRId64 " voucher=%"
               PRId64 " bucket=%d drift_mark=%d reason=\"%s\"", msg->trace_id, msg->voucher_id,
               msg->bucket, marked, why);
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
        d->clamp_lost = decider_clamp_lost;
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

void rc_decide_follow(rc_ctx_t *ctx, sk_trace_entry_t *e, rc_vstat_t *st)
{
        sk_decider_t d;
        sk_decision_t dec;
        char errstr[512] = "";
        sk_err_t err;

        decider_init(ctx, &d);
        err = sk_decide_follow(&d, &e->msg, &e->oc, &dec, errstr, sizeof(errstr));
        count_decision(e, &dec, err, errstr, st);
}
