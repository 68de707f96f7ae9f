/* reconcile.c: one reconciliation pass over one voucher (reconcile.h): the order of its
 * steps, each in its own file (rc_pass.h):
 *
 *   1. the voucher row; meta left at status 4 by a dead rebuild (rc_drift.c);
 *   2. the join of every bucket's trace hash with the DB (rc_classify.c); the repairs
 *      across buckets: probing, home step, stray takes (rc_bucket.c); the verdict per
 *      trace, bucket by bucket (rc_classify.c, which also lists the states of DESIGN.md 7);
 *   3. the acts, in batches: FAILED followed or recorded with rollback.lua (rc_act.c),
 *      the re-drive machinery for undecided traces (rc_redrive.c);
 *   4. drift and the expiry alert (rc_drift.c);
 *   5. the degrade switch (rc_degrade.c): a voucher on the DB-only path is skipped at
 *      step 1; one in state rebuilding gets its recovery rebuild retried at the end.
 *
 * Stopping: a stop signal or a lost run lock (its DB session died, e.g. killed) stops
 * the pass at once: rc_must_stop is consulted between steps and before every Redis,
 * Kafka or DB write, so a pass that lost its lock acts no more while a second
 * reconciler may already hold the lock (DESIGN.md 8: one pass at a time). Never inside
 * a DB transaction (every transaction of the pass is one sk/decide.h call).
 *
 * What it does not do: print (main.c, report.c), or retry a whole voucher (the next
 * pass will; cron runs it again). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rc_pass.h"
#include "rc_release.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/outcome.h"
#include "sk/dswitch.h"
#include "sk/rebuild.h"

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
        err = sk_db_rows(ctx->db,
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

/* ---- the voucher ---- */

sk_err_t rc_voucher(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st)
{
        sk_traceset_t sets[SK_BUCKETS_MAX];
        sk_voucher_row_t row;
        rc_plan_t plan;
        char errstr[512];
        int64_t now_ms, epoch = 0;
        sk_err_t err, ret = SK_OK;
        size_t undecided = 0;
        int nb, b, dstate;

        memset(st, 0, sizeof(*st));
        memset(&plan, 0, sizeof(plan));
        st->voucher_id = voucher_id;
        for (b = 0; b < SK_BUCKETS_MAX; b++)
                sk_traceset_init(&sets[b]);
        if (rc_must_stop(ctx))
                return SK_ESTOP;

        err = sk_voucher_get(ctx->db, voucher_id, 0, &row, errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                rc_note(st, err == SK_ENOTFOUND ? "%s" : "voucher read failed: %s",
                        err == SK_ENOTFOUND ? "voucher not in the database" : errstr);
                return SK_OK;
        }
        dstate = rc_degrade_state(ctx, voucher_id, &epoch);
        if (dstate == SK_DSW_DRAINING || dstate == SK_DSW_DB) {
                rc_note(st, "%s", "on the DB-only path (DESIGN.md 12): Redis left to the recovery");
                return SK_OK;
        }
        nb = st->nbuckets = rc_nbuckets(ctx, voucher_id, st);
        rc_meta_check(ctx, voucher_id, row.status, st);
        rc_release_pending(ctx, voucher_id, st); /* before the drift check (DESIGN.md 13) */
        /* Every bucket's trace hash first: the repairs across buckets need them all. */
        for (b = 0; b < nb; b++)
                if (rc_join(ctx, voucher_id, b, &sets[b], st) != SK_OK)
                        goto done;
        now_ms = sk_now_ms();
        rc_repair_buckets(ctx, voucher_id, sets, nb, now_ms, st);
        for (b = 0; b < nb; b++) {
                if (rc_classify(ctx, &sets[b], now_ms, &plan, st) != SK_OK)
                        goto done;
                ret = rc_act(ctx, &plan, st);
                undecided += plan.undecided_left;
                rc_plan_free(&plan);
                if (ret != SK_OK)
                        goto done;
        }
        rc_drift(ctx, voucher_id, sets, nb, row.end_ms, now_ms, st);
        if (rc_must_stop(ctx)) {
                ret = SK_ESTOP;
                goto done;
        }
        undecided += (size_t)(st->waiting + st->dlq + st->not_persisted + st->redriven);
        rc_expiry_check(ctx, voucher_id, undecided, st);
        if (dstate == SK_DSW_REBUILDING)
                rc_degrade_recover(ctx, voucher_id, epoch, st);
done:
        rc_plan_free(&plan);
        for (b = 0; b < SK_BUCKETS_MAX; b++)
                sk_traceset_free(&sets[b]);
        if (ret == SK_OK && ctx->lock_lost)
                ret = SK_ESTOP;
        return ret;
}

void rc_ctx_release(rc_ctx_t *ctx)
{
        rc_redrive_release(ctx);
}
