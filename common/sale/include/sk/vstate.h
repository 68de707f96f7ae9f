/* sk/vstate.h: the writes of a voucher's Redis admission state (DESIGN.md 4) made by the
 * preheat, the rebuild (DESIGN.md 8), set-status and the meta reset: pause and unpause,
 * meta, the users hash in chunks, and the final stock + meta step.
 *
 * Every write goes through one small inline Lua script (EVAL; admin/reconciler only, so
 * not one of the embedded lua/ scripts the front loads) that follows each write with
 * PEXPIREAT key E NX then PEXPIREAT key E GT, E = end_ms + reconcile window + 1 day
 * (sk_vstate_expiry). Meta is always written last.
 *
 * Chunks: no call blocks Redis for more than a few milliseconds, whatever the number of
 * buyers: the users hash is written SK_VSTATE_CHUNK fields per script call. A rebuild
 * writes the new hash under a scratch key of the same hash tag ("<users>:rebuild") and
 * swaps it in with RENAME in the final step, after UNLINK of the old hash (freed in the
 * background), so the users hash is never seen half-written. The failpoint
 * `rebuild.between_chunks` (DESIGN.md 11) is evaluated between two chunks.
 *
 * Errors are those of sk_redis_cmd (sk/redis.h): SK_EAGAIN the call did not run,
 * SK_EUNKNOWN its outcome is unknown (every write here is idempotent: the caller runs the
 * whole step again), SK_EREDIS an error reply; SK_ENOMEM. Functions borrow the Redis
 * handle; not thread-safe beyond that; they never log. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/dblock.h"
#include "sk/err.h"
#include "sk/keys.h"
#include "sk/redis.h"
#include "sk/vec.h"
#include "sk/voucher.h"

#define SK_VSTATE_CHUNK 1000    /* users fields per script call */

/** The keys of one bucket of a voucher (DESIGN.md 4) and the rebuild's scratch users hash. */
typedef struct sk_vstate_keys {
        char meta[SK_KEY_MAX], stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX];
        char users_tmp[SK_KEY_MAX + 16];
} sk_vstate_keys_t;

/** @brief Fill @p k for bucket @p bucket (0..SK_BUCKETS_MAX-1) of @p voucher_id under
 *  @p prefix. Pure. */
void sk_vstate_keys(sk_vstate_keys_t *k, const char *prefix, int64_t voucher_id, int bucket);

/** @brief The absolute expiry E of the voucher's keys in ms (DESIGN.md 4). Pure. */
int64_t sk_vstate_expiry(const sk_conf_t *conf, const sk_voucher_row_t *row);

/** @brief 1 in *exists if @p key exists. @returns SK_OK or the sk_redis_cmd error. */
sk_err_t sk_vstate_exists(sk_redis_t *r, const char *key, int *exists, char *errstr,
                          size_t errstr_size);

/** @brief Pause admission: HSET meta status 4 (meta may be created with only the
 *  status). *prev receives the previous status (-1 = none). */
sk_err_t sk_vstate_pause(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                         int *prev, char *errstr, size_t errstr_size);

/** @brief Put the status found before the pause back (@p prev -1: remove the field, and
 *  so an otherwise empty meta). */
sk_err_t sk_vstate_unpause(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                           int prev, char *errstr, size_t errstr_size);

/** @brief Rewrite an existing meta's begin_ms, end_ms, status and buckets from @p row; a missing
 *  meta is not created (*written = 0). */
sk_err_t sk_vstate_meta(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                        const sk_voucher_row_t *row, int *written, char *errstr,
                        size_t errstr_size);

/** @brief Whether the stock key holds a value other than @p stock (a preheat must not
 *  overwrite it, DESIGN.md 8): *sold_down = 1 and @p cur (may be NULL) the Redis value;
 *  a missing key is not sold down. */
sk_err_t sk_vstate_sold_down(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t stock,
                             int *sold_down, char *cur, size_t cur_size, char *errstr,
                             size_t errstr_size);

/** @brief Write the users hash from @p buyers (pairs user_id, trace_id) in chunks of
 *  SK_VSTATE_CHUNK fields. @p replace = 1 (rebuild): into the scratch hash, emptied first,
 *  for sk_vstate_commit to swap in; 0 (preheat): HSET into the live hash, nothing
 *  deleted. @p lk (borrowed, may be NULL): the voucher's lock, re-checked and renewed
 *  (sk_dblock_check) before every chunk, so a holder that lost its tb_lock row writes no
 *  further chunk (DESIGN.md 16). @returns SK_OK, SK_EAGAIN (the failpoint answered
 *  error, or the lock is lost or unconfirmed), or the Redis error (the scratch hash
 *  expires with the voucher's keys if the caller gives up). */
sk_err_t sk_vstate_write_users(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                               const sk_i64vec_t *buyers, int replace, sk_dblock_t *lk,
                               char *errstr, size_t errstr_size);

/** @brief The last step, one script. @p replace = 1 (rebuild): UNLINK users, RENAME the
 *  scratch hash (if any) to users, SET stock = @p stock (the bucket's DB stock), then
 *  meta = the DB's begin_ms, end_ms, status, buckets (which lifts a pause). Both give
 *  users and trace the placeholder `_`. @p replace = 0 (preheat): stock = @p stock
 *  only if the key is missing or already equal (*sold_down = 1 and @p cur the Redis value
 *  otherwise, nothing written), then meta. Each key gets the expiry. */
sk_err_t sk_vstate_commit(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                          const sk_voucher_row_t *row, int64_t stock, int replace,
                          int *sold_down, char *cur, size_t cur_size, char *errstr,
                          size_t errstr_size);
