/* rebuild_int.h: what rebuild.c and rebuild_traces.c share (private to common/sale).
 * One check of a voucher's trace hash for the rebuild's wait (DESIGN.md 8 rebuild row). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/rebuild.h"
#include "sk/redis.h"
#include "sk/vstate.h"

/** @brief One pass over the trace hash of one bucket of the voucher (@p k) (HSCAN) joined with the outcome table:
 *  every DEDUCT "T" is decided and fenced, or counted in rep->undecided. A FAILED
 *  outcome without "T:r" gets its pending rollback run now (rep->rolled_back); a DEDUCT
 *  without outcome whose "T:r" exists gets FAILED front_rollback recorded
 *  (rep->fenced_failed). rep->deducts += the DEDUCT entries seen, rep->undecided += the
 *  undecided ones (the caller zeroes both before the first bucket).
 *  @returns SK_OK (then rep->undecided == 0 means settled); SK_EAGAIN / SK_EUNKNOWN
 *  (transient, or a rollback / record failed now and counts as undecided: check
 *  again; the last reason in errstr; also when @p lk, the voucher's lock re-checked before
 *  every rollback.lua or FAILED record, is lost); SK_EINVAL (an id collision or a DEDUCT entry that is not a
 *  valid message: needs a human); other DB/Redis errors. */
sk_err_t rb_settle_traces(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r, sk_dblock_t *lk,
                          const sk_vstate_keys_t *k, int64_t voucher_id,
                          sk_rebuild_report_t *rep, char *errstr, size_t errstr_size);
