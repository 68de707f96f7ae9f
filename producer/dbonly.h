/* producer/dbonly.h: the DB-only purchase of DESIGN.md 12 (state db): one transaction
 * per purchase on a separate pool of SECKILL_DEGRADE_DB_CONNS connections with a
 * bounded queue. Nothing goes to Redis or Kafka for such a purchase (DESIGN.md 7). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "req.h"

/** Start / stop the pool (each thread connects its own DB session lazily). Stop drains
 *  the queue. @returns 0 or -1. */
int fr_dbonly_start(void);
void fr_dbonly_stop(void);
/** HTTP thread: 1 if the queue is full (the caller answers 503 before minting). */
int fr_dbonly_full(void);
/** Queue @p req (suspended, ids minted, pipeline reference held) for the transaction
 *  under switch epoch @p epoch. @returns 0, or -1 (queue closed: the caller answers). */
int fr_dbonly_submit(fr_req_t *req, int64_t epoch);
/** Purchases waiting for a DB-only connection (a gauge). */
size_t fr_dbonly_depth(void);
