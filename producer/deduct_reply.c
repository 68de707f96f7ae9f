/* producer/deduct_reply.c: the meaning of deduct.lua's replies for a purchase
 * (producer/deduct_reply.h). No state: it routes the request to its next stage
 * (publish.c, rollback.c, the lookup pool) or answers it. */
#include <stdlib.h>
#include <string.h>

#include "deduct_reply.h"
#include "lookup.h"
#include "metrics.h"
#include "nbuckets.h"
#include "probe.h"
#include "publish.h"
#include "rollback.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/redis_error.h"
#include "soldout.h"

fr_deduct_err_t fr_deduct_error_kind(const char *s, size_t len)
{
        /* Whole first words (sk/redis_error.h), so e.g. BUSYKEY is not BUSY. NOSCRIPT
         * first: it is one of the "did not run" words, but the front answers it apart. */
        if (sk_redis_error_is(s, len, "NOSCRIPT"))
                return FR_DEDUCT_ERR_NOSCRIPT;
        if (sk_redis_error_not_run(s, len))
                return FR_DEDUCT_ERR_NOT_RUN;
        if (len >= 10 && !memcmp(s, "ERR SKARG ", 10))
                return FR_DEDUCT_ERR_INVALID;
        return FR_DEDUCT_ERR_UNKNOWN;
}

static int reply_is(const redisReply *el, const char *s)
{
        return el && (el->type == REDIS_REPLY_STRING || el->type == REDIS_REPLY_STATUS) &&
               el->len == strlen(s) && !memcmp(el->str, s, el->len);
}

static void answer_reject(fr_req_t *req, long long code)
{
        int status;
        const char *msg;

        switch (code) {
        case SK_CODE_NOT_FOUND:
                /* meta missing: the DB decides 404 (unknown), 403/10003 (ended: its keys
                 * expired) or 503 (Redis lost data); that lookup runs on the lookup pool,
                 * never on a purchase thread. */
                req->lookup = FR_LOOKUP_VOUCHER;
                atomic_store(&req->nothing_taken, 1);
                fr_lookup_submit(req);
                return;
        case SK_CODE_PAUSED:
                fr_answer_503(req, "paused", NULL, "voucher paused");
                fr_req_done(req);
                return;
        case SK_CODE_NOT_STARTED: status = 403; msg = "not started"; break;
        case SK_CODE_ENDED: status = 403; msg = "ended"; break;
        case SK_CODE_OFFLINE: status = 403; msg = "offline"; break;
        case SK_CODE_EXPIRED: status = 403; msg = "expired"; break;
        case SK_CODE_SOLD_OUT:
                fr_soldout_note(req, req->home); /* DESIGN.md 4: the local sold-out cache */
                status = 409;
                msg = "sold out";
                break;
        case SK_CODE_ALREADY_PURCHASED: status = 409; msg = "already purchased"; break;
        default:
                SK_LOG(SK_ERROR, "deduct_unknown_reject", "trace_id=%s code=%lld", req->st, code);
                status = 500;
                msg = "unexpected reject";
                break;
        }
        fr_answer(req, status, fr_json_err((int)code, msg), 0);
        fr_req_done(req);
}

/* Admitted (the entry as the bare reply) or REPLAY (the stored one): keep the entry
 * (identical bytes on every produce) and publish. */
static int admitted(fr_req_t *req, const redisReply *el1)
{
        if (!el1 || el1->type != REDIS_REPLY_STRING || el1->len == 0)
                return -1;
        if (!req->msg) {
                if (!(req->msg = malloc(el1->len + 1)))
                        return -1;
                memcpy(req->msg, el1->str, el1->len);
                req->msg[el1->len] = '\0';
                req->msg_len = el1->len;
        }
        fr_publish(req);
        return 0;
}

/* DESIGN.md 4: the traceId is stored for another purchase (another userId or orderId):
 * an id collision. Nothing was written and nothing must be undone (a fence would roll
 * back the other buyer's purchase): 503 without a state, and an alert. */
static void collision(fr_req_t *req)
{
        sk_metric_add(fr_m.collision, 1);
        SK_LOG(SK_ERROR, "deduct_collision", "trace_id=%s order_id=%s user_id=%s voucher_id=%s "
               "reason=\"traceId already stored for another purchase\"", req->st, req->so, req->su,
               req->sv);
        atomic_store(&req->nothing_taken, 1);
        fr_answer_503(req, "collision", NULL, "try again later");
        fr_req_done(req);
}

/* An integer element 0..SK_BUCKETS_MAX of a reply (a bucket number or count). @returns it
 * or -1. */
static int el_small(const redisReply *reply, size_t i)
{
        const redisReply *el = i < reply->elements ? reply->element[i] : NULL;

        if (!el || el->type != REDIS_REPLY_INTEGER || el->integer < 0 || el->integer > SK_BUCKETS_MAX)
                return -1;
        return (int)el->integer;
}

/* DESIGN.md 4, overflow probing: OVERFLOW N h (home bucket h empty; users[U]=T and
 * T:h=probing written), PROBING N h (a repeat of T while it is probed) or SETTLED j N h
 * (bucket j admitted T: take.lua on j replays). The probe workers take it from here.
 * @returns 0, or -1 for a malformed reply. */
static int overflowed(fr_req_t *req, const redisReply *reply, int settled)
{
        int off = settled ? 2 : 1;
        int n = el_small(reply, off), h = el_small(reply, off + 1);
        int j = settled ? el_small(reply, 1) : -1;

        if (n < 2 || h < 0 || h >= n || h != req->home || (settled && (j < 0 || j >= n || j == h)))
                return -1;
        fr_nbuckets_learn(req->voucher_id, n);
        req->buckets = n;
        req->overflowed = 1;
        req->bucket = -1;       /* no stock taken yet (or, SETTLED, until the take replays) */
        req->settled = settled ? j : -1;
        if (!settled && reply_is(reply->element[0], "OVERFLOW"))
                fr_soldout_note(req, h);
        fr_probe_submit(req);
        return 0;
}

void fr_deduct_ran(fr_req_t *req, const redisReply *reply)
{
        const redisReply *el0, *el1;

        /* sk/scripts.h: the two answers of the hot path have no table around them,
         * the admission is the entry itself, a rejection its code. */
        if (reply->type == REDIS_REPLY_STRING) {
                if (admitted(req, reply) != 0)
                        goto bad;
                return;
        }
        if (reply->type == REDIS_REPLY_INTEGER) {
                answer_reject(req, reply->integer);
                return;
        }
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1)
                goto bad;
        el0 = reply->element[0];
        el1 = reply->elements > 1 ? reply->element[1] : NULL;
        if (reply_is(el0, "REPLAY")) {
                if (admitted(req, el1) != 0)
                        goto bad;
                return;
        }
        if (reply_is(el0, "OVERFLOW") || reply_is(el0, "PROBING") || reply_is(el0, "SETTLED")) {
                if (overflowed(req, reply, reply_is(el0, "SETTLED")) != 0)
                        goto bad;
                return;
        }
        if (reply_is(el0, "FENCED")) {
                fr_answer_503(req, "failed", "FAILED", "purchase failed, nothing taken");
                fr_req_done(req);
                return;
        }
        if (reply_is(el0, "COLLISION")) {
                collision(req);
                return;
        }
bad:
        SK_LOG(SK_ERROR, "deduct_bad_reply", "trace_id=%s type=%d", req->st, reply->type);
        /* The script ran but said something unexpected: fence it to be safe. */
        fr_rollback_submit(req);
}
