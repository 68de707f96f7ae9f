/* rc_degrade.c: the reconciler's part in the degrade switch (DESIGN.md 12): a voucher in
 * state draining or db is left alone this pass (no process writes Redis for it; the
 * recovery rebuild settles Redis); one in state rebuilding gets the normal pass (its
 * re-drives are what the rebuild waits for), then the rebuild is retried and, if it
 * succeeded, the conditional move rebuilding -> redis ("a failed rebuild is retried by
 * any front or reconciler pass"). */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "rc_pass.h"
#include "sk/dswitch.h"
#include "sk/log.h"
#include "sk/rebuild.h"

int rc_degrade_state(rc_ctx_t *ctx, int64_t voucher_id, int64_t *epoch)
{
        char errstr[256];
        sk_dsw_row_t row;

        if (sk_dsw_get(ctx->db, voucher_id, 0, &row, errstr, sizeof(errstr)) != SK_OK)
                return SK_DSW_REDIS; /* no row (a voucher from before ddl 0004) or unreadable */
        *epoch = row.epoch;
        return row.state;
}

void rc_degrade_recover(rc_ctx_t *ctx, int64_t voucher_id, int64_t epoch, rc_vstat_t *st)
{
        sk_rebuild_report_t rep;
        char errstr[512], who[96];
        int moved = 0;
        sk_err_t err;

        if (rc_must_stop(ctx))
                return;
        memset(&rep, 0, sizeof(rep));
        err = sk_rebuild_voucher(ctx->conf, voucher_id, 0, &rep, errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                rc_note(st, "degrade recovery rebuild: %s", errstr);
                return;
        }
        snprintf(who, sizeof(who), "reconciler pid %d", (int)getpid());
        if (sk_dsw_move(ctx->db, voucher_id, SK_DSW_REBUILDING, epoch, SK_DSW_REDIS, who, &moved,
                        errstr, sizeof(errstr)) != SK_OK) {
                st->errors++;
                rc_note(st, "degrade move: %s", errstr);
                return;
        }
        if (moved)
                SK_LOG(SK_INFO, "degrade_state", "voucher_id=%" PRId64 " from=rebuilding to=redis "
                       "epoch=%" PRId64 " why=rebuilt_by_reconciler", voucher_id, epoch + 1);
}
