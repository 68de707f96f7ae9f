/* sk/jwt_auth.h: the buyer-identity verifier of seckill-front in SECKILL_AUTH=jwt mode
 * (DESIGN.md 15): the key set of SECKILL_JWT_KEYS_FILE, swapped as a whole on a reload,
 * the verified-token cache in front of sk_jwt_verify, and the rotation rules: a reload
 * on demand (SIGHUP), a changed file (mtime, size or inode) noticed by
 * sk_jwt_auth_tick() every recheck period, and at most one re-read per period caused by
 * an unknown kid. A reload that fails keeps the old keys; one whose bytes are those
 * already loaded keeps the generation (and so the cache). Every other successful reload
 * is a new generation, which revokes every cached token at once.
 * What it does not do: log (the on_reload callback does, in the binary) or read HTTP.
 * Thread-safety: every call but _new and _destroy is thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "sk/jwt.h"

typedef struct sk_jwt_auth sk_jwt_auth_t;

/** Told after every reload attempt (not after the first load): @p ok 1 with the new
 *  @p generation and @p nkeys, or 0 with @p reason (the old keys stay). Called on the
 *  thread that reloaded (the main loop, or an HTTP thread for an unknown kid), with no
 *  lock of the verifier held. */
typedef void (sk_jwt_reload_cb)(void *arg, int ok, uint64_t generation, size_t nkeys,
                                const char *reason);

typedef struct sk_jwt_auth_opts {
        const char *keys_file;  /* JWKS path (copied); required */
        const char *issuer;     /* copied; NULL or "" = iss not checked */
        const char *audience;   /* copied; NULL or "" = aud not checked */
        size_t cache_max;       /* verified-token cache entries (0 = no cache) */
        int skew_s;             /* clock skew allowed on exp, nbf, iat (s); 30 */
        int recheck_s;          /* file check period and unknown-kid re-read spacing (s); 10 */
        int rsa_max_bits;       /* largest RSA key accepted; 0 = SK_JWKS_RSA_MAX_BITS (4096) */
        sk_jwt_reload_cb *on_reload;    /* may be NULL */
        void *arg;              /* passed to on_reload */
} sk_jwt_auth_opts_t;

/** @brief Load @p opts->keys_file and set up the cache. The first load must succeed.
 *  @returns owned by the caller (sk_jwt_auth_destroy), or NULL with the reason in
 *  @p errstr (bad file: SK_EINVAL class, not transient). */
sk_jwt_auth_t *sk_jwt_auth_new(const sk_jwt_auth_opts_t *opts, char *errstr, size_t errstr_size);
/** @brief Free @p auth (NULL is a no-op); no call may be running on it. */
void sk_jwt_auth_destroy(sk_jwt_auth_t *auth);

/** @brief The buyer of @p token (@p len bytes, borrowed) at @p now_s (Unix seconds):
 *  from the cache, else by sk_jwt_verify (then cached). An unknown kid re-reads the key
 *  file first if none was re-read in the last recheck period. @returns SK_JWT_OK with
 *  *@p user_id, or the refusal (every one a 401/10007) with @p errstr. */
sk_jwt_status_t sk_jwt_auth_verify(sk_jwt_auth_t *auth, const char *token, size_t len,
                                   int64_t now_s, int64_t *user_id, char *errstr,
                                   size_t errstr_size);
/** @brief The buyer of @p token (@p len bytes, borrowed) at @p now_s if the verified-token
 *  cache holds it for the current key-set generation: no signature work, no re-read.
 *  The front asks this before limiting the verifications of a client (DESIGN.md 15:
 *  cached tokens are never limited). @returns 1 with *@p user_id, else 0.
 *  Thread-safe. */
int sk_jwt_auth_lookup(sk_jwt_auth_t *auth, const char *token, size_t len, int64_t now_s,
                       int64_t *user_id);
/** @brief Re-read the key file now (@p force, e.g. SIGHUP), or only if its mtime, size
 *  or inode changed since the last read (@p force 0). @returns 1 a new generation,
 *  0 nothing changed, -1 the reload failed (old keys kept; on_reload told). */
int sk_jwt_auth_reload(sk_jwt_auth_t *auth, int force);
/** @brief Call often (the main loop): every recheck period, sk_jwt_auth_reload(auth, 0).
 *  @p now_s Unix seconds. @returns as sk_jwt_auth_reload (0 when not due). */
int sk_jwt_auth_tick(sk_jwt_auth_t *auth, int64_t now_s);
/** @brief The current key-set generation (1 after the first load). */
uint64_t sk_jwt_auth_generation(sk_jwt_auth_t *auth);
/** @brief Entries in the verified-token cache. */
size_t sk_jwt_auth_cached(sk_jwt_auth_t *auth);
