/* producer/orders.c: POST /api/v1/orders/{orderId}/cancel of seckill-front (DESIGN.md 3,
 * 13), served by the lookup pool's threads on their own DB and Redis connections.
 *
 * Cancel (UNPAID only): sk_order_end() CANCELLED, then release.lua -> 200 CANCELLED; a
 * repeat -> 200; PAID -> 409/10022; CLOSED -> 409/10021. An order of another user is 404
 * (as if it did not exist). Every commit is followed by the DEL of the order cache. A
 * Redis failure after the DB commit does not change the answer: the reconciler finishes
 * the release (DESIGN.md 13). Paying is not here: v5 pays only through the provider's
 * signed callback (payment.c); the buyer-facing /pay of v4 answers 404.
 * Transient DB errors are retried (fresh connection) up to 3 times, then 503; every
 * step is idempotent, so a client may repeat a request whose answer it lost. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "metrics.h"
#include "orders.h"
#include "req.h"
#include "sk/db.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/order.h"
#include "sk/redis.h"

#define ORDERS_REDIS_TIMEOUT_MS 1000
#define ORDERS_DB_TRIES 3

static sk_db_t *orders_db(sk_db_t **db)
{
        char errstr[256];

        if (!*db && !(*db = sk_db_connect(&g_fr.conf.mysql, 0, 5, errstr, sizeof(errstr))))
                SK_LOG(SK_WARN, "orders_db_connect", "reason=\"%s\"", errstr);
        return *db;
}

static void answer_status(fr_req_t *req, const char *status)
{
        char buf[160];

        snprintf(buf, sizeof(buf), "{\"code\":0,\"orderId\":\"%s\",\"orderStatus\":\"%s\"}",
                 req->so, status);
        fr_answer(req, 200, strdup(buf), 0);
}

/* After a commit: release.lua (this request ended the order), then the cache DEL
 * (sk_order_finish: each step at most twice, the connection renewed after an unsure
 * answer). */
static void after_commit(fr_req_t *req, sk_redis_t **r, const sk_order_row_t *o, const char *by)
{
        char errstr[256] = "";
        sk_release_res_t res;
        sk_finish_step_t failed;
        sk_err_t err = sk_order_finish(r, &g_fr.conf.redis, ORDERS_REDIS_TIMEOUT_MS,
                                       g_fr.conf.redis_prefix, o, by, g_fr.expire_extra_ms, &res,
                                       &failed, errstr, sizeof(errstr));

        if (err) {
                sk_metric_add(fr_m.o_release_err, 1);
                SK_LOG(SK_WARN, "order_release_failed", "order_id=%s by=%s err=%s reason=\"%s\"",
                       req->so, by, sk_err2str(err), errstr);
                sk_redis_close(*r);
                *r = NULL;
        }
}

static sk_err_t do_cancel(fr_req_t *req, sk_db_t *db, sk_redis_t **r, char *errstr, size_t n)
{
        sk_order_row_t o;
        int changed = 0;
        sk_err_t err = sk_order_end(db, req->order_id, req->user_id, SK_ORDER_CANCELLED,
                                    g_fr.conf.pay_grace_s, &changed, &o, errstr, n);

        if (err)
                return err;
        if (changed)
                sk_metric_add(fr_m.o_cancelled, 1);
        /* A repeat runs the (idempotent) release again: it completes one a failure cut. */
        if (o.status == SK_ORDER_CANCELLED)
                after_commit(req, r, &o, "cancel");
        switch (o.status) {
        case SK_ORDER_CANCELLED:
                answer_status(req, "CANCELLED");
                break;
        case SK_ORDER_PAID:
                fr_answer(req, 409, fr_json_err(SK_CODE_ORDER_PAID, "order already paid"), 0);
                break;
        case SK_ORDER_CLOSED:
                fr_answer(req, 409, fr_json_err(SK_CODE_ORDER_CLOSED, "order closed"), 0);
                break;
        default: /* still UNPAID after a failed conditional update: changed under us */
                sk_seterr(errstr, n, "order status changed during the cancel");
                return SK_EAGAIN;
        }
        return SK_OK;
}

void fr_order_action(fr_req_t *req, sk_db_t **db, sk_redis_t **r)
{
        char errstr[256] = "";
        sk_err_t err = SK_EAGAIN;
        int attempt;

        for (attempt = 0; attempt < ORDERS_DB_TRIES && err == SK_EAGAIN; attempt++) {
                if (!orders_db(db))
                        continue;
                err = do_cancel(req, *db, r, errstr, sizeof(errstr));
                if (err == SK_EAGAIN) {
                        SK_LOG(SK_WARN, "order_action_retry", "order_id=%s attempt=%d reason=\"%s\"",
                               req->so, attempt, errstr);
                        sk_db_close(*db);
                        *db = NULL;
                }
        }
        if (err == SK_OK)
                return;
        if (err == SK_ENOTFOUND) {
                fr_answer(req, 404, fr_json_err(SK_CODE_NOT_FOUND, "order not found"), 0);
                return;
        }
        SK_LOG(SK_WARN, "order_action_failed", "order_id=%s action=cancel err=%s reason=\"%s\"",
               req->so, sk_err2str(err), errstr);
        if (*db && err != SK_EAGAIN && err != SK_EINVAL) {
                sk_db_close(*db);
                *db = NULL;
        }
        fr_answer_503(req, "db", NULL, "database unavailable");
}
