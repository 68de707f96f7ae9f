/* jwt_auth.c: the front's JWT verifier with rotation (sk/jwt_auth.h, DESIGN.md 15).
 * The current key set is one reference-counted pointer swapped under keys_mu; a
 * verification takes a reference, so a reload never frees keys in use. Reloads are
 * serialized by reload_mu; the file's identity (mtime, size, inode) and the SHA-256 of
 * its bytes decide whether anything changed. The cache (jwt_cache.c) is keyed by the
 * token's SHA-256 and tagged with the generation the token verified under.
 * What it does not do: log or count (the on_reload callback of the binary does). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sk/err.h"
#include "sk/jwt_auth.h"
#include "sk/jwt_cache.h"

struct sk_jwt_auth {
        char *keys_file, *issuer, *audience;
        int skew_s, recheck_s, rsa_max_bits;
        sk_jwt_reload_cb *on_reload;
        void *arg;
        sk_jwt_cache_t *cache;

        pthread_mutex_t keys_mu;        /* guards keys */
        sk_jwks_t *keys;                /* current set, one reference held here */
        atomic_uint_fast64_t generation;

        pthread_mutex_t reload_mu;      /* one reload at a time; guards the fields below */
        struct stat seen;               /* the file as last read (even if it failed) */
        unsigned char sha[32];          /* SHA-256 of the bytes of the current set */
        int64_t last_tick_s, last_kid_reread_s;
};

static char *dup_or_null(const char *s)
{
        return s && s[0] ? strdup(s) : NULL;
}

static sk_jwks_t *keys_get(sk_jwt_auth_t *a)
{
        sk_jwks_t *ks;

        pthread_mutex_lock(&a->keys_mu);
        ks = a->keys;
        sk_jwks_ref(ks);
        pthread_mutex_unlock(&a->keys_mu);
        return ks;
}

sk_jwt_auth_t *sk_jwt_auth_new(const sk_jwt_auth_opts_t *o, char *errstr, size_t errstr_size)
{
        sk_jwt_auth_t *a = calloc(1, sizeof(*a));

        if (!a || !o || !o->keys_file || !o->keys_file[0]) {
                sk_seterr(errstr, errstr_size, a ? "no JWKS file (SECKILL_JWT_KEYS_FILE)" : "out of memory");
                free(a);
                return NULL;
        }
        pthread_mutex_init(&a->keys_mu, NULL);
        pthread_mutex_init(&a->reload_mu, NULL);
        a->skew_s = o->skew_s;
        a->recheck_s = o->recheck_s > 0 ? o->recheck_s : 10;
        a->rsa_max_bits = o->rsa_max_bits;
        a->on_reload = o->on_reload;
        a->arg = o->arg;
        a->keys_file = strdup(o->keys_file);
        a->issuer = dup_or_null(o->issuer);
        a->audience = dup_or_null(o->audience);
        a->cache = sk_jwt_cache_new(o->cache_max);
        if (!a->keys_file || (o->issuer && o->issuer[0] && !a->issuer) ||
            (o->audience && o->audience[0] && !a->audience) || !a->cache) {
                sk_seterr(errstr, errstr_size, "out of memory");
                goto fail;
        }
        if (stat(a->keys_file, &a->seen) != 0) {
                sk_seterr(errstr, errstr_size, "%s: %s", a->keys_file, strerror(errno));
                goto fail;
        }
        if (!(a->keys = sk_jwks_load_file(a->keys_file, 1, a->rsa_max_bits, a->sha, errstr, errstr_size)))
                goto fail;
        atomic_init(&a->generation, 1);
        return a;
fail:
        sk_jwt_auth_destroy(a);
        return NULL;
}

void sk_jwt_auth_destroy(sk_jwt_auth_t *a)
{
        if (!a)
                return;
        sk_jwks_unref(a->keys);
        sk_jwt_cache_destroy(a->cache);
        pthread_mutex_destroy(&a->keys_mu);
        pthread_mutex_destroy(&a->reload_mu);
        free(a->keys_file);
        free(a->issuer);
        free(a->audience);
        free(a);
}

static int same_file(const struct stat *x, const struct stat *y)
{
        return x->st_ino == y->st_ino && x->st_dev == y->st_dev && x->st_size == y->st_size &&
               x->st_mtim.tv_sec == y->st_mtim.tv_sec && x->st_mtim.tv_nsec == y->st_mtim.tv_nsec;
}

/* Caller holds reload_mu. Reads the file, swaps the set in if its bytes changed.
 * @returns 1, 0 or -1 as sk_jwt_auth_reload; *gen and *n for the callback, the reason
 * in errstr. */
static int reload_locked(sk_jwt_auth_t *a, uint64_t *gen, size_t *n, char *errstr, size_t errstr_size)
{
        unsigned char sha[32];
        uint64_t next = atomic_load(&a->generation) + 1;
        sk_jwks_t *ks, *old;

        if (stat(a->keys_file, &a->seen) != 0) {
                sk_seterr(errstr, errstr_size, "%s: %s", a->keys_file, strerror(errno));
                return -1;
        }
        if (!(ks = sk_jwks_load_file(a->keys_file, next, a->rsa_max_bits, sha, errstr, errstr_size)))
                return -1;
        if (!memcmp(sha, a->sha, sizeof(sha))) {
                sk_jwks_unref(ks); /* the same bytes: keep the generation and the cache */
                return 0;
        }
        memcpy(a->sha, sha, sizeof(sha));
        *gen = next;
        *n = sk_jwks_count(ks);
        pthread_mutex_lock(&a->keys_mu);
        old = a->keys;
        a->keys = ks;
        /* Published under keys_mu with the swap: a verification holding the old set
         * caches under the old generation, which no longer answers. */
        atomic_store(&a->generation, next);
        pthread_mutex_unlock(&a->keys_mu);
        sk_jwks_unref(old);
        return 1;
}

static int reload(sk_jwt_auth_t *a, int force)
{
        char why[512] = "";
        uint64_t gen = 0;
        size_t n = 0;
        struct stat st;
        int rc;

        pthread_mutex_lock(&a->reload_mu);
        if (!force && stat(a->keys_file, &st) == 0 && same_file(&st, &a->seen)) {
                pthread_mutex_unlock(&a->reload_mu);
                return 0;
        }
        rc = reload_locked(a, &gen, &n, why, sizeof(why));
        pthread_mutex_unlock(&a->reload_mu);
        if (rc != 0 && a->on_reload)
                a->on_reload(a->arg, rc > 0, gen, n, why);
        return rc;
}

int sk_jwt_auth_reload(sk_jwt_auth_t *a, int force)
{
        return reload(a, force);
}

int sk_jwt_auth_tick(sk_jwt_auth_t *a, int64_t now_s)
{
        int due;

        pthread_mutex_lock(&a->reload_mu);
        due = now_s - a->last_tick_s >= a->recheck_s || now_s < a->last_tick_s;
        if (due)
                a->last_tick_s = now_s;
        pthread_mutex_unlock(&a->reload_mu);
        return due ? reload(a, 0) : 0;
}

/* An unknown kid: at most one re-read per recheck period (a flood of made-up kids
 * costs one file read per period). @returns 1 if the set changed. */
static int kid_reread(sk_jwt_auth_t *a, int64_t now_s)
{
        int due;

        pthread_mutex_lock(&a->reload_mu);
        due = now_s - a->last_kid_reread_s >= a->recheck_s || now_s < a->last_kid_reread_s;
        if (due)
                a->last_kid_reread_s = now_s;
        pthread_mutex_unlock(&a->reload_mu);
        return due && reload(a, 1) > 0;
}

sk_jwt_status_t sk_jwt_auth_verify(sk_jwt_auth_t *a, const char *token, size_t len, int64_t now_s,
                                   int64_t *user_id, char *errstr, size_t errstr_size)
{
        unsigned char key[SK_JWT_CACHE_KEY_LEN];
        sk_jwt_policy_t pol = { a->issuer, a->audience, a->skew_s };
        sk_jwt_claims_t claims;
        sk_jwt_status_t st;
        sk_jwks_t *ks;

        if (!len || len > SK_JWT_MAX_TOKEN) {
                sk_seterr(errstr, errstr_size, "token length %zu outside 1..%d", len, SK_JWT_MAX_TOKEN);
                return SK_JWT_EFORMAT;
        }
        sk_jwt_cache_key(token, len, key);
        if (sk_jwt_cache_get(a->cache, key, atomic_load(&a->generation), now_s, a->skew_s, user_id,
                             NULL))
                return SK_JWT_OK;
        ks = keys_get(a);
        st = sk_jwt_verify(ks, token, len, &pol, now_s, &claims, errstr, errstr_size);
        if (st == SK_JWT_EKID && kid_reread(a, now_s)) {
                sk_jwks_unref(ks);
                ks = keys_get(a);
                st = sk_jwt_verify(ks, token, len, &pol, now_s, &claims, errstr, errstr_size);
        }
        if (st == SK_JWT_OK) {
                sk_jwt_cache_put(a->cache, key, claims.user_id, claims.exp_s, sk_jwks_generation(ks));
                *user_id = claims.user_id;
        }
        sk_jwks_unref(ks);
        return st;
}

int sk_jwt_auth_lookup(sk_jwt_auth_t *a, const char *token, size_t len, int64_t now_s,
                       int64_t *user_id)
{
        unsigned char key[SK_JWT_CACHE_KEY_LEN];

        if (!len || len > SK_JWT_MAX_TOKEN)
                return 0;
        sk_jwt_cache_key(token, len, key);
        return sk_jwt_cache_get(a->cache, key, atomic_load(&a->generation), now_s, a->skew_s, user_id,
                                NULL);
}

uint64_t sk_jwt_auth_generation(sk_jwt_auth_t *a)
{
        return atomic_load(&a->generation);
}

size_t sk_jwt_auth_cached(sk_jwt_auth_t *a)
{
        return sk_jwt_cache_size(a->cache);
}
