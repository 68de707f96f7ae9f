/* rc_release.c: releases left undone (rc_release.h, DESIGN.md 13 "Crash between the DB
 * commit and the Redis release"). Per voucher: the ended orders from the DB, the pending-
 * release check (sk_release_pending: their `T:x` fields in the trace hash of each order's
 * bucket), release.lua (by "reconciler") for each one missing.
 * What it does not do: change the DB (the release there is already committed) or judge
 * anything else about the trace (reconcile.c does). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/order.h"
#include "sk/outcome.h"
#include "rc_release.h"

#define RELEASE_CHUNK 200

static void rl_note(rc_vstat_t *st, const char *what)
{
        st->errors++;
        if (!st->note[0])
                snprintf(st->note, sizeof(st->note), "%.200s", what);
}

/* 1 if the voucher's stock key exists (its keys have not expired), 0 if not, -1 error. */
static int keys_exist(rc_ctx_t *ctx, int64_t voucher_id)
{
        char k[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int rc;

        sk_key_voucher(k, ctx->conf->redis_prefix, voucher_id, 0, SK_KEY_STOCK);
        if (sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr), "EXISTS %s", k) != SK_OK)
                return -1;
        rc = reply->type == REDIS_REPLY_INTEGER ? reply->integer == 1 : -1;
        freeReplyObject(reply);
        return rc;
}

/* release.lua for the orders of @p o[0..n) whose T:x is missing. */
static void release_chunk(rc_ctx_t *ctx, const char *k_trace, const sk_order_row_t *o,
                          size_t n, rc_vstat_t *st)
{
        int64_t ids[RELEASE_CHUNK];
        unsigned char pending[RELEASE_CHUNK];
        char errstr[256];
        size_t i;

        for (i = 0; i < n; i++)
                ids[i] = o[i].trace_id;
        if (sk_release_pending(ctx->r, k_trace, ids, n, pending, errstr, sizeof(errstr)) != SK_OK) {
                rl_note(st, "release check failed (HMGET)");
                return;
        }
        for (i = 0; i < n; i++) {
                sk_release_res_t res;
                sk_err_t err;

                if (!pending[i])
                        continue; /* released already */
                err = sk_release_run(ctx->r, ctx->conf->redis_prefix, &o[i], "reconciler",
                                     sk_expire_extra_ms(ctx->conf->reconcile_window_hours), &res,
                                     errstr, sizeof(errstr));
                if (err != SK_OK) {
                        SK_LOG(SK_ERROR, "release_failed", "voucher=%" PRId64 " order=%" PRId64
                               " trace=%" PRId64 " err=\"%s\"", o[i].voucher_id, o[i].order_id,
                               o[i].trace_id, errstr);
                        rl_note(st, "release.lua failed");
                        continue;
                }
                st->released++;
                SK_LOG(SK_INFO, "release_finished", "voucher=%" PRId64 " order=%" PRId64
                       " trace=%" PRId64 " status=%s already=%d restored=%d released_user=%d",
                       o[i].voucher_id, o[i].order_id, o[i].trace_id,
                       sk_order_status_str(o[i].status), res.already, res.restored, res.released);
        }
}

void rc_release_pending(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st)
{
        sk_order_row_t *rows = NULL;
        char errstr[256], k_trace[SK_KEY_MAX];
        size_t n = 0, i;
        int exist;

        if (sk_order_list_ended(ctx->db, voucher_id, &rows, &n, errstr, sizeof(errstr)) != SK_OK) {
                rl_note(st, "ended orders read failed");
                return;
        }
        if (n == 0)
                return;
        exist = keys_exist(ctx, voucher_id);
        if (exist < 0) {
                rl_note(st, "release check failed (EXISTS)");
        } else if (exist == 0) {
                SK_LOG(SK_INFO, "release_db_only", "voucher=%" PRId64 " ended_orders=%zu"
                       " (the voucher's keys are gone: the DB release stands alone)", voucher_id, n);
        } else {
                /* T:x lives in the trace hash of the order's bucket j (release.c): one
                 * HMGET per bucket, on that bucket's orders gathered in front of the array. */
                int b, maxb = 0;
                size_t m, j;

                for (i = 0; i < n; i++)
                        maxb = rows[i].bucket > maxb ? rows[i].bucket : maxb;
                for (b = 0, j = 0; b <= maxb; b++, j += m) {
                        for (i = j, m = 0; i < n; i++) {
                                if (rows[i].bucket != b)
                                        continue;
                                sk_order_row_t t = rows[j + m];
                                rows[j + m++] = rows[i];
                                rows[i] = t;
                        }
                        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, b, SK_KEY_TRACE);
                        for (i = 0; i < m; i += RELEASE_CHUNK)
                                release_chunk(ctx, k_trace, rows + j + i,
                                              m - i < RELEASE_CHUNK ? m - i : RELEASE_CHUNK, st);
                }
        }
        free(rows);
}
