/* producer/unknown.c: the front's instance of the unknown-voucher cache
 * (producer/unknown.h, DESIGN.md 15): the sold-out table of soldout_table.h with one
 * bucket per voucher, marked by a 10004 check that answered 404. A voucher created (or
 * put on sale) after the check is sold within the ttl, since the mark carries the time
 * the check's query started. */
#include "metrics.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "soldout_table.h"
#include "unknown.h"

/* Made-up ids remembered at once; beyond that the stalest is evicted (one more DB
 * query, never a wrong answer). */
#define FR_UNKNOWN_SLOTS 8192

static sk_soldout_t *cache;             /* NULL = off; set before threads start */

void fr_unknown_init(int ttl_ms)
{
        if (ttl_ms <= 0)
                return;
        if (!(cache = sk_soldout_new(FR_UNKNOWN_SLOTS, ttl_ms)))
                SK_LOG(SK_WARN, "unknown_voucher_cache_off", "reason=\"out of memory\"");
}

void fr_unknown_destroy(void)
{
        sk_soldout_free(cache);
        cache = NULL;
}

int fr_unknown_hit(const fr_req_t *req)
{
        if (!cache || !sk_soldout_all_empty(cache, req->voucher_id, sk_mono_ms()))
                return 0;
        sk_metric_add(fr_m.unknown_hits, 1);
        return 1;
}

void fr_unknown_note(const fr_req_t *req, int64_t checked_mono_ms)
{
        sk_soldout_mark(cache, req->voucher_id, 0, 1, checked_mono_ms);
}
