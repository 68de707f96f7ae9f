/* rc_act.c: the reconciler's acts on traces that are decided or must be decided now
 * (rc_pass.h), in batches: a FAILED outcome without its T:r fence is followed, a DEDUCT
 * fenced by the front gets FAILED front_rollback (both rc_decide.c), the undecided ones go
 * to the re-drive machinery (rc_redrive.c). Then the DEDUCT reconcile-log rows are marked
 * 4 (consistent) or 3 (inconsistent).
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
                                rc_decide_follow(ctx, e, st);
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
