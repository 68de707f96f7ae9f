/* rebuild_traces.c: the rebuild's check of a voucher's trace hash (rebuild_int.h;
 * DESIGN.md 8 rebuild row: "every DEDUCT has an outcome and every FAILED outcome's
 * rollback has written its T:r (run the pending rollbacks first), first recording
 * FAILED (front_rollback) for fenced ones").
 *
 * Why the pending rollbacks: the rebuild copies the DB stock into Redis. A FAILED
 * purchase whose rollback.lua has not run yet (it failed or was cut short) would restore
 * its unit later, on top of the copied stock, leaving Redis above the DB. Running it
 * before the copy writes T:r, so any later rollback of it answers ALREADY.
 *
 * The trace hash and its DB facts come from sk/traceset.h (HSCAN, prepared IN (...)
 * lookups); recording FAILED, comparing ids and following the stored reason (with the
 * sold_out clamp protocol) from sk/decide.h. Nothing here logs or waits. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rebuild_int.h"
#include "sk/decide.h"
#include "sk/outcome.h"
#include "sk/traceset.h"

/* The decider of sk/decide.h for the rebuild: mode reconciler, one attempt per check
 * (the wait loop checks again), no reconnect of @p db (a failed step counts the trace as
 * undecided instead), and the voucher's tb_lock row re-checked before every write
 * (DESIGN.md 16): a rebuild that lost it stops (SK_ESTOP, counted undecided). */
static void keep_session(void *arg, sk_err_t err)
{
        (void)arg;
        (void)err;
}

static int lock_ok(void *arg)
{
        return sk_dblock_check(arg, NULL, 0) == SK_OK;
}

static void decider_init(sk_decider_t *d, const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                         sk_dblock_t *lk)
{
        memset(d, 0, sizeof(*d));
        d->db = db;
        d->r = r;
        d->prefix = conf->redis_prefix;
        d->mode = "reconciler";
        d->expire_extra_ms = sk_expire_extra_ms(conf->reconcile_window_hours);
        d->attempts = 1;
        d->db_failed = keep_session;
        d->proceed = lock_ok;
        d->arg = lk;
}

/* The DEDUCT entry of @p e as a message, or SK_EINVAL (needs a human). */
static sk_err_t entry_msg(const sk_trace_entry_t *e, int64_t voucher_id, char *errstr,
                          size_t errstr_size)
{
        if (e->msg_ok && e->msg.trace_id == e->trace_id && e->msg.voucher_id == voucher_id)
                return SK_OK;
        sk_seterr(errstr, errstr_size, "DEDUCT entry %" PRId64 " of voucher %" PRId64
                  " is not a valid message", e->trace_id, voucher_id);
        return SK_EINVAL;
}

/* An id collision (DESIGN.md 7: never a decision) needs a human: SK_EINVAL. */
static sk_err_t collision(const sk_decision_t *dec, sk_err_t err, char *errstr,
                          size_t errstr_size)
{
        if (dec->how != SK_DECIDED_COLLISION)
                return err;
        sk_seterr(errstr, errstr_size, "id collision: outcome of trace %" PRId64 " names order %"
                  PRId64 " user %" PRId64 " voucher %" PRId64, dec->row.trace_id,
                  dec->row.order_id, dec->row.user_id, dec->row.voucher_id);
        return SK_EINVAL;
}

/* Settle one DEDUCT entry: *undecided = 1 when it must be waited for. */
static sk_err_t settle_one(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r, sk_dblock_t *lk,
                           const sk_trace_entry_t *e, int64_t voucher_id,
                           sk_rebuild_report_t *rep, int *undecided, char *errstr,
                           size_t errstr_size)
{
        sk_decider_t d;
        sk_decision_t dec;
        sk_err_t err;

        *undecided = 0;
        if (e->outcome == SK_OUTCOME_CREATED || (e->outcome == SK_OUTCOME_FAILED && e->restore))
                return SK_OK;
        if (!e->restore && e->outcome != SK_OUTCOME_FAILED) {
                *undecided = 1;
                return SK_OK;
        }
        if ((err = entry_msg(e, voucher_id, errstr, errstr_size)) != SK_OK)
                return err;
        decider_init(&d, conf, db, r, lk);
        memset(&dec, 0, sizeof(dec));
        if (e->outcome == SK_OUTCOME_FAILED) {
                /* FAILED without T:r: its pending rollback (the stored reason's flags;
                 * sold_out with the clamp protocol). */
                err = sk_decide_follow(&d, &e->msg, &e->oc, &dec, errstr, errstr_size);
                if (err == SK_OK)
                        rep->rolled_back++;
                return collision(&dec, err, errstr, errstr_size);
        }
        /* Fenced by the front, no outcome: FAILED front_rollback (DESIGN.md 7, 8). */
        err = sk_decide_failed(&d, &e->msg, SK_REASON_FRONT_ROLLBACK,
                               "rebuild: fenced by the front, no outcome", &dec, errstr,
                               errstr_size);
        if (dec.how == SK_DECIDED_RECORDED)
                rep->fenced_failed++;
        return collision(&dec, err, errstr, errstr_size);
}

sk_err_t rb_settle_traces(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r, sk_dblock_t *lk,
                          const sk_vstate_keys_t *k, int64_t voucher_id,
                          sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_traceset_t set;
        sk_err_t err, last = SK_OK;
        char why[256] = "";

        sk_traceset_init(&set);
        if ((err = sk_traceset_scan(r, k->trace, 1000, &set, errstr, errstr_size)) != SK_OK ||
            (err = sk_traceset_load_db(db, &set, 1, errstr, errstr_size)) != SK_OK)
                goto done;
        for (size_t i = 0; i < set.n; i++) {
                const sk_trace_entry_t *e = &set.v[i];
                int undecided;

                /* A stub T (a rebuild's, "rebuilt":1) stands for a DB order: no DEDUCT to settle. */
                if (!e->deduct || strstr(e->deduct, "\"rebuilt\":1"))
                        continue;
                rep->deducts++;
                err = settle_one(conf, db, r, lk, e, voucher_id, rep, &undecided, why,
                                 sizeof(why));
                if (err == SK_EINVAL) {
                        sk_seterr(errstr, errstr_size, "%s", why);
                        goto done;
                }
                /* A rollback or record that failed now is tried again at the next check;
                 * the last reason is reported. */
                if (err != SK_OK) {
                        last = err;
                        sk_seterr(errstr, errstr_size, "trace %" PRId64 ": %s", e->trace_id,
                                  why);
                }
                if (err != SK_OK || undecided)
                        rep->undecided++;
        }
        err = last == SK_OK ? SK_OK : SK_EAGAIN;
done:
        sk_traceset_free(&set);
        return err;
}
