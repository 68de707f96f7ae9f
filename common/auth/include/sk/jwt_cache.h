/* sk/jwt_cache.h: the verified-token cache of DESIGN.md 15: keyed by the SHA-256 of the
 * whole token, holding (sub, exp, key-set generation) of tokens that verified; bounded
 * (the oldest entry is evicted first); an entry answers only until exp + skew and only
 * while its key-set generation is the current one, so a key reload revokes at once.
 * What it does not do: verify anything (sk/jwt.h) or know the current generation (the
 * caller passes it). Thread-safe: one mutex around each call. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK_JWT_CACHE_KEY_LEN 32 /* SHA-256 */

typedef struct sk_jwt_cache sk_jwt_cache_t;

/** @brief A cache of at most @p max_entries tokens (0 = a cache that stores nothing).
 *  @returns owned by the caller (sk_jwt_cache_destroy), or NULL on ENOMEM. */
sk_jwt_cache_t *sk_jwt_cache_new(size_t max_entries);
/** @brief Free @p cache. NULL is a no-op. No call may be running on it. */
void sk_jwt_cache_destroy(sk_jwt_cache_t *cache);
/** @brief The cache key of @p token (@p len bytes, borrowed): SHA-256 into @p key. */
void sk_jwt_cache_key(const char *token, size_t len, unsigned char key[SK_JWT_CACHE_KEY_LEN]);
/** @brief Look @p key up. A hit needs the entry's generation == @p generation and
 *  @p now_s < exp + @p skew_s (s). @returns 1 with *@p user_id (and *@p exp_s if not
 *  NULL), 0 on a miss. */
int sk_jwt_cache_get(sk_jwt_cache_t *cache, const unsigned char key[SK_JWT_CACHE_KEY_LEN],
                     uint64_t generation, int64_t now_s, int skew_s, int64_t *user_id,
                     int64_t *exp_s);
/** @brief Remember a verified token (@p key copied). A full cache evicts its oldest
 *  entry; a key already present is overwritten in place. */
void sk_jwt_cache_put(sk_jwt_cache_t *cache, const unsigned char key[SK_JWT_CACHE_KEY_LEN],
                      int64_t user_id, int64_t exp_s, uint64_t generation);
/** @brief Entries held (for tests and metrics). */
size_t sk_jwt_cache_size(sk_jwt_cache_t *cache);
