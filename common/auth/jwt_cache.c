/* jwt_cache.c: the verified-token cache (sk/jwt_cache.h, DESIGN.md 15): a fixed ring of
 * entries in insertion order (the slot reused next is the oldest) and a chained hash
 * index over it, under one mutex. The key is already a SHA-256, so its first 8 bytes
 * are the hash. What it does not do: expire entries by itself (a stale entry is a miss
 * and is overwritten when the ring comes round). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "sk/jwt_cache.h"

typedef struct entry {
        unsigned char key[SK_JWT_CACHE_KEY_LEN];
        int64_t user_id, exp_s;
        uint64_t generation;
        int32_t chain;          /* next slot in the same bucket, -1 = end */
        int used;
} entry_t;

struct sk_jwt_cache {
        pthread_mutex_t mu;
        size_t max, next, size;
        size_t nbuckets;        /* power of two */
        int32_t *buckets;       /* first slot of each bucket, -1 = empty */
        entry_t *slots;
};

sk_jwt_cache_t *sk_jwt_cache_new(size_t max_entries)
{
        sk_jwt_cache_t *c = calloc(1, sizeof(*c));
        size_t i;

        if (!c)
                return NULL;
        if (max_entries > INT32_MAX / 2)
                max_entries = INT32_MAX / 2;
        pthread_mutex_init(&c->mu, NULL);
        c->max = max_entries;
        if (!max_entries)
                return c;
        for (c->nbuckets = 1; c->nbuckets < max_entries; c->nbuckets <<= 1)
                ;
        c->buckets = malloc(c->nbuckets * sizeof(*c->buckets));
        c->slots = calloc(max_entries, sizeof(*c->slots));
        if (!c->buckets || !c->slots) {
                sk_jwt_cache_destroy(c);
                return NULL;
        }
        for (i = 0; i < c->nbuckets; i++)
                c->buckets[i] = -1;
        return c;
}

void sk_jwt_cache_destroy(sk_jwt_cache_t *c)
{
        if (!c)
                return;
        pthread_mutex_destroy(&c->mu);
        free(c->buckets);
        free(c->slots);
        free(c);
}

/* SHA-256 fetched once: SHA256() looks the algorithm up in OpenSSL 3's provider store,
 * under its lock, at every call (a third of the key's cost on the front's profile). */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
        sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void sk_jwt_cache_key(const char *token, size_t len, unsigned char key[SK_JWT_CACHE_KEY_LEN])
{
        pthread_once(&sha256_once, sha256_fetch);
        if (!sha256_md || !EVP_Digest(token, len, key, NULL, sha256_md, NULL))
                SHA256((const unsigned char *)token, len, key);
}

static size_t bucket_of(const sk_jwt_cache_t *c, const unsigned char *key)
{
        uint64_t h;

        memcpy(&h, key, sizeof(h));
        return (size_t)(h & (c->nbuckets - 1));
}

/* Caller holds mu. The slot holding @p key, or -1. */
static int32_t find(const sk_jwt_cache_t *c, const unsigned char *key)
{
        int32_t i;

        for (i = c->buckets[bucket_of(c, key)]; i >= 0; i = c->slots[i].chain)
                if (!memcmp(c->slots[i].key, key, SK_JWT_CACHE_KEY_LEN))
                        return i;
        return -1;
}

/* Caller holds mu. Take slot @p idx out of its bucket chain. */
static void unlink_slot(sk_jwt_cache_t *c, int32_t idx)
{
        int32_t *p = &c->buckets[bucket_of(c, c->slots[idx].key)];

        while (*p >= 0 && *p != idx)
                p = &c->slots[*p].chain;
        if (*p == idx)
                *p = c->slots[idx].chain;
        c->slots[idx].used = 0;
}

int sk_jwt_cache_get(sk_jwt_cache_t *c, const unsigned char key[SK_JWT_CACHE_KEY_LEN],
                     uint64_t generation, int64_t now_s, int skew_s, int64_t *user_id,
                     int64_t *exp_s)
{
        int32_t i;
        int hit = 0;

        if (!c->max)
                return 0;
        pthread_mutex_lock(&c->mu);
        if ((i = find(c, key)) >= 0 && c->slots[i].generation == generation &&
            now_s < c->slots[i].exp_s + skew_s) {
                *user_id = c->slots[i].user_id;
                if (exp_s)
                        *exp_s = c->slots[i].exp_s;
                hit = 1;
        }
        pthread_mutex_unlock(&c->mu);
        return hit;
}

void sk_jwt_cache_put(sk_jwt_cache_t *c, const unsigned char key[SK_JWT_CACHE_KEY_LEN],
                      int64_t user_id, int64_t exp_s, uint64_t generation)
{
        int32_t i;
        size_t b;

        if (!c->max)
                return;
        pthread_mutex_lock(&c->mu);
        if ((i = find(c, key)) < 0) {
                i = (int32_t)c->next;           /* the oldest slot of the ring */
                c->next = (c->next + 1) % c->max;
                if (c->slots[i].used)
                        unlink_slot(c, i);
                else
                        c->size++;
                memcpy(c->slots[i].key, key, SK_JWT_CACHE_KEY_LEN);
                b = bucket_of(c, key);
                c->slots[i].chain = c->buckets[b];
                c->buckets[b] = i;
                c->slots[i].used = 1;
        }
        c->slots[i].user_id = user_id;
        c->slots[i].exp_s = exp_s;
        c->slots[i].generation = generation;
        pthread_mutex_unlock(&c->mu);
}

size_t sk_jwt_cache_size(sk_jwt_cache_t *c)
{
        size_t n;

        pthread_mutex_lock(&c->mu);
        n = c->size;
        pthread_mutex_unlock(&c->mu);
        return n;
}
