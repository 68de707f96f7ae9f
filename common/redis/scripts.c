/* scripts.c: lookup of the embedded Lua sources (generated table sk_script_srcs, see
 * cmake/embed_lua.cmake) and the process-wide cache of their SHA1s.
 * The SHA is not computed here (hashing is not our product's business): it is the one
 * SCRIPT LOAD returned, recorded by redis.c. Before the first successful SCRIPT LOAD in
 * this process sk_script_sha() returns NULL. Thread-safe: the cache is written under a
 * mutex and published with a release store; readers use an acquire load. A SHA, once
 * set, never changes (same source, same SHA), so returned pointers stay valid. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "sk/scripts.h"


static const char *const script_names[SK_SCRIPT__N] = {
        [SK_SCRIPT_DEDUCT] = "deduct",
        [SK_SCRIPT_ROLLBACK] = "rollback",
        [SK_SCRIPT_CLAIM] = "claim",
        [SK_SCRIPT_RELEASE] = "release",
        [SK_SCRIPT_TAKE] = "take",
        [SK_SCRIPT_SETTLE] = "settle",
        [SK_SCRIPT_HOME] = "home",
};

static pthread_mutex_t sha_lock = PTHREAD_MUTEX_INITIALIZER;
static char sha_buf[SK_SCRIPT__N][41];
static atomic_int sha_set[SK_SCRIPT__N];

const sk_script_src_t *sk_script_get(sk_script_t s)
{
        if ((int)s < 0 || s >= SK_SCRIPT__N)
                return NULL;
        for (size_t i = 0; i < sk_script_nsrcs && sk_script_srcs[i].name; i++)
                if (strcmp(sk_script_srcs[i].name, script_names[s]) == 0)
                        return &sk_script_srcs[i];
        return NULL;
}

const char *sk_script_sha(sk_script_t s)
{
        if ((int)s < 0 || s >= SK_SCRIPT__N)
                return NULL;
        if (!atomic_load_explicit(&sha_set[s], memory_order_acquire))
                return NULL;
        return sha_buf[s];
}

void sk__script_set_sha(sk_script_t s, const char *sha, size_t len)
{
        if ((int)s < 0 || s >= SK_SCRIPT__N || len != 40)
                return;
        pthread_mutex_lock(&sha_lock);
        if (!atomic_load_explicit(&sha_set[s], memory_order_relaxed)) {
                /* Lowercase, as SCRIPT LOAD answers; written once. */
                for (size_t i = 0; i < 40; i++) {
                        char c = sha[i];
                        sha_buf[s][i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
                }
                sha_buf[s][40] = '\0';
                atomic_store_explicit(&sha_set[s], 1, memory_order_release);
        }
        pthread_mutex_unlock(&sha_lock);
}
