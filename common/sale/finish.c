/* finish.c: sk_order_finish (sk/order.h, DESIGN.md 3 and 13), what follows the DB commit
 * that paid, cancelled or closed an order: release.lua (release.c), then the order
 * cache DEL, with the one retry policy of both callers (the front's pay/cancel and the
 * consumer's closer): each step at most twice, a fresh connection after an unsure
 * answer. Both steps are idempotent (T:x makes a second release a no-op; DEL is DEL),
 * so a retry after SK_EUNKNOWN is safe.
 * What it does not do: touch the DB, log or count (the caller knows what a failure
 * means: the reconciler finishes a release left undone). */
#include <string.h>

#include "sk/order.h"

#define FINISH_ATTEMPTS 2

/* A connection in the caller's slot, opened if missing. */
static sk_err_t ensure(sk_redis_t **r, const sk_redis_url_t *url, int timeout_ms, char *errstr,
                       size_t errstr_size)
{
        if (*r)
                return SK_OK;
        *r = sk_redis_connect(url, timeout_ms, errstr, errstr_size);
        return *r ? SK_OK : SK_EAGAIN;
}

/* After an unsure answer the connection may be half-read or gone: drop it. */
static void drop_if_unsure(sk_redis_t **r, sk_err_t err)
{
        if (err == SK_EAGAIN || err == SK_EUNKNOWN) {
                sk_redis_close(*r);
                *r = NULL;
        }
}

sk_err_t sk_order_finish(sk_redis_t **r, const sk_redis_url_t *url, int timeout_ms,
                         const char *prefix, const sk_order_row_t *o, const char *by,
                         int64_t expire_extra_ms, sk_release_res_t *res, sk_finish_step_t *failed,
                         char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_EAGAIN;
        int attempt;

        memset(res, 0, sizeof(*res));
        *failed = SK_FINISH_OK;
        if (by) {
                for (attempt = 0; attempt < FINISH_ATTEMPTS && err != SK_OK; attempt++) {
                        if ((err = ensure(r, url, timeout_ms, errstr, errstr_size)) != SK_OK)
                                continue;
                        err = sk_release_run(*r, prefix, o, by, expire_extra_ms, res, errstr,
                                             errstr_size);
                        drop_if_unsure(r, err);
                }
                if (err != SK_OK) {
                        *failed = SK_FINISH_RELEASE;
                        return err;
                }
        }
        for (attempt = 0, err = SK_EAGAIN; attempt < FINISH_ATTEMPTS && err != SK_OK; attempt++) {
                if ((err = ensure(r, url, timeout_ms, errstr, errstr_size)) != SK_OK)
                        continue;
                err = sk_order_cache_del(*r, prefix, o->order_id, errstr, errstr_size);
                drop_if_unsure(r, err);
        }
        if (err != SK_OK)
                *failed = SK_FINISH_CACHE_DEL;
        return err;
}
