/* producer/soldout.c: the front's instance of the local sold-out cache
 * (producer/soldout.h, DESIGN.md 4): marks per (voucher, bucket) from deduct.lua and
 * take.lua answers; a voucher is a hit once every bucket is marked. */
#include "front.h"
#include "metrics.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "soldout_table.h"
#include "soldout.h"

/* Voucher entries of the table: vouchers sold out at the same moment on one front.
 * Beyond that the stalest is evicted (a Redis call, never a wrong answer). */
#define FR_SOLDOUT_SLOTS 1024

static sk_soldout_t *cache;             /* NULL = off; set before threads start */

void fr_soldout_init(int ttl_ms)
{
        if (ttl_ms <= 0)
                return;
        if (!(cache = sk_soldout_new(FR_SOLDOUT_SLOTS, ttl_ms)))
                SK_LOG(SK_WARN, "soldout_cache_off", "reason=\"out of memory\"");
}

void fr_soldout_destroy(void)
{
        sk_soldout_free(cache);
        cache = NULL;
}

int fr_soldout_hit(const fr_req_t *req)
{
        if (!cache || !sk_soldout_all_empty(cache, req->voucher_id, sk_mono_ms()))
                return 0;
        sk_metric_add(fr_m.soldout_hits, 1);
        return 1;
}

void fr_soldout_note(const fr_req_t *req, int bucket)
{
        sk_soldout_mark(cache, req->voucher_id, bucket, req->buckets > 0 ? req->buckets : 1,
                        req->start_mono_ms);
}

int fr_soldout_bucket_empty(const fr_req_t *req, int bucket)
{
        return cache && sk_soldout_bucket_empty(cache, req->voucher_id, bucket, sk_mono_ms());
}
