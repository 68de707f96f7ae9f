/* producer/degrade.h: the front's follower of the per-voucher degrade switch (DESIGN.md
 * 12, sk/dswitch.h): a thread that reads every voucher's switch row every second,
 * publishes the states to the HTTP threads, and makes the transitions this front may
 * make (redis -> draining when its breaker is open or the mode is db_only; its drain ack,
 * and draining -> db on every front's ack or the timed wait, once Kafka has drained; db -> rebuilding when Redis has been healthy; the rebuild,
 * then rebuilding -> redis). A front restarted mid-outage reads the same rows, so it
 * follows the DB state from its first second. */
#pragma once
#include <stdint.h>

/** Start / stop the follower thread (its own DB connection). The first read is done
 *  before fr_degrade_start returns when the DB answers (a front restarted mid-outage
 *  never sends a purchase to Redis for a voucher that is not in state redis).
 *  @returns 0 or -1. */
int fr_degrade_start(void);
void fr_degrade_stop(void);

/** The state of voucher @p voucher_id as last read (sk_dsw_state_t; SK_DSW_REDIS for a
 *  voucher without a row); *epoch and *mode (may be NULL) its epoch and effective mode.
 *  Thread-safe (HTTP threads). */
int fr_degrade_state(int64_t voucher_id, int64_t *epoch, int *mode);

/** DESIGN.md 12 a: 1 while the last successful read of the switch rows is younger than
 *  SECKILL_SWITCH_STALE_MS, else 0 (nothing may go to Redis for any voucher). Thread-safe
 *  (HTTP threads, deduct workers). */
int fr_degrade_fresh(void);

/** Append "state per voucher" gauge lines (seckill_front_degrade_state{voucher,state})
 *  and the JSON object of /readyz into the caller's buffers. @returns bytes written
 *  (never more than @p size - 1; NUL-terminated). Thread-safe. */
size_t fr_degrade_metrics(char *buf, size_t size);
size_t fr_degrade_json(char *buf, size_t size);
