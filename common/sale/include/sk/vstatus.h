/* sk/vstatus.h: a voucher's status changed in the database, then in its Redis meta
 * (common/sale/vstatus.c; DESIGN.md 6, 8): the admin's set-status and the reconciler's
 * meta reset. Not thread-safe per connection. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/conf.h"
#include "sk/db.h"
#include "sk/err.h"
#include "sk/redis.h"

/** @brief `seckill-admin voucher set-status`: under the voucher's lock (up to 5 s),
 *  UPDATE the DB status first (the book of record), then, if meta exists, HSET meta
 *  begin_ms/end_ms/status from the DB row (with the expiry of DESIGN.md 4). A missing
 *  meta is not created (that is the preheat's or the rebuild's job). Opens its own
 *  connections. @p status 1..4. *meta_written (may be NULL): 1 if meta was updated.
 *  @returns SK_OK; SK_EINVAL (status); SK_ENOTFOUND (no such voucher); SK_EAGAIN (lock
 *  busy: a rebuild is running, or a transient error); SK_EDB / SK_EREDIS. */
sk_err_t sk_voucher_set_status(const sk_conf_t *conf, int64_t voucher_id, int status,
                               int *meta_written, char *errstr, size_t errstr_size);

/** @brief For the reconciler's "meta status 4 while nobody holds the lock" case
 *  (DESIGN.md 8, 16: nobody holds it = no tb_lock row with until >= NOW(3)): try the
 *  voucher's lock row WITHOUT waiting (its own connection; @p db only reads the voucher
 *  row); if it is free, rewrite an existing meta's begin_ms/end_ms/status from the DB
 *  row, the lock re-checked before each bucket's write, then release it. *meta_written (may be NULL): 1 if meta was rewritten (0: meta missing).
 *  @returns SK_OK; SK_EAGAIN (the lock is held: a rebuild is running; leave it);
 *  SK_ENOTFOUND (no such voucher); SK_EDB / SK_EREDIS. */
sk_err_t sk_voucher_reset_meta_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                    int64_t voucher_id, int *meta_written, char *errstr,
                                    size_t errstr_size);
