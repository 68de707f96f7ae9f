/* producer/vlimit.c: per-client token buckets for uncached JWT verifications
 * (producer/vlimit.h, DESIGN.md 15). A fixed table of slots, two candidate slots per
 * key (hash and hash + 1), 64 locks over the slots; tokens counted in thousandths so
 * the refill needs no floating point. A key evicted by a crowd of other keys comes back
 * with a full bucket: a botnet of many addresses gets each address's burst, which is
 * the price of a bounded table.
 * What it does not do: decide who the client is (identity.c) or answer (http.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vlimit.h"

#define SLOTS 4096
#define STRIPES 64

typedef struct slot {
        unsigned char key[FR_VLIMIT_KEY_LEN];
        int used;
        int64_t milli;          /* tokens x 1000 */
        int64_t last_ms;
} slot_t;

static slot_t *slots;
static pthread_mutex_t locks[STRIPES];
static int64_t rate;            /* tokens per second = thousandths per ms */

int fr_vlimit_init(int rate_per_s)
{
        if (rate_per_s <= 0)
                return 0;
        if (!(slots = calloc(SLOTS, sizeof(*slots))))
                return -1;
        for (int i = 0; i < STRIPES; i++)
                pthread_mutex_init(&locks[i], NULL);
        rate = rate_per_s;
        return 0;
}

void fr_vlimit_destroy(void)
{
        if (!slots)
                return;
        for (int i = 0; i < STRIPES; i++)
                pthread_mutex_destroy(&locks[i]);
        free(slots);
        slots = NULL;
}

static uint32_t hash(const unsigned char *key)
{
        uint32_t h = 2166136261u;       /* FNV-1a */

        for (int i = 0; i < FR_VLIMIT_KEY_LEN; i++)
                h = (h ^ key[i]) * 16777619u;
        return h;
}

/* The bucket of slot @p s refilled to @p now_ms. */
static int64_t refilled(const slot_t *s, int64_t now_ms)
{
        int64_t cap = rate * 1000, m = s->milli;

        if (now_ms > s->last_ms)
                m += (now_ms - s->last_ms) * rate;
        return m > cap ? cap : m;
}

int fr_vlimit_take(const unsigned char *key, int64_t now_ms)
{
        /* Both candidates in one stripe: the stripe is chosen by the pair's first slot
         * rounded down to an even index. */
        uint32_t i = hash(key) % SLOTS & ~1u;
        pthread_mutex_t *mu;
        slot_t *s = NULL, *a, *b;
        int ok;

        if (!slots)
                return 1;
        a = &slots[i];
        b = &slots[i + 1];
        mu = &locks[(i / 2) % STRIPES];
        pthread_mutex_lock(mu);
        if (a->used && !memcmp(a->key, key, FR_VLIMIT_KEY_LEN))
                s = a;
        else if (b->used && !memcmp(b->key, key, FR_VLIMIT_KEY_LEN))
                s = b;
        if (!s) {
                /* A free slot, else one whose bucket is full again (idle), else the one
                 * seen least recently. */
                if (!a->used || (b->used && refilled(a, now_ms) == rate * 1000))
                        s = a;
                else if (!b->used || refilled(b, now_ms) == rate * 1000)
                        s = b;
                else
                        s = a->last_ms <= b->last_ms ? a : b;
                memcpy(s->key, key, FR_VLIMIT_KEY_LEN);
                s->used = 1;
                s->milli = rate * 1000;
                s->last_ms = now_ms;
        }
        s->milli = refilled(s, now_ms);
        s->last_ms = now_ms > s->last_ms ? now_ms : s->last_ms;
        ok = s->milli >= 1000;
        if (ok)
                s->milli -= 1000;
        pthread_mutex_unlock(mu);
        return ok;
}
