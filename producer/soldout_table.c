/* producer/soldout_table.c: the front's local sold-out cache (soldout_table.h, DESIGN.md 4).
 *
 * Layout: a power-of-two array of slots; voucher V may live in any of the PROBE slots
 * starting at hash(V). A slot holds one voucher, its bucket count and one mark time per
 * bucket (NONE = not marked).
 *
 * Concurrency: a seqlock per slot. Markers hold the cache mutex, so a voucher is in at
 * most one slot and only one thread writes at a time. Handing a slot to another
 * voucher makes its sequence odd, rewrites voucher, count and marks, then makes it even
 * again; a lookup reads the sequence, the fields, and the sequence again, and treats any
 * change (or an odd value) as a miss. Marks of the same voucher only move forward and
 * are stored without a sequence change: a lookup seeing some old and some new marks of
 * its own voucher still sees true marks. Fields are C11 atomics (relaxed inside the
 * seqlock's acquire/release fences), so no access is a data race. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "soldout_table.h"

#define PROBE 8                         /* slots a voucher may occupy after its hash */
#define MAX_SLOTS ((size_t)1 << 20)
#define NONE INT64_MIN                  /* bucket not marked */

typedef struct slot {
        _Atomic uint64_t seq;           /* odd while the slot changes voucher */
        _Atomic int64_t voucher;        /* 0 = free */
        _Atomic int nbuckets;
        _Atomic int64_t seen[SK_SOLDOUT_MAX_BUCKETS];
} slot_t;

struct sk_soldout {
        pthread_mutex_t mu;             /* serialises markers */
        size_t mask;                    /* slots - 1 */
        int64_t ttl_ms;
        slot_t *slot;                   /* owned, mask + 1 entries */
};

/* splitmix64's finaliser: snowflake ids differ mostly in their middle bits. */
static size_t slot_hash(int64_t v)
{
        uint64_t x = (uint64_t)v;

        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        x ^= x >> 31;
        return (size_t)x;
}

sk_soldout_t *sk_soldout_new(size_t slots, int64_t ttl_ms)
{
        sk_soldout_t *c;
        size_t n = 16, i;
        int b;

        if (ttl_ms <= 0 || slots == 0 || slots > MAX_SLOTS)
                return NULL;
        while (n < slots)
                n <<= 1;
        if (!(c = calloc(1, sizeof(*c))))
                return NULL;
        if (!(c->slot = calloc(n, sizeof(slot_t)))) {
                free(c);
                return NULL;
        }
        pthread_mutex_init(&c->mu, NULL);
        c->mask = n - 1;
        c->ttl_ms = ttl_ms;
        for (i = 0; i < n; i++)
                for (b = 0; b < SK_SOLDOUT_MAX_BUCKETS; b++)
                        atomic_init(&c->slot[i].seen[b], NONE);
        return c;
}

void sk_soldout_free(sk_soldout_t *c)
{
        if (!c)
                return;
        pthread_mutex_destroy(&c->mu);
        free(c->slot);
        free(c);
}

/* The newest mark of @p s (NONE if none): how recently the slot was useful. */
static int64_t slot_newest(const slot_t *s)
{
        int64_t best = NONE, t;
        int b;

        for (b = 0; b < SK_SOLDOUT_MAX_BUCKETS; b++) {
                t = atomic_load_explicit(&s->seen[b], memory_order_relaxed);
                if (t > best)
                        best = t;
        }
        return best;
}

/* Under the mutex: the slot of @p v, or the one to hand over to it (a free slot in the
 * probe window, else the one whose newest mark is oldest). *@p own is 1 if it is v's. */
static slot_t *slot_for_mark(sk_soldout_t *c, int64_t v, int *own)
{
        size_t h = slot_hash(v), i;
        slot_t *victim = NULL;
        int64_t victim_t = 0;

        for (i = 0; i < PROBE; i++) {
                slot_t *s = &c->slot[(h + i) & c->mask];
                int64_t sv = atomic_load_explicit(&s->voucher, memory_order_relaxed);
                int64_t t;

                if (sv == v) {
                        *own = 1;
                        return s;
                }
                t = sv == 0 ? NONE : slot_newest(s);
                if (!victim || t < victim_t) {
                        victim = s;
                        victim_t = t;
                }
        }
        *own = 0;
        return victim;
}

/* Under the mutex: give @p s to voucher @p v with @p n buckets and no marks. */
static void slot_assign(slot_t *s, int64_t v, int n)
{
        uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
        int b;

        atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&s->voucher, v, memory_order_relaxed);
        atomic_store_explicit(&s->nbuckets, n, memory_order_relaxed);
        for (b = 0; b < SK_SOLDOUT_MAX_BUCKETS; b++)
                atomic_store_explicit(&s->seen[b], NONE, memory_order_relaxed);
        atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

void sk_soldout_mark(sk_soldout_t *c, int64_t voucher_id, int bucket, int nbuckets,
                     int64_t seen_ms)
{
        slot_t *s;
        int own = 0;

        if (!c || voucher_id <= 0 || nbuckets < 1 || nbuckets > SK_SOLDOUT_MAX_BUCKETS ||
            bucket < 0 || bucket >= nbuckets || seen_ms == NONE)
                return;
        pthread_mutex_lock(&c->mu);
        s = slot_for_mark(c, voucher_id, &own);
        if (!own || atomic_load_explicit(&s->nbuckets, memory_order_relaxed) != nbuckets)
                slot_assign(s, voucher_id, nbuckets);
        if (atomic_load_explicit(&s->seen[bucket], memory_order_relaxed) < seen_ms)
                atomic_store_explicit(&s->seen[bucket], seen_ms, memory_order_relaxed);
        pthread_mutex_unlock(&c->mu);
}

static int fresh(const sk_soldout_t *c, int64_t seen, int64_t now_ms)
{
        return seen != NONE && now_ms - seen < c->ttl_ms;
}

/* Lock-free lookup: 1 if the slot of @p v has every bucket of @p only (or all of
 * them, @p only < 0) fresh at @p now_ms; 0 otherwise or if the slot changed hands
 * while it was read. */
static int lookup(const sk_soldout_t *c, int64_t v, int only, int64_t now_ms)
{
        size_t h, i;

        if (!c || v <= 0)
                return 0;
        h = slot_hash(v);
        for (i = 0; i < PROBE; i++) {
                const slot_t *s = &c->slot[(h + i) & c->mask];
                uint64_t q1, q2;
                int n, b, hit = 1;

                if (atomic_load_explicit(&s->voucher, memory_order_relaxed) != v)
                        continue;
                q1 = atomic_load_explicit(&s->seq, memory_order_acquire);
                if (q1 & 1)
                        return 0;
                if (atomic_load_explicit(&s->voucher, memory_order_relaxed) != v)
                        return 0;
                n = atomic_load_explicit(&s->nbuckets, memory_order_relaxed);
                if (only >= n)
                        hit = 0;
                for (b = only >= 0 ? only : 0; hit && b < n && (only < 0 || b == only); b++)
                        hit = fresh(c, atomic_load_explicit(&s->seen[b], memory_order_relaxed),
                                    now_ms);
                atomic_thread_fence(memory_order_acquire);
                q2 = atomic_load_explicit(&s->seq, memory_order_relaxed);
                return q1 == q2 ? hit : 0;
        }
        return 0;
}

int sk_soldout_all_empty(const sk_soldout_t *c, int64_t voucher_id, int64_t now_ms)
{
        return lookup(c, voucher_id, -1, now_ms);
}

int sk_soldout_bucket_empty(const sk_soldout_t *c, int64_t voucher_id, int bucket,
                            int64_t now_ms)
{
        if (bucket < 0 || bucket >= SK_SOLDOUT_MAX_BUCKETS)
                return 0;
        return lookup(c, voucher_id, bucket, now_ms);
}
