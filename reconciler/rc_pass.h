/* rc_pass.h: the parts of one reconciliation pass over one voucher (reconcile.h), each
 * in its own file (the files and their jobs: reconciler/README.md; the order of the
 * steps: atop reconcile.c).
 *
 * Internal to seckill-reconciler; single-threaded like the pass. */
#pragma once
#include "rc_ctx.h"
#include "sk/traceset.h"
#include "sk/vec.h"

/* ---- rc_classify.c ---- */

/** What the classification leaves to act on. */
typedef struct rc_plan {
        sk_trace_entry_t **act;  /* FAILED without T:r, fenced, undecided (borrowed from the set) */
        size_t nact;
        sk_i64vec_t ok4;         /* DEDUCT log rows to mark consistent (4) */
        sk_i64vec_t bad3;        /* DEDUCT log rows to mark inconsistent (3) */
        size_t undecided_left;   /* undecided traces left alone (younger than grace) */
} rc_plan_t;

/** @brief Scan the trace hash of bucket @p bucket of the voucher into @p set and load
 *  the DB facts of each DEDUCT (sk_traceset_scan + load_db). @returns SK_OK or the
 *  error (st noted). */
sk_err_t rc_join(rc_ctx_t *ctx, int64_t voucher_id, int bucket, sk_traceset_t *set,
                 rc_vstat_t *st);

/** @brief Judge every DEDUCT of @p set older than grace (now @p now_ms) into counters
 *  of @p st and the lists of @p plan (zeroed first; rc_plan_free). @returns SK_OK or
 *  SK_ENOMEM. */
sk_err_t rc_classify(rc_ctx_t *ctx, sk_traceset_t *set, int64_t now_ms, rc_plan_t *plan,
                     rc_vstat_t *st);
void rc_plan_free(rc_plan_t *plan);

/* ---- rc_act.c ---- */

/** @brief Act on @p plan->act in batches, checking the stop flag and the run lock before
 *  each: FAILED without T:r -> follow it; fenced -> FAILED front_rollback; undecided ->
 *  rc_redrive_undecided. Then the reconcile-log marks. @returns SK_ESTOP or SK_OK. */
sk_err_t rc_act(rc_ctx_t *ctx, rc_plan_t *plan, rc_vstat_t *st);

/* ---- rc_decide.c ---- */

/** @brief FAILED(@p reason) recorded for @p e then rollback.lua, or the existing
 *  decision followed (sk_decide_failed); counted into @p st. */
void rc_decide_failed(rc_ctx_t *ctx, sk_trace_entry_t *e, sk_reason_t reason,
                      const char *detail, rc_vstat_t *st);

/** @brief The existing outcome of @p e followed (sk_decide_follow): a FAILED one without
 *  its T:r fence gets rollback.lua with the stored reason's flags; counted into @p st. */
void rc_decide_follow(rc_ctx_t *ctx, sk_trace_entry_t *e, rc_vstat_t *st);

/* ---- rc_redrive.c ---- */

/** @brief The undecided traces (T, no T:r, no outcome, older than grace) @p und[0..n):
 *  DLQ check, counting of outstanding re-drives, FAILED lost when exhausted, re-drive
 *  of the rest (DESIGN.md 8). */
void rc_redrive_undecided(rc_ctx_t *ctx, sk_trace_entry_t **und, size_t n, rc_vstat_t *st);

/** @brief Free the producer and the DLQ set of the pass. */
void rc_redrive_release(rc_ctx_t *ctx);

/* ---- rc_bucket.c ---- */

/** @brief Buckets of the voucher (tb_seckill_voucher.buckets, 1..16; 1 when unreadable,
 *  st noted). */
int rc_nbuckets(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st);

/** @brief The repairs across the @p nb buckets whose trace hashes are @p sets[0..nb)
 *  (rc_join'ed): probing traces older than the front's deadline settled or rolled back,
 *  the home step for fenced/released traces users still names, stray takes restored
 *  (their entries get skip = 1). Counted into @p st (DESIGN.md 14). */
void rc_repair_buckets(rc_ctx_t *ctx, int64_t voucher_id, sk_traceset_t *sets, int nb,
                       int64_t now_ms, rc_vstat_t *st);

/* ---- rc_drift.c ---- */

/** @brief Meta left at status 4 by a rebuild that died while the DB says otherwise:
 *  reset it from the DB when nobody holds the voucher lock (DESIGN.md 8 rebuild). */
void rc_meta_check(rc_ctx_t *ctx, int64_t voucher_id, int db_status, rc_vstat_t *st);

/** @brief Drift of the voucher (CREATED rows whose trace is gone; Redis stock per
 *  bucket vs DB stock - undecided, with direction, and users vs the DB) unless its keys
 *  expire within the hour (@p end_ms, @p now_ms). Rebuilds on undersell, on oversell
 *  above --drift-threshold, and on any drift under --repair (DESIGN.md 14). @p sets
 *  [0..nb) are the buckets' trace hashes. Sets st->drift and st->bk. */
void rc_drift(rc_ctx_t *ctx, int64_t voucher_id, sk_traceset_t *sets, int nb, int64_t end_ms,
              int64_t now_ms, rc_vstat_t *st);

/** @brief Alert (st->expiry_alert) when @p undecided traces remain and the trace hash
 *  expires within 6 h. */
void rc_expiry_check(rc_ctx_t *ctx, int64_t voucher_id, size_t undecided, rc_vstat_t *st);

/* ---- rc_degrade.c (DESIGN.md 12) ---- */

/** @brief The voucher's degrade state (sk_dsw_state_t; redis when it has no row or the
 *  row cannot be read), *epoch its epoch. */
int rc_degrade_state(rc_ctx_t *ctx, int64_t voucher_id, int64_t *epoch);

/** @brief State rebuilding: retry the recovery rebuild; on success the conditional
 *  move rebuilding -> redis (epoch @p epoch). Failures are counted in @p st. */
void rc_degrade_recover(rc_ctx_t *ctx, int64_t voucher_id, int64_t epoch, rc_vstat_t *st);
