/* producer/degrade_rebuild.h: the front's recovery rebuild worker (DESIGN.md 12,
 * rebuilding -> redis), off the degrade follower's thread. A rebuild waits for Kafka and
 * the voucher's DEDUCTs to settle (seconds, up to 2 x delivery timeout); run on the
 * follower it stopped every other voucher's switch row being re-read meanwhile (a front
 * kept answering 202 through Redis ~7 s after another voucher moved to draining, issue
 * 22). The follower only queues; one worker thread, with its own DB connection for the
 * move, rebuilds the queued vouchers one at a time. */
#pragma once
#include <stdint.h>
#include "sk/dswitch.h"

/** Log the move of @p row (its state and epoch before the move) to @p to, once (event
 *  degrade_state, WARN away from redis, INFO back), @p why a word. Used by the follower
 *  (degrade.c) and the worker. Thread-safe. */
void fr_degrade_log_move(const sk_dsw_row_t *row, int to, const char *why);

/** Start / stop the worker thread. Stop waits for a rebuild in progress (bounded by its
 *  settle wait) and drops what is still queued (the next read of the rows, by this or
 *  any front, or a reconciler pass, retries it). @returns 0 or -1. */
int fr_rebuild_start(void);
void fr_rebuild_stop(void);

/** Queue the rebuild of @p row's voucher (in state rebuilding at @p row->epoch) unless
 *  it is queued or running already; a full queue drops it (retried next second).
 *  Never blocks on I/O. Thread-safe. */
void fr_rebuild_request(const sk_dsw_row_t *row);
