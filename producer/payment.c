/* producer/payment.c: POST /api/v1/payments/callback of seckill-front (DESIGN.md 3, 13,
 * 15), called by the payment provider (or its adapter), never by a buyer.
 *
 * HTTP thread (fr_payment_route): X-Payment-Signature checked against the current keys
 * (sk/paysig.h: HMAC-SHA256 over t + "." + raw body, any v1= may match, constant-time,
 * t within +-300 s of this host's clock) -> 401/10008; then the body, a JSON object of
 * strings {"orderId","providerTxnId","amount" (minor units),"currency"} -> 400/10001 if
 * malformed; then the payment pool (a bounded queue: beyond FR_PAY_QUEUE_MAX, 503 +
 * Retry-After at once).
 * Payment pool (SECKILL_FRONT_PAY_THREADS threads, each its own DB and Redis connection;
 * never the lookup queue): sk_payment_decide (one transaction that records tb_payment),
 * transient DB errors retried up to 3 times on a fresh connection, then 503; after the
 * commit the order cache DEL (paid) or release.lua + DEL (closed on the spot). The
 * answer: 200 PAID; 409/10024 duplicate; 409/10021 late, closed, cancelled, failed;
 * 422/10023 amount, currency (each refund_due answer carries "refund":true and its
 * "reason"); 409/10025 a reused txn id; 503 no outcome yet (nothing recorded).
 * Keys: SECKILL_PAYMENT_KEYS_FILE, one secret per line (rotation: several lines),
 * loaded at start (a bad file is a configuration error) and re-read on SIGHUP or within
 * 10 s of a change of the file (its inode, size or mtime, like the JWKS; a failed reload
 * keeps the old keys; keyset.h). The current set is one reference-counted, immutable
 * object: the HTTP thread takes a reference and verifies outside the lock, so no signature
 * work is done under a lock every callback shares. No file configured -> the route
 * answers 404.
 * What it does not do: decide anything itself (common/sale/payment.c does) or refund
 * (the merchant, seckill-admin payment refunds / refunded). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "keyset.h"
#include "metrics.h"
#include "payment.h"
#include "payment_body.h"
#include "pool.h"
#include "req.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/ids.h"
#include "sk/lease.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/order.h"
#include "sk/payment.h"
#include "sk/paysig.h"
#include "sk/redis.h"

#define PAY_DB_TRIES 3
#define PAY_REDIS_TIMEOUT_MS 1000

static fr_keyset_t pay_keys = {
        .ev_loaded = "payment_keys_loaded", .ev_reloaded = "payment_keys_reloaded",
        .ev_failed = "payment_keys_reload_failed", .var = "SECKILL_PAYMENT_KEYS_FILE",
        .kind = &sk_paysig_keyfile,
        .m_reloads = &fr_m.pay_key_reloads, .m_failed = &fr_m.pay_key_reload_fail,
        .mu = PTHREAD_MUTEX_INITIALIZER,
};                                      /* NULL keys = route off */
static fr_pool_t pool;                  /* the payment queue and its threads */

/* ------------------------------------------------------------------- keys ---- */

int fr_payment_init(char *errstr, size_t errstr_size)
{
        pay_keys.path = g_fr.payment_keys_file;
        return fr_keyset_init(&pay_keys, errstr, errstr_size);
}

int fr_payment_enabled(void)
{
        return g_fr.payment_keys_file[0] != '\0';
}

void fr_payment_tick(int hup)
{
        fr_keyset_tick(&pay_keys, hup);
}

/* ------------------------------------------------------------ HTTP thread ---- */

void fr_payment_route(fr_req_t *req, struct MHD_Connection *conn, sk_idgen_t *gen)
{
        char errstr[256];
        const char *hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Payment-Signature");
        const char *why = "";
        sk_paysig_res_t vr;
        sk_payment_t *p;
        sk_keyfile_set_t *ks;

        ks = fr_keyset_get(&pay_keys); /* a reference: no lock held during the HMACs */
        vr = sk_paysig_verify(ks, hdr, req->in_body ? req->in_body : "", req->in_len,
                              sk_now_ms() / 1000, SK_PAYSIG_TOLERANCE_S, &why);
        sk_keyfile_set_free(ks);
        if (vr != SK_PAYSIG_OK) {
                sk_metric_add(fr_m.pay_sig_refused, 1);
                SK_LOG(SK_DEBUG, "payment_signature_refused", "reason=\"%s\"", why);
                fr_quick(req, 401, fr_json_err(SK_CODE_BAD_SIGNATURE, why));
                return;
        }
        if (!(p = calloc(1, sizeof(*p)))) {
                fr_quick_503(req, "overload", "out of memory");
                return;
        }
        if ((why = fr_payment_parse_body(req->in_body ? req->in_body : "", req->in_len, p))) {
                free(p);
                fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, why));
                return;
        }
        /* This delivery's nonce: its tb_payment row is "ours" only with it (DESIGN.md 16
         * "Answers" (a)). */
        if (sk_idgen_next(gen, &p->attempt_id, errstr, sizeof(errstr)) != SK_OK) {
                free(p);
                SK_LOG(SK_DEBUG, "idgen_unavailable", "reason=\"%s\"", errstr);
                fr_quick_503(req, "lease", "id generator unavailable");
                return;
        }
        req->pay = p; /* the request owns it now */
        req->order_id = p->order_id;
        sk_id_format(p->order_id, req->so);
        if (fr_stopping() > 1) {
                fr_quick_503(req, "shutdown", "shutting down");
                return;
        }
        if (fr_pool_full(&pool, FR_PAY_QUEUE_MAX)) {
                sk_metric_add(fr_m.pay_full, 1);
                fr_quick_503(req, "overload", "too many payment callbacks waiting");
                return;
        }
        req->kind = FR_KIND_PAYMENT;
        if (fr_req_suspend(req, conn) != 0)
                return; /* answered 503 (shutdown) */
        fr_pool_push_or_refuse(&pool, req);
}

/* ------------------------------------------------------------ pool thread ---- */

typedef fr_conns_t pay_conn_t;          /* the payment thread's own connections (pool.h) */

/* The answer of a decision (the body is malloc'd for fr_answer). */
static void answer(fr_req_t *req, const sk_payment_res_t *res)
{
        char buf[320];
        int status = 409, code = SK_CODE_ORDER_CLOSED;
        const char *msg = "order closed or cancelled: refund the payment";

        switch (res->verdict) {
        case SK_PAYV_APPLIED:
                sk_metric_add(fr_m.pay_applied, 1);
                snprintf(buf, sizeof(buf), "{\"code\":0,\"orderId\":\"%s\",\"orderStatus\":\"PAID\"}",
                         req->so);
                fr_answer(req, 200, strdup(buf), 0);
                return;
        case SK_PAYV_TXN_REUSED:
                sk_metric_add(fr_m.pay_txn_reused, 1);
                SK_LOG(SK_WARN, "payment_txn_reused", "order_id=%s reason=\"the txn id's row "
                       "names another order, amount or currency\"", req->so);
                fr_answer(req, 409, fr_json_err(SK_CODE_PAY_TXN_REUSED, "providerTxnId already "
                                                "recorded for another order, amount or currency"), 0);
                return;
        case SK_PAYV_NO_OUTCOME:
                sk_metric_add(fr_m.pay_no_outcome, 1);
                fr_answer_503(req, "pending", NULL, "the order's outcome is not known yet");
                return;
        case SK_PAYV_REFUND_DUE:
                break;
        }
        sk_metric_add(fr_m.pay_refund_due, 1);
        switch (res->reason) {
        case SK_PAYREASON_DUPLICATE:
                code = SK_CODE_PAY_DUPLICATE;
                msg = "order already paid by another transaction: refund the payment";
                break;
        case SK_PAYREASON_AMOUNT:
        case SK_PAYREASON_CURRENCY:
                status = 422;
                code = SK_CODE_PAY_MISMATCH;
                msg = "amount or currency differs from the order's: refund the payment";
                break;
        default:
                break;
        }
        snprintf(buf, sizeof(buf), "{\"code\":%d,\"message\":\"%s\",\"orderId\":\"%s\","
                 "\"refund\":true,\"reason\":\"%s\"}", code, msg, req->so,
                 sk_payreason_str(res->reason));
        fr_answer(req, status, strdup(buf), 0);
}

/* After the commit: the cache DEL of a paid order, release.lua + DEL of one closed on
 * the spot. A Redis failure does not change the answer (the reconciler finishes a
 * release; DESIGN.md 13). */
static void after_commit(pay_conn_t *pc, fr_req_t *req, const sk_payment_res_t *res)
{
        char errstr[256] = "";
        sk_release_res_t rr;
        sk_finish_step_t failed;
        const char *by = res->closed_now ? "close" : NULL;
        sk_err_t err;

        if (res->paid_now)
                sk_metric_add(fr_m.o_paid, 1);
        else if (res->closed_now)
                sk_metric_add(fr_m.o_closed, 1);
        else
                return;
        err = sk_order_finish(&pc->r, &g_fr.conf.redis, PAY_REDIS_TIMEOUT_MS, g_fr.conf.redis_prefix,
                              &res->order, by, g_fr.expire_extra_ms, &rr, &failed, errstr,
                              sizeof(errstr));
        if (err) {
                if (by)
                        sk_metric_add(fr_m.o_release_err, 1);
                SK_LOG(SK_WARN, "order_release_failed", "order_id=%s by=%s err=%s reason=\"%s\"",
                       req->so, by ? by : "pay", sk_err2str(err), errstr);
                sk_redis_close(pc->r);
                pc->r = NULL;
        }
}

static void do_payment(pay_conn_t *pc, fr_req_t *req)
{
        const sk_payment_t *p = req->pay;
        sk_payment_res_t res;
        char errstr[256] = "";
        sk_err_t err = SK_EAGAIN;
        int attempt;

        for (attempt = 0; attempt < PAY_DB_TRIES && err == SK_EAGAIN; attempt++) {
                if (!pc->db && !(pc->db = sk_db_connect(&g_fr.conf.mysql, 0, 5, errstr,
                                                        sizeof(errstr)))) {
                        SK_LOG(SK_WARN, "payment_db_connect", "reason=\"%s\"", errstr);
                        continue;
                }
                err = sk_payment_decide(pc->db, p, g_fr.conf.pay_grace_s, &res, errstr,
                                        sizeof(errstr));
                if (err == SK_EAGAIN) {
                        SK_LOG(SK_WARN, "payment_retry", "order_id=%s attempt=%d reason=\"%s\"",
                               req->so, attempt, errstr);
                        sk_db_close(pc->db);
                        pc->db = NULL;
                }
        }
        if (err == SK_OK) {
                SK_LOG(SK_INFO, "payment_decided", "order_id=%s amount=%" PRId64 " currency=%s "
                       "verdict=%d reason=%s repeat=%d", req->so, p->amount_minor, p->currency,
                       (int)res.verdict, sk_payreason_str(res.reason), res.repeat);
                after_commit(pc, req, &res);
                answer(req, &res);
                return;
        }
        SK_LOG(SK_WARN, "payment_failed", "order_id=%s err=%s reason=\"%s\"", req->so,
               sk_err2str(err), errstr);
        if (pc->db && err != SK_EAGAIN && err != SK_EINVAL) {
                sk_db_close(pc->db);
                pc->db = NULL;
        }
        fr_answer_503(req, "db", NULL, "database unavailable");
}

/* One callback on a payment thread. The pool's answered drop: a callback answered while
 * it waited (the deadline's 503) is dropped unrun (the provider retries; nothing was
 * decided). */
static void pay_run(pay_conn_t *pc, fr_req_t **batch, int n)
{
        (void)n; /* batches of one */
        do_payment(pc, batch[0]);
        fr_req_done(batch[0]);
}

static const fr_pool_ops_t pay_ops = { .run = pay_run, .drop_answered = 1 };

int fr_payment_start(char *errstr, size_t errstr_size)
{
        if (!fr_payment_enabled())
                return 0;
        if (fr_pool_start(&pool, &pay_ops, g_fr.pay_threads, 1) != 0) {
                sk_seterr(errstr, errstr_size, "cannot start the payment threads");
                return -1;
        }
        return 0;
}

void fr_payment_stop(void)
{
        fr_pool_stop(&pool); /* a no-op when the route is off */
        fr_keyset_destroy(&pay_keys);
}
