/* sk/drainack.h: the evidence of the early drain (DESIGN.md 12, draining -> db, parts
 * b and c) in tb_drain_ack (ddl/0006): a front records (its lease holder, V, epoch) once it
 * has read that draining epoch of V and none of its purchases of V can still reach Kafka;
 * the early move needs such an ack from the holder of every tb_worker_lease row with role
 * 'front' and lease_until >= since - D (D = the request deadline). What it does not do:
 * decide when a front may ack (producer/degrade.c, from its in-flight count), sample high
 * watermarks (sk/vkafka.h) or move the switch (sk/dswitch.h).
 *
 * Functions take a caller-owned connection (one per thread); they never log. DB errors:
 * SK_EAGAIN transient (retry), SK_EDB otherwise. Ids and epochs are bound as
 * MYSQL_TYPE_LONGLONG. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"

/** @brief Record @p holder's ack of voucher @p voucher_id's draining @p epoch (INSERT
 *  IGNORE, acked_at = NOW(3); a repeat is a no-op). @p holder (borrowed) is the front's
 *  tb_worker_lease.holder, at most 127 bytes. @returns SK_OK, SK_EINVAL (holder too long)
 *  or the DB error. */
sk_err_t sk_drain_ack(sk_db_t *db, const char *holder, int64_t voucher_id, int64_t epoch,
                      char *errstr, size_t errstr_size);

/** @brief Whether the acks of voucher @p voucher_id's draining @p epoch are complete: one
 *  read of its switch row and of every tb_worker_lease row with role 'front' and
 *  lease_until >= since - @p grace_ms (ms; D), joined with tb_drain_ack. *missing = the
 *  number of those rows whose holder has not acked (V, @p epoch) (0: complete); -1 when the
 *  switch row no longer says (draining, @p epoch) (nothing to decide). *fronts (may be
 *  NULL) = the number of those lease rows. @returns SK_OK or the DB error. */
sk_err_t sk_drain_acks_missing(sk_db_t *db, int64_t voucher_id, int64_t epoch, int64_t grace_ms,
                               int64_t *missing, int64_t *fronts, char *errstr,
                               size_t errstr_size);
