/* group.c: settling one voucher group of a poll batch (DESIGN.md 7, 8).
 *
 * Order of work for a group (all messages of one voucher in this batch):
 *   1. duplicates inside the batch (a re-driven or re-delivered traceId) are marked
 *      with their first copy and settled with it (ids compared: a mismatch is an id
 *      collision, DLQ) — they never reach the multi-row insert;
 *   2. claim.lua consume (claimer.c); RESTORED -> FAILED front_rollback;
 *   3. one SELECT ... IN asks which traceIds already have an outcome: those are
 *      followed (DESIGN.md 7, ids compared) without a transaction of their own. This
 *      pre-check runs while decided traceIds are being seen: for --precheck-groups
 *      groups after one was last found. Otherwise step 4 runs at once and its outcome
 *      INSERT finds them (a duplicate key on the trace's primary key, the idempotency
 *      check itself): the transaction rolls back, the pre-check runs and the group is
 *      tried again, the pre-check on for the next groups. A backlog without duplicates
 *      so costs the database no read per order (docs/SCALING.md); a redelivery (a
 *      restart, a new assignment) costs one rolled-back INSERT, then pre-checks;
 *   4. ONE transaction for the rest (apply.c); only a real conflict (a row that
 *      appeared meanwhile, short stock, has_order, another error) falls back to one
 *      transaction per message, which sorts the cases out.
 * Transient errors pause the partitions, back off and retry the group from BEGIN.
 * DESIGN.md 16 "Errors": a transaction that failed with 1213 (deadlock, Galera
 * certification failure) is retried at half its size, down to 1 message; a COMMIT
 * whose outcome is unknown (any other error or a lost link at COMMIT) is resolved
 * before anything else is written: on a fresh session (wsrep_sync_wait = 1 on Galera)
 * the batch's outcome rows are read by traceId; rows found are that COMMIT (one
 * transaction: all or none) and their messages settle as applied, the rest run again
 * with the same keys.
 * No state of its own beyond the worker's scratch. Not thread-safe (one per worker). */
#include <inttypes.h>
#include <stdio.h>
#include "sk/clock.h"
#include "sk/db_outcome.h"
#include "sk/log.h"
#include "worker.h"

/* Still to be decided by this worker: not settled, not fenced, not a copy. */
static int is_candidate(const cmsg_t *c)
{
        return !c->settled && !c->fenced && !c->dup_of;
}

/* The candidates of @p g into w->msgs. @returns how many. */
static int gather(worker_t *w, cmsg_t **g, int n)
{
        int ncand = 0;

        for (int i = 0; i < n; i++)
                if (is_candidate(g[i]))
                        w->msgs[ncand++] = &g[i]->msg;
        return ncand;
}

/* Settle a copy with its first copy's result. */
static void settle_copies(worker_t *w, cmsg_t **g, int n)
{
        for (int i = 0; i < n; i++) {
                cmsg_t *c = g[i];
                if (c->settled || !c->dup_of || !c->dup_of->settled)
                        continue;
                c->settled = 1;
                c->claimed = 1;
                sk_metric_add(w->m->duplicates, 1);
                SK_LOG(SK_DEBUG, "duplicate_in_batch", "worker=%d trace=%" PRId64 " offset=%" PRId64,
                       w->idx, c->msg.trace_id, (int64_t)c->rkm->offset);
        }
}

/* Step 1: mark later copies of a traceId; a copy whose ids differ is a collision. */
static sk_err_t dedupe(worker_t *w, cmsg_t **g, int n)
{
        for (int i = 1; i < n; i++) {
                cmsg_t *c = g[i];
                if (c->settled || c->dup_of)
                        continue;
                for (int j = 0; j < i; j++) {
                        const sk_order_msg_t *a = &g[j]->msg, *b = &c->msg;
                        if (g[j]->dup_of || a->trace_id != b->trace_id)
                                continue;
                        if (a->order_id == b->order_id && a->user_id == b->user_id &&
                            a->voucher_id == b->voucher_id) {
                                c->dup_of = g[j];
                                break;
                        }
                        char what[160];
                        snprintf(what, sizeof(what), "trace %" PRId64 " appears twice in the batch "
                                 "with orders %" PRId64 " and %" PRId64, b->trace_id, a->order_id,
                                 b->order_id);
                        if (cons_decide_collision(w, c, what) == SK_ESTOP)
                                return SK_ESTOP;
                        break;
                }
        }
        return SK_OK;
}

/* A known row @p o that is our own CREATED (ids equal): read while resolving an unknown
 * COMMIT, it is that COMMIT's. */
static int own_created(const cmsg_t *c, const sk_outcome_t *o)
{
        return o->outcome == SK_OUTCOME_CREATED && o->order_id == c->msg.order_id &&
               o->user_id == c->msg.user_id && o->voucher_id == c->msg.voucher_id;
}

/* Step 3: follow the candidates that already have an outcome. @p resolving: the reads
 * resolve this worker's unknown COMMIT (DESIGN.md 16): our own CREATED rows settle as
 * applied. *@p found (may be NULL): how many outcome rows were found.
 * @returns SK_OK, SK_EAGAIN or SK_ESTOP. */
static sk_err_t follow_known(worker_t *w, cmsg_t **g, int n, int resolving, int *found)
{
        char errstr[512] = "";
        int ncand = gather(w, g, n), nknown = 0;
        sk_err_t err;

        if (found)
                *found = 0;
        if (!ncand)
                return SK_OK;
        err = cons_apply_known(w->ap, w->msgs, ncand, w->known, &nknown, errstr, sizeof(errstr));
        if (err == SK_EAGAIN)
                return cons_decide_transient(w, "voucher", g[0]->msg.voucher_id, errstr);
        if (err) {
                /* Not fatal: the insert below finds them as duplicates instead. */
                SK_LOG(SK_WARN, "precheck_failed", "worker=%d voucher=%" PRId64 " err=\"%s\"",
                       w->idx, g[0]->msg.voucher_id, errstr);
                return SK_OK;
        }
        if (found)
                *found = nknown;
        for (int k = 0; k < nknown; k++) {
                for (int i = 0; i < n; i++) {
                        cmsg_t *c = g[i];
                        if (!is_candidate(c) || c->msg.trace_id != w->known[k].trace_id)
                                continue;
                        if (resolving && own_created(c, &w->known[k])) {
                                sk_metric_add(w->m->applied, 1);
                                c->settled = 1;
                                c->applied = 1;
                                break;
                        }
                        err = cons_decide_follow(w, c, &w->known[k]);
                        if (err == SK_ESTOP)
                                return err;
                        break;
                }
        }
        return SK_OK;
}

/* One message on its own (the fallback path). */
static sk_err_t apply_single(worker_t *w, cmsg_t *c)
{
        char errstr[512] = "";
        int64_t t0 = sk_mono_ms();
        cons_apply_res_t res = cons_apply_one(w->ap, &c->msg, errstr, sizeof(errstr));
        sk_outcome_t o;
        sk_err_t err;

        sk_metric_observe(w->m->txn_seconds, (double)(sk_mono_ms() - t0) / 1000.0);
        switch (res) {
        case APPLY_OK:
                sk_metric_observe(w->m->batch_size, 1);
                sk_metric_add(w->m->applied, 1);
                c->settled = 1;
                c->applied = 1;
                return SK_OK;
        case APPLY_DUP:
                err = sk_outcome_get(w->db, c->msg.trace_id, &o, errstr, sizeof(errstr));
                if (err == SK_OK)
                        return cons_decide_follow(w, c, &o);
                if (err == SK_EAGAIN || err == SK_ENOTFOUND)
                        return SK_EAGAIN;
                return cons_decide_db_error(w, c, errstr);
        case APPLY_NO_STOCK:
                return cons_decide_failed(w, c, SK_REASON_SOLD_OUT, errstr);
        case APPLY_HAS_ORDER:
                return cons_decide_failed(w, c, SK_REASON_HAS_ORDER, "user already has an active order");
        case APPLY_COLLISION:
                return cons_decide_collision(w, c, errstr);
        case APPLY_UNKNOWN:
                w->unresolved = 1; /* read the outcome row first, then maybe again */
                return cons_decide_transient(w, "trace", c->msg.trace_id, errstr);
        case APPLY_TRANSIENT:
                return cons_decide_transient(w, "trace", c->msg.trace_id, errstr);
        case APPLY_NO_VOUCHER:
        case APPLY_ERROR:
        default:
                return cons_decide_db_error(w, c, errstr);
        }
}

/* Step 4's fallback: one transaction per remaining message, so a bad message never
 * fails its neighbours and stock sells exactly to 0. */
static sk_err_t fallback(worker_t *w, cmsg_t **g, int n)
{
        for (int i = 0; i < n; i++) {
                sk_err_t err;
                if (!is_candidate(g[i]))
                        continue;
                err = apply_single(w, g[i]);
                if (err == SK_ESTOP)
                        return err;
                /* Transient (lock wait, lost link): the rest of this voucher would wait
                 * the same way; back off and retry the group. A non-transient error
                 * (SK_EDB) only holds back its message. */
                if (err == SK_EAGAIN || cons_stopping())
                        break;
        }
        return SK_OK;
}

/* Mark the first @p k candidates of @p g applied (the messages of w->msgs[0..k)). */
static void mark_applied(cmsg_t **g, int n, int k)
{
        for (int i = 0; i < n && k > 0; i++)
                if (is_candidate(g[i])) {
                        g[i]->settled = 1;
                        g[i]->applied = 1;
                        k--;
                }
}

/* One transaction for the first @p k candidates (w->msgs). @returns cons_apply_batch's
 * answer; a 1213 halves w->chunk (down to 1, DESIGN.md 16), an unknown COMMIT sets
 * w->unresolved. */
static sk_err_t apply_chunk(worker_t *w, int k, char *errstr, size_t errstr_size)
{
        int64_t t0 = sk_mono_ms();
        sk_err_t err = cons_apply_batch(w->ap, w->msgs, k, errstr, errstr_size);

        sk_metric_observe(w->m->txn_seconds, (double)(sk_mono_ms() - t0) / 1000.0);
        if (err == SK_EAGAIN && cons_apply_last_errno(w->ap) == 1213u && k > 1) {
                w->chunk = k / 2;
                SK_LOG(SK_INFO, "batch_halved", "worker=%d n=%d next=%d (deadlock or certification "
                       "failure)", w->idx, k, w->chunk);
        }
        if (err == SK_EUNKNOWN)
                w->unresolved = 1;
        return err;
}

/* Step 4: one transaction for the candidates (in chunks of w->chunk after a 1213).
 * @p unchecked: no pre-check ran for them; a chunk that meets an existing outcome row
 * then returns SK_EEXIST (rolled back, nothing decided) for the caller to pre-check and
 * call again, instead of falling back to one message at a time. */
static sk_err_t apply_rest(worker_t *w, cmsg_t **g, int n, int64_t t_claim, int unchecked)
{
        char errstr[512] = "";
        int ncand = gather(w, g, n), k, total = 0;
        int64_t t0 = sk_mono_ms();
        sk_err_t err = SK_OK;

        while (ncand > 0) {
                k = w->chunk > 0 && w->chunk < ncand ? w->chunk : ncand;
                if ((err = apply_chunk(w, k, errstr, sizeof(errstr))) != SK_OK)
                        break;
                sk_metric_observe(w->m->batch_size, k);
                sk_metric_add(w->m->applied, k);
                mark_applied(g, n, k);
                total += k;
                ncand = gather(w, g, n);
        }
        if (err == SK_EAGAIN || err == SK_EUNKNOWN)
                return cons_decide_transient(w, "voucher", g[0]->msg.voucher_id, errstr);
        if (err == SK_EEXIST && unchecked && cons_apply_outcome_exists(w->ap))
                return SK_EEXIST;
        if (err != SK_OK) {
                if (ncand > 1)
                        sk_metric_add(w->m->fallbacks, 1);
                SK_LOG(ncand > 1 ? SK_INFO : SK_DEBUG, "batch_fallback",
                       "worker=%d voucher=%" PRId64 " n=%d err=%s reason=\"%s\"", w->idx,
                       g[0]->msg.voucher_id, ncand, sk_err2str(err), errstr);
                return fallback(w, g, n);
        }
        if (total)
                SK_LOG(SK_DEBUG, "batch_applied", "worker=%d voucher=%" PRId64 " n=%d ms=%" PRId64
                       " claim_ms=%" PRId64, w->idx, g[0]->msg.voucher_id, total,
                       sk_mono_ms() - t0, t_claim);
        return SK_OK;
}

/* After an unknown COMMIT (w->unresolved): on a fresh session, wsrep_sync_wait = 1 on
 * Galera (sk/db_outcome.h), read the candidates' outcome rows before anything else is
 * written. @returns SK_OK (resolved: what is left runs again with the same keys),
 * SK_EAGAIN (could not read yet: still unresolved), SK_ESTOP. */
static sk_err_t resolve_unknown(worker_t *w, cmsg_t **g, int n)
{
        char errstr[512] = "";
        sk_err_t err;

        cons_apply_reset(w->ap);
        /* A COMMIT whose link was lost (a dead or frozen node): resolve on the next node. */
        if (!sk_db_connected(w->db))
                sk_db_prefer_next_node(w->db);
        if ((err = sk_db_resolve_begin(w->db, errstr, sizeof(errstr))) != SK_OK)
                return cons_decide_transient(w, "voucher", g[0]->msg.voucher_id, errstr);
        err = follow_known(w, g, n, 1, NULL);
        sk_db_resolve_end(w->db);
        if (err == SK_OK) {
                w->unresolved = 0;
                SK_LOG(SK_INFO, "commit_unknown_resolved", "worker=%d voucher=%" PRId64 " found=%d",
                       w->idx, g[0]->msg.voucher_id, gather(w, g, n) == 0);
        }
        return err;
}

/* Steps 3 and 4: the pre-check while duplicates are being seen (w->precheck_left),
 * then the transaction; without the pre-check, an outcome row met by the INSERT turns it
 * on and the group runs again after it. @returns apply_rest's answer (SK_ESTOP, or SK_OK
 * with whatever is left unsettled), or follow_known's error. */
static sk_err_t precheck_and_apply(worker_t *w, cmsg_t **g, int n, int64_t t_claim)
{
        int found = 0;
        sk_err_t err;

        if (w->precheck_left > 0) {
                if ((err = follow_known(w, g, n, 0, &found)) != SK_OK)
                        return err;
                w->precheck_left = found ? w->opts->precheck_groups : w->precheck_left - 1;
                return apply_rest(w, g, n, t_claim, 0);
        }
        if ((err = apply_rest(w, g, n, t_claim, 1)) != SK_EEXIST)
                return err;
        w->precheck_left = w->opts->precheck_groups;
        sk_metric_add(w->m->precheck_retries, 1);
        SK_LOG(SK_DEBUG, "precheck_on", "worker=%d voucher=%" PRId64 " (an outcome row already "
               "existed)", w->idx, g[0]->msg.voucher_id);
        if ((err = follow_known(w, g, n, 0, &found)) != SK_OK)
                return err;
        return apply_rest(w, g, n, t_claim, 0);
}

/* One attempt at settling group @p g. @returns SK_OK when every message is settled,
 * SK_EAGAIN to retry after a backoff, SK_ESTOP when stopping. */
static sk_err_t group_once(worker_t *w, cmsg_t **g, int n)
{
        int64_t t_claim = sk_mono_ms();
        int pending = 0;
        sk_err_t err;

        if (w->unresolved && (err = resolve_unknown(w, g, n)) != SK_OK)
                return err;

        if ((err = cons_claim_group(w, g, n)))
                return err;
        t_claim = sk_mono_ms() - t_claim;
        /* The front fenced these first: FAILED (front_rollback), no order. */
        for (int i = 0; i < n; i++) {
                if (g[i]->settled || !g[i]->fenced || g[i]->dup_of)
                        continue;
                err = cons_decide_failed(w, g[i], SK_REASON_FRONT_ROLLBACK,
                                         "fenced by the front before consume");
                if (err == SK_ESTOP || err == SK_EAGAIN)
                        return err; /* transient: the whole group again after a backoff */
        }
        if ((err = precheck_and_apply(w, g, n, t_claim)) == SK_ESTOP)
                return err;
        settle_copies(w, g, n);
        for (int i = 0; i < n; i++)
                if (!g[i]->settled)
                        pending++;
        return pending ? SK_EAGAIN : SK_OK;
}

void cons_group_settle(worker_t *w, cmsg_t **g, int n)
{
        int attempt = 0;

        if (dedupe(w, g, n) == SK_ESTOP)
                return;
        w->chunk = 0; /* the whole group per transaction until a 1213 halves it */
        w->unresolved = 0;
        for (;;) {
                sk_err_t err = group_once(w, g, n);
                if (err == SK_OK || err == SK_ESTOP || cons_stopping())
                        return;
                /* Transient: keep polling with the partitions paused, back off, make sure
                 * the link is alive, retry the whole transaction from BEGIN. */
                cons_flow_backoff(w, attempt++);
                if (cons_stopping())
                        return;
                cons_worker_ensure_db(w);
        }
}
