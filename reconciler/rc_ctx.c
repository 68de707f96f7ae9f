/* rc_ctx.c: what every step of a pass shares (rc_ctx.h): the first problem
 * of a voucher kept for the table, the stop check before every write (a stop signal or a
 * lost run lock, DESIGN.md 8: one pass at a time), the key-expiry extra of DESIGN.md 4,
 * and the exit code a voucher's figures imply. The bottom of the reconciler: it calls no
 * other file of this folder. */
#include <stdio.h>
#include <string.h>

#include "rc_ctx.h"
#include "sk/log.h"
#include "sk/outcome.h"

void rc_note(rc_vstat_t *st, const char *fmt, const char *what)
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

int rc_must_stop(rc_ctx_t *ctx)
{
        if (ctx->lock_lost)
                return 1;
        if (ctx->stop && *ctx->stop)
                return 1;
        if (ctx->lock_ok && !ctx->lock_ok(ctx->lock_arg)) {
                ctx->lock_lost = 1;
                SK_LOG(SK_ERROR, "lock_lost_stopping", "note=\"the run lock's tb_lock row no longer names"
                       " this run: this pass stops without acting further\"");
                return 1;
        }
        return 0;
}

int64_t rc_expire_extra_ms(const rc_ctx_t *ctx)
{
        return sk_expire_extra_ms(ctx->conf->reconcile_window_hours);
}

int64_t rc_request_deadline_ms(const sk_conf_t *conf)
{
        return 2 * (int64_t)conf->kafka_delivery_timeout_ms + 1000;
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
            st->failed_counted || st->released || st->probing_settled ||
            st->probing_rolled_back || st->stray_restored || st->home_steps)
                return 1;
        return 0;
}
