/* sk/queue_db.h: what the waiting room reads from the database (DESIGN.md 18): a voucher's
 * public facts and room settings, and the PAID count with the latest pay deadline (the
 * index (voucher_id, status, pay_deadline) of ddl/0012 serves it).
 * What it does not do: cache (the front's routes hold their own cache) or write.
 * Errors: SK_OK; SK_ENOTFOUND (no such voucher); the classified DB error (SK_EAGAIN
 * transient). Thread-safety: as the sk_db_t given (one connection per thread). */
#pragma once
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"
#include "sk/queue.h"
#include "sk/vec.h"

/** A voucher's public facts (GET /api/v1/vouchers/{id}) and room settings. */
typedef struct sk_queue_voucher {
        int64_t voucher_id;
        char title[4 * 128 + 1];        /* UTF-8, <= 128 characters */
        int64_t price_minor;
        char currency[4];
        int64_t init_stock;
        int64_t begin_ms, end_ms;
        int status;                     /* 1 on sale, 2 offline, 3 expired, 4 paused */
        int buckets;
        sk_queue_conf_t conf;
} sk_queue_voucher_t;

/** @brief Read the voucher row of @p vid into *out. */
sk_err_t sk_queue_voucher_get(sk_db_t *db, int64_t vid, sk_queue_voucher_t *out, char *errstr,
                              size_t errstr_size);

/** @brief The voucher's PAID orders (*paid) and the latest pay deadline of its UNPAID
 *  orders in ms since the epoch (*latest_deadline_ms, 0 = none). One statement. */
sk_err_t sk_queue_db_paid(sk_db_t *db, int64_t vid, int64_t *paid, int64_t *latest_deadline_ms,
                          char *errstr, size_t errstr_size);

/** @brief The queued vouchers whose sale ended less than a minute ago or not yet (at
 *  most @p max), appended to @p ids (owned by the caller). One statement. */
sk_err_t sk_queue_db_rooms(sk_db_t *db, int max, sk_i64vec_t *ids, char *errstr,
                           size_t errstr_size);
