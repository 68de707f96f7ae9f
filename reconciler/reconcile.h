/* reconcile.h: one reconciliation pass of seckill-reconciler (DESIGN.md 7-9, 14): for
 * each voucher in scope, the join by traceId of the Redis trace hash with the database,
 * the decisions it implies (re-drive, FAILED + rollback, reconcile-log status), drift
 * detection and, with --repair, the rebuild of DESIGN.md 8. The parts live in their own
 * files (rc_pass.h); what every step shares is rc_ctx.h. Single-threaded; the caller owns every connection and the stop
 * flag. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "rc_ctx.h"

/** @brief Vouchers in scope into *ids (malloc'd; free()): --voucher alone, or every
 *  voucher whose sale has begun and whose end is within window + 24 h of now.
 *  @returns SK_OK or the DB error. */
sk_err_t rc_scope(rc_ctx_t *ctx, int64_t **ids, size_t *n, char *errstr, size_t errstr_size);

/** @brief Reconcile one voucher into *st. Never returns early for a per-trace error:
 *  it counts it (st->errors / note) and goes on. @returns SK_ESTOP if the stop flag or
 *  a lost run lock interrupted it (ctx->lock_lost says which; nothing is written after
 *  the loss was seen), else SK_OK. */
sk_err_t rc_voucher(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st);

/** @brief Free what the pass created lazily (producer, DLQ ids). */
void rc_ctx_release(rc_ctx_t *ctx);


/** @brief Traces stuck in the DLQ re-drive loop over @p v[0..n) (Σ dlq_loop). */
int64_t rc_dlq_loop_total(const rc_vstat_t *v, size_t n);

/** @brief Print the per-voucher table (human) or one JSON document. @p exit_code and
 *  @p note describe the whole run. */
void rc_print(FILE *out, const rc_vstat_t *v, size_t n, int json, int exit_code, const char *note);
