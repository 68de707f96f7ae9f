/* sk/lease.h: snowflake worker ids leased in Redis (DESIGN.md 2) and the id generator
 * they gate. <prefix>:worker:<id> = host:pid:start_ms, SET NX PX lease; renewed every
 * lease/3 by a compare-and-set script on a background thread with its own connection;
 * each renewal raises <prefix>:worker:<id>:until to now + 2/3 lease (no TTL). A new
 * holder mints nothing until its clock passes the old :until (or 2/3 lease after
 * acquiring when :until is missing). A lost lease stops minting at once and re-leases.
 * Thread-safe: sk_idgen_next() may be called from any thread. */
#pragma once
#include <stdint.h>
#include "sk/err.h"
#include "sk/conf.h"

typedef struct sk_idgen sk_idgen_t;

/** @brief Lease conf->worker_id (or the lowest free id when -1) with
 *  conf->worker_lease_ms and start the renewer. @returns owned generator, or NULL with
 *  *err = SK_EEXIST (the requested id is taken: exit 2), SK_EAGAIN (Redis unreachable,
 *  no free id). */
sk_idgen_t *sk_idgen_start(const sk_conf_t *conf, sk_err_t *err, char *errstr, size_t errstr_size);
/** @brief Mint one id. @returns SK_OK, or SK_EAGAIN when the lease is not usable now
 *  (waiting for :until, lost, clock went back too far). */
sk_err_t sk_idgen_next(sk_idgen_t *g, int64_t *out, char *errstr, size_t errstr_size);
/** @brief 1 if minting is possible right now (for /readyz). */
int sk_idgen_usable(sk_idgen_t *g);
/** @brief The leased worker id. */
int sk_idgen_worker_id(const sk_idgen_t *g);
/** @brief Stop the renewer and release the lease (DEL only if still ours). NULL ok. */
void sk_idgen_stop(sk_idgen_t *g);
