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
 * lookups); rollback.lua from sk_rollback_run. Nothing here logs or waits. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rebuild_int.h"
#include "sk/outcome.h"
#include "sk/traceset.h"

/* Record FAILED front_rollback for the fenced DEDUCT @p e (DESIGN.md 7, 8); a duplicate
 * that names other ids is a collision (SK_EINVAL). */
static sk_err_t fail_fenced(sk_db_t *db, const sk_trace_entry_t *e, int64_t voucher_id,
                            char *errstr, size_t errstr_size)
{
        sk_outcome_t existing;
        sk_err_t err;

        if (!e->msg_ok || e->msg.trace_id != e->trace_id || e->msg.voucher_id != voucher_id) {
                sk_seterr(errstr, errstr_size,
                          "DEDUCT entry %" PRId64 " of voucher %" PRId64 " is not a valid message",
                          e->trace_id, voucher_id);
                return SK_EINVAL;
        }
        err = sk_outcome_fail(db, &e->msg, SK_REASON_FRONT_ROLLBACK,
                              "rebuild: fenced by the front, no outcome", &existing,
                              errstr, errstr_size);
        if (err != SK_EEXIST)
                return err;
        if (!sk_outcome_matches(&existing, &e->msg)) {
                sk_seterr(errstr, errstr_size,
                          "id collision: outcome of trace %" PRId64 " names order %" PRId64
                          " user %" PRId64 " voucher %" PRId64, e->trace_id, existing.order_id,
                          existing.user_id, existing.voucher_id);
                return SK_EINVAL;
        }
        return SK_OK; /* decided by someone else meanwhile */
}

/* Row callback: the first column. */
static int first_col(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        (void)nulls;
        (void)ncols;
        *(int64_t *)arg = cols[0];
        return 1;
}

/* rollback.lua for the FAILED outcome of @p e with the flags of its reason. sold_out
 * follows the clamp protocol of DESIGN.md 4: the DB stock is read FOR SHARE in a
 * transaction that ends only after rollback.lua answered, so a concurrent restock
 * cannot be clamped away. */
static sk_err_t run_pending(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                            const sk_trace_entry_t *e, int64_t voucher_id, char *errstr,
                            size_t errstr_size)
{
        static const char stock_sql[] =
                "SELECT stock FROM tb_seckill_voucher WHERE voucher_id = ? LOCK IN SHARE MODE";
        int restore, release, clamp;
        int64_t clamp_to = -1, user = e->msg_ok ? e->msg.user_id : 0;
        sk_rollback_res_t res;
        sk_err_t err;

        sk_reason_flags(e->oc.reason, &restore, &release, &clamp);
        if (clamp) {
                if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                        return err;
                err = sk_traceset_rows(db, stock_sql, &voucher_id, 1, 1, first_col, &clamp_to,
                                       errstr, errstr_size);
                if (err == SK_OK && clamp_to < 0) {
                        sk_seterr(errstr, errstr_size, "voucher %" PRId64 " vanished",
                                  voucher_id);
                        err = SK_ENOTFOUND;
                }
                if (err != SK_OK) {
                        sk_db_rollback(db);
                        return err;
                }
        }
        err = sk_rollback_run(r, conf->redis_prefix, voucher_id, e->trace_id, user, "reconciler",
                              e->oc.reason, clamp_to,
                              sk_expire_extra_ms(conf->reconcile_window_hours), &res, errstr,
                              errstr_size);
        if (clamp)
                sk_db_rollback(db); /* read-only: ending it releases the shared lock */
        return err;
}

/* Settle one DEDUCT entry: *undecided = 1 when it must be waited for. */
static sk_err_t settle_one(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                           const sk_trace_entry_t *e, int64_t voucher_id,
                           sk_rebuild_report_t *rep, int *undecided, char *errstr,
                           size_t errstr_size)
{
        sk_err_t err;

        *undecided = 0;
        if (e->outcome == SK_OUTCOME_CREATED || (e->outcome == SK_OUTCOME_FAILED && e->restore))
                return SK_OK;
        if (e->outcome == SK_OUTCOME_FAILED) {
                err = run_pending(conf, db, r, e, voucher_id, errstr, errstr_size);
                if (err == SK_OK)
                        rep->rolled_back++;
                return err;
        }
        if (e->restore) {
                err = fail_fenced(db, e, voucher_id, errstr, errstr_size);
                if (err == SK_OK)
                        rep->fenced_failed++;
                return err;
        }
        *undecided = 1;
        return SK_OK;
}

sk_err_t rb_settle_traces(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                          const sk_vstate_keys_t *k, int64_t voucher_id,
                          sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_traceset_t set;
        sk_err_t err, last = SK_OK;
        char why[256] = "";

        rep->undecided = 0;
        rep->deducts = 0;
        sk_traceset_init(&set);
        if ((err = sk_traceset_scan(r, k->trace, 1000, &set, errstr, errstr_size)) != SK_OK ||
            (err = sk_traceset_load_db(db, &set, 1, errstr, errstr_size)) != SK_OK)
                goto done;
        for (size_t i = 0; i < set.n; i++) {
                const sk_trace_entry_t *e = &set.v[i];
                int undecided;

                if (!e->deduct)
                        continue;
                rep->deducts++;
                err = settle_one(conf, db, r, e, voucher_id, rep, &undecided, why,
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
