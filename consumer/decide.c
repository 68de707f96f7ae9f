/* decide.c: the consumer's verdicts on one purchase (DESIGN.md 7, 8): record FAILED in
 * its own committed transaction and then run rollback.lua with the reason's flags;
 * follow an outcome someone else recorded (compare order, user and voucher ids first:
 * a mismatch is an id collision, DLQ + alert); DLQ a message the DB keeps refusing.
 *
 * The decision itself and the sold_out clamp (DESIGN.md 4 rollback.lua, 8 sold_out
 * row: FAILED committed, bucket j's row bumped (version + 1) and its stock read in a
 * second transaction (DESIGN.md 16 (3)), rollback.lua
 * clamp-to, the transaction ended after it answered; a read that keeps failing runs no
 * rollback.lua, so no `T:r` claims a clamp that was not applied) are sk/decide.h, shared
 * with the reconciler and the rebuild. This file gives it the worker's connections,
 * its backoff that keeps polling (partitions paused), its failpoints
 * (consumer.clamp_read, consumer.before_rollback), and turns its answers into metrics,
 * log lines and the worker's verdicts.
 * Not thread-safe (one worker's connections). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "sk/decide.h"
#include "sk/log.h"
#include "worker.h"

/* Attempts at the clamp's stock read and rollback.lua (idempotent per traceId) before
 * the FAILED outcome is left unfenced for the reconciler. */
#define DECIDE_ATTEMPTS 8

sk_err_t cons_decide_transient(worker_t *w, const char *what, int64_t id, const char *errstr)
{
        sk_metric_add(w->m->db_transient, 1);
        SK_LOG(SK_WARN, "db_transient", "worker=%d %s=%" PRId64 " err=\"%s\"", w->idx, what, id,
               errstr);
        return SK_EAGAIN;
}

static int decider_proceed(void *arg)
{
        (void)arg;
        return g_stop < 2;
}

static sk_redis_t *decider_redis(void *arg)
{
        return cons_worker_redis(arg);
}

static void decider_redis_failed(void *arg, sk_err_t err)
{
        cons_worker_redis_failed(arg, err);
}

/* A failed clamp read: counted, the connection checked (reconnected if it broke). */
static void decider_db_failed(void *arg, sk_err_t err)
{
        worker_t *w = arg;

        sk_metric_add(err == SK_EAGAIN ? w->m->db_transient : w->m->db_errors, 1);
        SK_LOG(SK_WARN, "clamp_read_failed", "worker=%d err=%s", w->idx, sk_err2str(err));
        cons_worker_ensure_db(w);
}

static void decider_backoff(void *arg, int attempt)
{
        cons_flow_backoff(arg, attempt - 1);
}

/* DESIGN.md 12, consumers during an outage: in state draining or db the rollbacks of
 * FAILED outcomes are left to the reconciler and the recovery rebuild after one failed
 * attempt, not retried with backoff (that slowed the drain). */
static int decider_give_up(void *arg, int64_t voucher_id)
{
        worker_t *w = arg;

        if (!cons_voucher_degraded(w, voucher_id))
                return 0;
        SK_LOG(SK_WARN, "rollback_left_degraded", "worker=%d voucher=%" PRId64, w->idx, voucher_id);
        return 1;
}

/* DESIGN.md 16 (d): the sold_out clamp's COMMIT failed after rollback.lua clamped Redis
 * (on Galera: a restock certified first on another node). The drift mark makes the
 * reconciler's next pass rebuild the bucket at once. */
static void decider_clamp_lost(void *arg, const sk_order_msg_t *msg, int marked, const char *why)
{
        worker_t *w = arg;

        SK_LOG(marked ? SK_WARN : SK_ERROR, "clamp_commit_failed", "worker=%d trace=%" PRId64
               " voucher=%" PRId64 " bucket=%d drift_mark=%d reason=\"%s\"", w->idx,
               msg->trace_id, msg->voucher_id, msg->bucket, marked, why);
}

static void decider_init(worker_t *w, sk_decider_t *d)
{
        memset(d, 0, sizeof(*d));
        d->db = w->db;
        d->prefix = w->conf->redis_prefix;
        d->mode = "consumer";
        d->expire_extra_ms = w->ctx->expire_extra_ms;
        d->attempts = DECIDE_ATTEMPTS;
        d->failpoint = "consumer.before_rollback";
        d->proceed = decider_proceed;
        d->redis_get = decider_redis;
        d->redis_failed = decider_redis_failed;
        d->db_failed = decider_db_failed;
        d->backoff = decider_backoff;
        d->give_up = decider_give_up;
        d->clamp_lost = decider_clamp_lost;
        d->arg = w;
}

/* What rollback.lua did for a FAILED decision (@p dec, @p err, @p errstr): metrics and
 * log. If it never ran, the FAILED outcome without a fence is the reconciler's. */
static sk_err_t settle(worker_t *w, cmsg_t *c, const sk_decision_t *dec, sk_err_t err,
                       const char *errstr)
{
        if (dec->rolled_back) {
                sk_metric_add(w->m->rolled_back[dec->reason], 1);
                SK_LOG(SK_INFO, "rolled_back", "worker=%d trace=%" PRId64 " voucher=%" PRId64
                       " reason=%s already=%d restored=%d released=%d clamped=%d clamp_to=%" PRId64,
                       w->idx, c->msg.trace_id, c->msg.voucher_id, sk_reason_str(dec->reason),
                       dec->res.already, dec->res.restored, dec->res.released, dec->res.clamped,
                       dec->clamp_to);
        } else if (dec->how != SK_DECIDED_FOLLOWED_CREATED && dec->reason == SK_REASON_NONE) {
                SK_LOG(SK_WARN, "rollback_unknown_reason", "worker=%d trace=%" PRId64,
                       w->idx, c->msg.trace_id);
        } else if (dec->how != SK_DECIDED_FOLLOWED_CREATED) {
                sk_metric_add(w->m->rollback_errors, 1);
                SK_LOG(SK_ERROR, "rollback_failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64
                       " reason=%s err=%s detail=\"%s\" note=\"FAILED outcome left unfenced for"
                       " the reconciler\"", w->idx, c->msg.trace_id, c->msg.voucher_id,
                       sk_reason_str(dec->reason), sk_err2str(err), errstr);
        }
        c->settled = 1;
        return SK_OK;
}

sk_err_t cons_decide_collision(worker_t *w, cmsg_t *c, const char *what)
{
        sk_metric_add(w->m->collisions, 1);
        SK_LOG(SK_ERROR, "id_collision", "worker=%d trace=%" PRId64 " order=%" PRId64 " user=%" PRId64
               " voucher=%" PRId64 " what=\"%s\"", w->idx, c->msg.trace_id, c->msg.order_id,
               c->msg.user_id, c->msg.voucher_id, what);
        return cons_dlq_send(w, c, "collision", what);
}

sk_err_t cons_decide_db_error(worker_t *w, cmsg_t *c, const char *errstr)
{
        sk_metric_add(w->m->db_errors, 1);
        c->db_errors++;
        SK_LOG(SK_WARN, "db_error", "worker=%d trace=%" PRId64 " attempt=%d err=\"%s\"", w->idx,
               c->msg.trace_id, c->db_errors, errstr);
        if (c->db_errors <= w->opts->max_db_retries)
                return SK_EDB;
        sk_metric_add(w->m->db_dlq, 1);
        return cons_dlq_send(w, c, "db_error", errstr);
}

/* Someone decided first (@p dec says what): the duplicate counted and logged. */
static void duplicate(worker_t *w, cmsg_t *c, const sk_decision_t *dec)
{
        sk_metric_add(w->m->duplicates, 1);
        SK_LOG(SK_INFO, "duplicate", "worker=%d trace=%" PRId64 " outcome=%s reason=%s", w->idx,
               c->msg.trace_id, dec->row.outcome == SK_OUTCOME_CREATED ? "CREATED" : "FAILED",
               dec->row.reason_str[0] ? dec->row.reason_str : "-");
}

sk_err_t cons_decide_follow(worker_t *w, cmsg_t *c, const sk_outcome_t *o)
{
        sk_decider_t d;
        sk_decision_t dec;
        char errstr[512] = "";
        sk_err_t err;

        decider_init(w, &d);
        err = sk_decide_follow(&d, &c->msg, o, &dec, errstr, sizeof(errstr));
        if (dec.how == SK_DECIDED_COLLISION)
                return cons_decide_collision(w, c, errstr);
        duplicate(w, c, &dec);
        return settle(w, c, &dec, err, errstr);
}

sk_err_t cons_decide_failed(worker_t *w, cmsg_t *c, sk_reason_t reason, const char *detail)
{
        sk_decider_t d;
        sk_decision_t dec;
        char errstr[512] = "";
        sk_err_t err;

        decider_init(w, &d);
        err = sk_decide_failed(&d, &c->msg, reason, detail, &dec, errstr, sizeof(errstr));
        switch (dec.how) {
        case SK_DECIDED_NONE:
                if (err == SK_ESTOP)
                        return SK_ESTOP;
                if (err == SK_EAGAIN)
                        return cons_decide_transient(w, "trace", c->msg.trace_id, errstr);
                return cons_decide_db_error(w, c, errstr);
        case SK_DECIDED_COLLISION:
                return cons_decide_collision(w, c, errstr);
        case SK_DECIDED_RECORDED:
                sk_metric_add(w->m->failed[reason], 1);
                SK_LOG(SK_INFO, "failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64 " user=%"
                       PRId64 " reason=%s", w->idx, c->msg.trace_id, c->msg.voucher_id,
                       c->msg.user_id, sk_reason_str(reason));
                break;
        default:
                duplicate(w, c, &dec);
                break;
        }
        return settle(w, c, &dec, err, errstr);
}
