/* claimer.c: claim.lua `consume` before the order transaction (DESIGN.md 7: so a later
 * front fence answers CLAIMED; RESTORED means the front fenced first). The call and
 * reply parsing are sk/claim.h's; this file decides when to call and on which
 * connection. Prefetch: while one voucher group's DB transaction runs, the claim of the
 * NEXT group is already in flight on a second Redis connection (Redis and MariaDB work
 * in parallel), on the master of the voucher's slot; its reply is read when that
 * group starts (a MOVED/ASK reply counts as a failed prefetch). A prefetch that fails only
 * leaves its members unclaimed: the synchronous path claims them again (consume is
 * idempotent). Owns cons_claimer_t. Not thread-safe (one per worker). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "sk/claim.h"
#include "sk/dswitch.h"
#include "sk/log.h"
#include "sk/redis_error.h"
#include "worker.h"

int cons_claimer_init(worker_t *w)
{
        cons_claimer_t *cl = &w->claimer;
        size_t n = (size_t)w->opts->batch_max;

        cl->pf_which = calloc(n, sizeof(*cl->pf_which));
        cl->ids = calloc(n, sizeof(*cl->ids));
        cl->fenced = calloc(n, sizeof(*cl->fenced));
        return cl->pf_which && cl->ids && cl->fenced ? 0 : -1;
}

void cons_claimer_close(worker_t *w)
{
        cons_claimer_t *cl = &w->claimer;

        sk_redis_close(cl->r);
        cl->r = NULL;
        free(cl->pf_which);
        free(cl->ids);
        free(cl->fenced);
}

/* Collect the traceIds of the members of @p g that still need a claim into the
 * scratch, their indexes into @p which. @returns how many. */
static int unclaimed(worker_t *w, cmsg_t **g, int n, int *which)
{
        int cnt = 0;

        for (int i = 0; i < n; i++) {
                if (g[i]->settled || g[i]->claimed || g[i]->dup_of)
                        continue;
                w->claimer.ids[cnt] = g[i]->msg.trace_id;
                which[cnt++] = i;
        }
        return cnt;
}

static void mark(cmsg_t **g, const int *which, const int *fenced, int cnt)
{
        for (int i = 0; i < cnt; i++) {
                g[which[i]]->claimed = 1;
                g[which[i]]->fenced = fenced[i];
        }
}

int cons_voucher_degraded(worker_t *w, int64_t voucher_id)
{
        char errstr[256];
        sk_dsw_row_t row;

        if (!w->db || sk_dsw_get(w->db, voucher_id, 0, &row, errstr, sizeof(errstr)) != SK_OK)
                return 0;
        return row.state == SK_DSW_DRAINING || row.state == SK_DSW_DB;
}

/* The members of @p g that needed a claim go on unclaimed and unfenced (the outage
 * rule above). */
static void skip_claim(worker_t *w, cmsg_t **g, const int *which, int cnt)
{
        for (int i = 0; i < cnt; i++)
                w->claimer.fenced[i] = 0;
        mark(g, which, w->claimer.fenced, cnt);
        SK_LOG(SK_WARN, "claim_skipped_degraded", "worker=%d voucher=%" PRId64 " n=%d",
               w->idx, g[0]->msg.voucher_id, cnt);
}

/* One synchronous claim.lua consume call for up to SK_CLAIM_CHUNK members. */
static sk_err_t claim_chunk(worker_t *w, cmsg_t **g, int n)
{
        char errstr[512] = "";
        int *which = malloc(sizeof(*which) * (size_t)(n ? n : 1));
        int cnt;
        sk_claim_call_t call;
        redisReply *reply = NULL;
        sk_redis_t *r;
        sk_err_t err;

        if (!which)
                return SK_EAGAIN;
        if (!(cnt = unclaimed(w, g, n, which))) {
                free(which);
                return SK_OK;
        }
        if (!(r = cons_worker_redis(w))) {
                err = cons_voucher_degraded(w, g[0]->msg.voucher_id) ? SK_OK : SK_EAGAIN;
                if (err == SK_OK)
                        skip_claim(w, g, which, cnt);
                free(which);
                return err;
        }
        err = sk_claim_consume_init(&call, w->conf->redis_prefix, g[0]->msg.voucher_id, g[0]->msg.bucket,
                                    w->ctx->expire_extra_ms, w->claimer.ids, cnt, errstr, sizeof(errstr));
        if (err == SK_OK && (err = sk_claim_run(r, &call, &reply, errstr, sizeof(errstr))) != SK_OK)
                cons_worker_redis_failed(w, err);
        if (err == SK_OK)
                err = sk_claim_parse_consume(reply, cnt, w->claimer.fenced, errstr, sizeof(errstr));
        if (err == SK_OK) {
                mark(g, which, w->claimer.fenced, cnt);
        } else if (err != SK_EINVAL && cons_voucher_degraded(w, g[0]->msg.voucher_id)) {
                skip_claim(w, g, which, cnt);
                err = SK_OK;
        } else
                SK_LOG(err == SK_EINVAL ? SK_ERROR : SK_WARN, "claim_failed",
                       "worker=%d voucher=%" PRId64 " n=%d err=%s reason=\"%s\"",
                       w->idx, g[0]->msg.voucher_id, cnt, sk_err2str(err), errstr);
        if (reply)
                freeReplyObject(reply);
        sk_claim_call_free(&call);
        free(which);
        return err == SK_OK ? SK_OK : SK_EAGAIN;
}

/* Send the claim of @p g on the prefetch connection without waiting. Best effort: on
 * any problem nothing is in flight. */
static void prefetch_send(worker_t *w, cmsg_t **g, int n)
{
        cons_claimer_t *cl = &w->claimer;
        char errstr[256];
        sk_claim_call_t call;
        redisContext *ctx;
        int cnt;

        if (cl->pf_g || n > SK_CLAIM_CHUNK || !(cnt = unclaimed(w, g, n, cl->pf_which)))
                return;
        if (!cl->r && !(cl->r = sk_redis_connect(&w->conf->redis, 2000, errstr, sizeof(errstr))))
                return;
        if (sk_claim_consume_init(&call, w->conf->redis_prefix, g[0]->msg.voucher_id, g[0]->msg.bucket,
                                  w->ctx->expire_extra_ms, cl->ids, cnt, errstr, sizeof(errstr)) != SK_OK)
                return;
        /* The master of the voucher's slot (a Cluster routes by the key's hash tag). */
        ctx = sk_redis_ctx_key(cl->r, call.k_meta);
        if ((!ctx || ctx->err) && (sk_redis_reconnect(cl->r, errstr, sizeof(errstr)) != SK_OK ||
                                   !(ctx = sk_redis_ctx_key(cl->r, call.k_meta)))) {
                sk_claim_call_free(&call);
                return;
        }
        if (sk_claim_append(ctx, &call, errstr, sizeof(errstr)) == SK_OK) {
                cl->pf_g = g;
                cl->pf_cnt = cnt;
                cl->pf_ctx = ctx;
        }
        sk_claim_call_free(&call);
}

/* Read the in-flight claim reply (if any) and mark its members claimed/fenced. */
static void prefetch_recv(worker_t *w)
{
        cons_claimer_t *cl = &w->claimer;
        redisContext *ctx = cl->r ? cl->pf_ctx : NULL;
        redisReply *reply = NULL;
        char errstr[256];
        cmsg_t **g = cl->pf_g;

        if (!g)
                return;
        cl->pf_g = NULL;
        cl->pf_ctx = NULL;
        if (!ctx || redisGetReply(ctx, (void **)&reply) != REDIS_OK || !reply) {
                SK_LOG(SK_WARN, "claim_prefetch_failed", "worker=%d err=\"%s\"", w->idx,
                       ctx ? ctx->errstr : "no connection");
                sk_metric_add(w->m->redis_errors, 1);
                return; /* ctx->err is set: the next send reconnects */
        }
        if (sk_claim_parse_consume(reply, cl->pf_cnt, cl->fenced, errstr, sizeof(errstr)) == SK_OK)
                mark(g, cl->pf_which, cl->fenced, cl->pf_cnt);
        else {
                SK_LOG(SK_DEBUG, "claim_prefetch_error", "worker=%d reply=\"%s\"", w->idx, errstr);
                /* MOVED/ASK (the slot moved) or READONLY (a demoted master): learn the
                 * topology again before the next prefetch (best effort). */
                if (sk_redis_reply_is(reply, "MOVED") || sk_redis_reply_is(reply, "ASK") ||
                    sk_redis_reply_is(reply, "READONLY"))
                        (void)sk_redis_reconnect(cl->r, errstr, sizeof(errstr));
        }
        freeReplyObject(reply);
}

void cons_claim_set_next(worker_t *w, cmsg_t **g, int n)
{
        w->claimer.next_g = g;
        w->claimer.next_n = n;
}

sk_err_t cons_claim_group(worker_t *w, cmsg_t **g, int n)
{
        prefetch_recv(w); /* this group's claim, sent while the previous one ran */
        for (int i = 0; i < n; i += SK_CLAIM_CHUNK) {
                sk_err_t err = claim_chunk(w, g + i, n - i < SK_CLAIM_CHUNK ? n - i : SK_CLAIM_CHUNK);
                if (err)
                        return err;
        }
        if (w->claimer.next_g) {
                prefetch_send(w, w->claimer.next_g, w->claimer.next_n);
                w->claimer.next_g = NULL; /* once per group, not per retry */
        }
        return SK_OK;
}

void cons_claim_drain(worker_t *w)
{
        w->claimer.next_g = NULL;
        prefetch_recv(w);
}
