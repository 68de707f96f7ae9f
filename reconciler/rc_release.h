/* rc_release.h: the reconciler's part of the order lifecycle (DESIGN.md 13): finish the
 * Redis releases that a crash (or Redis being down) left undone after a cancel or close
 * committed in the DB. Single-threaded: the reconciler's main thread only. */
#pragma once
#include <stdint.h>
#include "rc_ctx.h"

/** @brief For every CANCELLED/CLOSED order of @p voucher_id whose trace has no release
 *  record `T:x`, run release.lua (idempotent: the unit goes back at most once). A voucher
 *  whose Redis keys are gone (expired, or Redis lost them) gets no Redis step: its DB
 *  release is already committed and a rebuild counts from the DB. Counts into
 *  st->released (a pass that finished one exits 1, found and repaired); errors into
 *  st->errors / st->note. Runs before the drift check of the
 *  pass, so a pending release is never mistaken for drift. */
void rc_release_pending(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st);
