/* decide.c: the consumer's verdicts on one purchase (DESIGN.md 7, 8): record FAILED in
 * its own committed transaction and then run rollback.lua with the reason's flags;
 * follow an outcome someone else recorded (compare order, user and voucher ids first:
 * a mismatch is an id collision, DLQ + alert); DLQ a message the DB keeps refusing.
 *
 * sold_out clamps (DESIGN.md 4 rollback.lua, 8 sold_out row): after FAILED committed, a
 * second transaction reads the voucher's DB stock FOR SHARE (LOCK IN SHARE MODE),
 * rollback.lua runs with clamp-to that value, and the transaction ends only after
 * rollback.lua answered, so a concurrent restock cannot be clamped away. The read is
 * retried with backoff (transient errors until it succeeds or the worker stops); if
 * it never succeeds rollback.lua is NOT run (no `T:r` for a clamp that was not
 * applied): the FAILED outcome without a fence is the reconciler's.
 *
 * The consumer's only copy of "record FAILED, compare ids, follow CREATED or FAILED".
 * Not thread-safe (one worker's connections). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "sk/backoff.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/log.h"
#include "worker.h"

/* Non-transient failures of the clamp's stock read before the rollback is left to the
 * reconciler (transient ones are retried until the worker stops). */
#define CLAMP_READ_TRIES 8
/* rollback.lua attempts (it is idempotent per traceId). */
#define ROLLBACK_TRIES 5

sk_err_t cons_decide_transient(worker_t *w, const char *what, int64_t id, const char *errstr)
{
        sk_metric_add(w->m->db_transient, 1);
        SK_LOG(SK_WARN, "db_transient", "worker=%d %s=%" PRId64 " err=\"%s\"", w->idx, what, id,
               errstr);
        return SK_EAGAIN;
}

/* Open the clamp transaction and read the stock FOR SHARE into *clamp_to. Transient
 * errors are retried with backoff (partitions paused, still polling) until the read
 * succeeds or the worker stops; other errors CLAMP_READ_TRIES times. @returns SK_OK
 * (transaction open: end it with cons_apply_clamp_end) or the last error (no
 * transaction open). */
static sk_err_t clamp_read(worker_t *w, const cmsg_t *c, int64_t *clamp_to)
{
        char errstr[512] = "";
        sk_err_t err = SK_EAGAIN;
        int failures = 0;

        for (int attempt = 0;; attempt++) {
                if (attempt) {
                        if (cons_stopping())
                                break;
                        cons_flow_backoff(w, attempt - 1);
                        cons_worker_ensure_db(w);
                }
                err = cons_apply_clamp_begin(w->ap, c->msg.voucher_id, clamp_to, errstr, sizeof(errstr));
                if (err == SK_OK)
                        return SK_OK;
                SK_LOG(SK_WARN, "clamp_read_failed", "worker=%d voucher=%" PRId64 " attempt=%d err=%s "
                       "reason=\"%s\"", w->idx, c->msg.voucher_id, attempt, sk_err2str(err), errstr);
                if (err == SK_EAGAIN) {
                        sk_metric_add(w->m->db_transient, 1);
                        continue;
                }
                sk_metric_add(w->m->db_errors, 1);
                if (++failures >= CLAMP_READ_TRIES)
                        break;
        }
        return err;
}

/* rollback.lua with @p clamp_to (-1: none), a few attempts with backoff. */
static sk_err_t rollback_lua(worker_t *w, const cmsg_t *c, sk_reason_t reason, int64_t clamp_to,
                             char *errstr, size_t errstr_size)
{
        sk_rollback_res_t res;
        sk_err_t err = SK_EREDIS;

        for (int attempt = 0; attempt < ROLLBACK_TRIES; attempt++) {
                sk_redis_t *r;

                if (attempt)
                        sk_sleep_ms(sk_backoff_ms(attempt, 50, 1000, &w->rng), NULL);
                if (g_stop >= 2)
                        break;
                if (SK_FAILPOINT("consumer.before_rollback")) {
                        err = SK_EFAIL;
                        sk_seterr(errstr, errstr_size, "failpoint consumer.before_rollback");
                        continue;
                }
                if (!(r = cons_worker_redis(w))) {
                        err = SK_EAGAIN;
                        continue;
                }
                memset(&res, 0, sizeof(res));
                err = sk_rollback_run(r, w->conf->redis_prefix, c->msg.voucher_id, c->msg.trace_id,
                                      c->msg.user_id, "consumer", reason, clamp_to,
                                      w->ctx->expire_extra_ms, &res, errstr, errstr_size);
                if (err == SK_OK) {
                        sk_metric_add(w->m->rolled_back[reason], 1);
                        SK_LOG(SK_INFO, "rolled_back", "worker=%d trace=%" PRId64 " voucher=%" PRId64
                               " reason=%s already=%d restored=%d released=%d clamped=%d clamp_to=%" PRId64,
                               w->idx, c->msg.trace_id, c->msg.voucher_id, sk_reason_str(reason),
                               res.already, res.restored, res.released, res.clamped, clamp_to);
                        return SK_OK;
                }
                cons_worker_redis_failed(w, err);
        }
        return err;
}

/* rollback.lua for a FAILED decision with @p reason (DESIGN.md 4, 8). If it still
 * fails, the FAILED outcome without a fence is what the reconciler retries. */
static void run_rollback(worker_t *w, cmsg_t *c, sk_reason_t reason)
{
        int restore = 0, release = 0, clamp = 0;
        int64_t clamp_to = -1;
        char errstr[512] = "";
        sk_err_t err;

        if (reason == SK_REASON_NONE) {
                SK_LOG(SK_WARN, "rollback_unknown_reason", "worker=%d trace=%" PRId64,
                       w->idx, c->msg.trace_id);
                return;
        }
        sk_reason_flags(reason, &restore, &release, &clamp);
        if (clamp && (err = clamp_read(w, c, &clamp_to)) != SK_OK) {
                sk_metric_add(w->m->rollback_errors, 1);
                SK_LOG(SK_ERROR, "rollback_failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64
                       " reason=%s err=%s note=\"clamp stock unread: no fence written, FAILED outcome"
                       " left for the reconciler\"", w->idx, c->msg.trace_id, c->msg.voucher_id,
                       sk_reason_str(reason), sk_err2str(err));
                return;
        }
        err = rollback_lua(w, c, reason, clamp_to, errstr, sizeof(errstr));
        if (clamp)
                cons_apply_clamp_end(w->ap);
        if (err == SK_OK)
                return;
        sk_metric_add(w->m->rollback_errors, 1);
        SK_LOG(SK_ERROR, "rollback_failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64
               " reason=%s err=%s detail=\"%s\" note=\"FAILED outcome left unfenced for the reconciler\"",
               w->idx, c->msg.trace_id, c->msg.voucher_id, sk_reason_str(reason),
               sk_err2str(err), errstr);
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

sk_err_t cons_decide_follow(worker_t *w, cmsg_t *c, const sk_outcome_t *o)
{
        if (!sk_outcome_matches(o, &c->msg)) {
                char what[256];
                snprintf(what, sizeof(what), "outcome of trace %" PRId64 " names order %" PRId64
                         " user %" PRId64 " voucher %" PRId64, o->trace_id, o->order_id,
                         o->user_id, o->voucher_id);
                return cons_decide_collision(w, c, what);
        }
        sk_metric_add(w->m->duplicates, 1);
        SK_LOG(SK_INFO, "duplicate", "worker=%d trace=%" PRId64 " outcome=%s reason=%s", w->idx,
               c->msg.trace_id, o->outcome == SK_OUTCOME_CREATED ? "CREATED" : "FAILED",
               o->reason_str[0] ? o->reason_str : "-");
        if (o->outcome == SK_OUTCOME_FAILED)
                run_rollback(w, c, o->reason);
        c->settled = 1;
        return SK_OK;
}

sk_err_t cons_decide_failed(worker_t *w, cmsg_t *c, sk_reason_t reason, const char *detail)
{
        sk_outcome_t existing;
        char errstr[512];
        sk_err_t err;

        memset(&existing, 0, sizeof(existing));
        err = sk_outcome_fail(w->db, &c->msg, reason, detail, &existing, errstr, sizeof(errstr));
        if (err == SK_EEXIST)
                return cons_decide_follow(w, c, &existing);
        if (err == SK_EAGAIN)
                return cons_decide_transient(w, "trace", c->msg.trace_id, errstr);
        if (err)
                return cons_decide_db_error(w, c, errstr);
        sk_metric_add(w->m->failed[reason], 1);
        SK_LOG(SK_INFO, "failed", "worker=%d trace=%" PRId64 " voucher=%" PRId64 " user=%" PRId64
               " reason=%s", w->idx, c->msg.trace_id, c->msg.voucher_id, c->msg.user_id,
               sk_reason_str(reason));
        run_rollback(w, c, reason);
        c->settled = 1;
        return SK_OK;
}
