/* sk/lease.h: snowflake worker ids leased in Redis (DESIGN.md 2) and the id generator
 * they gate. <prefix>:worker:<id> = host:pid:start_ms, SET NX PX lease; renewed every
 * lease/3 by a compare-and-set script on a background thread with its own connection;
 * each renewal raises <prefix>:worker:<id>:until to now + 2/3 lease (no TTL). A new
 * holder mints nothing until its clock passes the old :until (or 2/3 lease after
 * acquiring when :until is missing). A lost lease stops minting at once and re-leases
 * the same id (every lease/3 until it is free again). The renewal compare-and-set and
 * the release (DEL only if ours) are small Lua scripts EVAL'd inline from lease.c (not
 * lua/: they are lease bookkeeping, not purchase scripts, and need no SHA cache).
 * :until is never deleted (the next holder needs it).
 * Thread-safe: every function may be called from any thread (sk_idgen_stop once). */
#pragma once
#include <stdint.h>
#include "sk/err.h"
#include "sk/conf.h"

typedef struct sk_idgen sk_idgen_t;

/** @brief Lease conf->worker_id (or the lowest free id 0..1023 when -1) in
 *  conf->redis under conf->redis_prefix with conf->worker_lease_ms (ms), and start the
 *  renewer thread (its own Redis connection). @p conf is read, not kept. Minting opens
 *  only after the old holder's :until (or 2/3 lease after acquiring when it is missing),
 *  so the first sk_idgen_next() calls may answer SK_EAGAIN.
 *  @returns owned generator (sk_idgen_stop()), or NULL with *err = SK_EEXIST (the
 *  requested id is taken: exit 2), SK_EAGAIN (Redis unreachable, no free id), SK_EINVAL
 *  (bad conf), SK_ENOMEM. */
sk_idgen_t *sk_idgen_start(const sk_conf_t *conf, sk_err_t *err, char *errstr, size_t errstr_size);
/** @brief Mint one id. @returns SK_OK, or SK_EAGAIN when the lease is not usable now
 *  (waiting for :until, lost, clock went back too far). */
sk_err_t sk_idgen_next(sk_idgen_t *g, int64_t *out, char *errstr, size_t errstr_size);
/** @brief 1 if the lease is held and now is inside the mint window (for /readyz). */
int sk_idgen_usable(sk_idgen_t *g);
/** @brief The leased worker id. */
int sk_idgen_worker_id(const sk_idgen_t *g);
/** @brief Close the mint window, stop the renewer and release the lease (DEL only if
 *  still ours; :until stays). Frees @p g. NULL ok. */
void sk_idgen_stop(sk_idgen_t *g);
