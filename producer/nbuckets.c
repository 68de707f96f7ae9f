/* producer/nbuckets.c: the front's table of voucher bucket counts (producer/nbuckets.h).
 * Direct-mapped by voucher id, NB_SLOTS entries under one mutex (touched once per batch
 * entry; the read on a miss runs outside the lock). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "nbuckets.h"
#include "sk/keys.h"
#include "sk/log.h"

#define NB_SLOTS 4096

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { int64_t voucher_id; int n; } slots[NB_SLOTS];

static size_t slot_of(int64_t voucher_id)
{
        uint64_t x = (uint64_t)voucher_id * UINT64_C(0x9E3779B97F4A7C15);

        return (size_t)(x >> 52) % NB_SLOTS;
}

void fr_nbuckets_learn(int64_t voucher_id, int n)
{
        size_t i = slot_of(voucher_id);

        if (n < 1 || n > SK_BUCKETS_MAX)
                return;
        pthread_mutex_lock(&mu);
        slots[i].voucher_id = voucher_id;
        slots[i].n = n;
        pthread_mutex_unlock(&mu);
}

int fr_nbuckets_get(sk_redis_t *r, int64_t voucher_id)
{
        size_t i = slot_of(voucher_id);
        char k_meta[SK_KEY_MAX], errstr[256];
        const char *argv[4] = { "HMGET", k_meta, "status", "buckets" };
        redisReply *reply = NULL;
        int n = 0;

        pthread_mutex_lock(&mu);
        if (slots[i].voucher_id == voucher_id)
                n = slots[i].n;
        pthread_mutex_unlock(&mu);
        if (n > 0)
                return n;
        sk_key_voucher(k_meta, g_fr.conf.redis_prefix, voucher_id, 0, SK_KEY_META);
        if (sk_redis_cmd(r, &reply, 4, argv, NULL, errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "nbuckets_read_failed", "voucher_id=%lld reason=\"%s\"",
                       (long long)voucher_id, errstr);
                return -1;
        }
        /* status nil: meta missing (0, not cached); buckets nil: a v3 voucher (1). */
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
            reply->element[0]->type == REDIS_REPLY_STRING) {
                n = 1;
                if (reply->element[1]->type == REDIS_REPLY_STRING) {
                        char *end = NULL;
                        long v = strtol(reply->element[1]->str, &end, 10);

                        n = (end && *end == '\0' && v >= 1 && v <= SK_BUCKETS_MAX) ? (int)v : 0;
                }
        }
        freeReplyObject(reply);
        if (n > 0)
                fr_nbuckets_learn(voucher_id, n);
        return n;
}
