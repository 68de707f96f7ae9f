/* producer/req.c: request objects and their single answer (producer/req.h). Owns the
 * lock that makes the answer single (pend_mu), the pending list kept in deadline order,
 * the in-flight count and the shutdown level. Giving a purchase's in-flight slot back also
 * ends its count in vflight.c (it can no longer reach Kafka). The deadline timer (deadline.c) and the
 * shutdown (main.c) drive the list through fr_pending_expired/fr_pending_flush.
 * What it does not do: decide any answer (the pipeline stages do). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "metrics.h"
#include "req.h"
#include "sk/clock.h"
#include "sk/model.h"
#include "vflight.h"

static pthread_mutex_t pend_mu = PTHREAD_MUTEX_INITIALIZER; /* answers and the list */
static fr_req_t *pend_head, *pend_tail;
static atomic_int inflight;     /* purchases between admission and done */
static atomic_int stopping;     /* fr_stopping() */

fr_req_t *fr_req_new(void)
{
        fr_req_t *req = calloc(1, sizeof(*req));

        if (!req)
                return NULL;
        atomic_init(&req->refs, 1); /* the HTTP layer's reference */
        req->start_mono_ms = sk_mono_ms();
        return req;
}

void fr_req_ref(fr_req_t *req)
{
        atomic_fetch_add(&req->refs, 1);
}

void fr_req_unref(fr_req_t *req)
{
        if (!req)
                return;
        if (atomic_fetch_sub(&req->refs, 1) != 1)
                return;
        fr_vflight_leave(req->voucher_id, &req->vflight); /* a no-op unless still counted */
        free(req->body);
        free(req->msg);
        free(req->in_body);
        free(req->pay);
        free(req);
}

/* Caller holds pend_mu. */
static void pend_unlink(fr_req_t *req)
{
        if (!req->in_list)
                return;
        if (req->prev)
                req->prev->next = req->next;
        else
                pend_head = req->next;
        if (req->next)
                req->next->prev = req->prev;
        else
                pend_tail = req->prev;
        req->prev = req->next = NULL;
        req->in_list = 0;
}

/* Caller holds pend_mu. Every pending request gets the same deadline offset, so
 * appending keeps the list sorted by deadline and the timer only looks at the head. */
static void pend_add(fr_req_t *req)
{
        req->deadline_mono_ms = req->start_mono_ms + g_fr.deadline_ms;
        req->prev = pend_tail;
        req->next = NULL;
        if (pend_tail)
                pend_tail->next = req;
        else
                pend_head = req;
        pend_tail = req;
        req->in_list = 1;
}

void (*fr_req_answer_hook)(fr_req_t *req, int status);

int fr_answer(fr_req_t *req, int status, char *body, int retry_after_s)
{
        int resume;

        pthread_mutex_lock(&pend_mu);
        if (req->answered) {
                pthread_mutex_unlock(&pend_mu);
                free(body);
                return 0;
        }
        req->answered = 1;
        req->status = status;
        free(req->body);
        req->body = body;
        req->body_len = body ? strlen(body) : 0;
        req->retry_after_s = retry_after_s;
        pend_unlink(req);
        resume = req->suspended;
        req->suspended = 0;
        /* The connection stays suspended (and MHD's reference alive) until this call:
         * MHD then calls the handler again, which queues the answer. Resumed under
         * pend_mu: once the shutdown's fr_pending_flush() (same lock) has seen an empty
         * list, no resume is still on its way, so MHD_stop_daemon can neither find a
         * suspended connection (MHD_PANIC) nor race with a resume of a freed one. Lock
         * order pend_mu -> libmicrohttpd's internal mutex, as for the suspend. */
        if (resume)
                MHD_resume_connection(req->conn);
        pthread_mutex_unlock(&pend_mu);
        if (fr_req_answer_hook)
                fr_req_answer_hook(req, status);
        if (req->kind == FR_KIND_PURCHASE)
                sk_metric_observe(fr_m.latency,
                                  (double)(sk_mono_ms() - req->start_mono_ms) / 1000.0);
        return 1;
}

/* Assembled with memcpy, not snprintf: it answers most requests of a sale (bench/sale.sh
 * profile). The same bytes as snprintf into 512 bytes gave, except that a message too
 * long for them is now cut before its closing quote, so the object stays whole. */
char *fr_json_err(int code, const char *msg)
{
        static const char pre[] = "{\"code\":", mid[] = ",\"message\":\"", end[] = "\"}";
        char num[16], *out, *p;
        size_t nlen = 0, mlen = strlen(msg), cap;
        unsigned int u = code < 0 ? 0u - (unsigned int)code : (unsigned int)code;

        do
                num[sizeof(num) - 1 - nlen++] = (char)('0' + u % 10);
        while ((u /= 10) && nlen < sizeof(num) - 1);
        if (code < 0)
                num[sizeof(num) - 1 - nlen++] = '-';
        cap = 511 - (sizeof(pre) - 1) - nlen - (sizeof(mid) - 1);
        if (mlen > cap)
                mlen = cap;
        if (!(out = malloc(sizeof(pre) - 1 + nlen + sizeof(mid) - 1 + mlen + sizeof(end))))
                return NULL;
        p = out;
        memcpy(p, pre, sizeof(pre) - 1);
        p += sizeof(pre) - 1;
        memcpy(p, num + sizeof(num) - nlen, nlen);
        p += nlen;
        memcpy(p, mid, sizeof(mid) - 1);
        p += sizeof(mid) - 1;
        memcpy(p, msg, mlen);
        p += mlen;
        memcpy(p, end, sizeof(end));
        return out;
}

static sk_metric_t *cause_metric(const char *cause)
{
        static const struct { const char *cause; sk_metric_t **m; } map[] = {
                { "overload", &fr_m.u_overload }, { "kafka", &fr_m.u_kafka },
                { "redis", &fr_m.u_redis }, { "lease", &fr_m.u_lease },
                { "paused", &fr_m.u_paused }, { "failed", &fr_m.u_failed },
                { "shutdown", &fr_m.u_shutdown }, { "db", &fr_m.u_db },
                { "meta_missing", &fr_m.u_meta }, { "collision", &fr_m.u_collision },
                { "degrade", &fr_m.u_degrade },
        };
        size_t i;

        for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (!strcmp(cause, map[i].cause))
                        return *map[i].m;
        return fr_m.u_pending;
}

int fr_answer_503(fr_req_t *req, const char *cause, const char *state, const char *msg)
{
        char buf[640];
        int n;

        /* DESIGN.md 3: 10013 covers paused, Redis or Kafka unavailable, in-flight cap
         * reached and outcome not yet known; "cause" says which, "state" is the purchase
         * state the front established (PENDING or FAILED) once ids were minted. */
        n = snprintf(buf, sizeof(buf), "{\"code\":%d,\"cause\":\"%s\",\"message\":\"%s\"",
                     (int)SK_CODE_PAUSED, cause, msg ? msg : "try again later");
        if (state && req->trace_id)
                n += snprintf(buf + n, sizeof(buf) - (size_t)n,
                              ",\"state\":\"%s\",\"orderId\":\"%s\",\"traceId\":\"%s\"",
                              state, req->so, req->st);
        snprintf(buf + n, sizeof(buf) - (size_t)n, "}");
        /* Only the answer actually sent is counted (a later one, e.g. the rollback's
         * FAILED after the deadline's PENDING, is dropped by fr_answer). */
        if (!fr_answer(req, 503, strdup(buf), 1))
                return 0;
        if (!strcmp(cause, "timeout") || (state && !strcmp(state, "PENDING")))
                sk_metric_add(fr_m.u_pending, 1);
        else if (state && !strcmp(state, "FAILED"))
                sk_metric_add(fr_m.u_failed, 1);
        else
                sk_metric_add(cause_metric(cause), 1);
        return 1;
}

int fr_quick(fr_req_t *req, int status, char *body)
{
        req->kind = FR_KIND_QUICK;
        return fr_answer(req, status, body, status == 503 || status == 429 ? 1 : 0);
}

int fr_quick_503(fr_req_t *req, const char *cause, const char *msg)
{
        req->kind = FR_KIND_QUICK;
        return fr_answer_503(req, cause, NULL, msg);
}

void fr_req_done(fr_req_t *req)
{
        fr_inflight_release(req);
        fr_req_unref(req);
}

/* DESIGN.md 8: "503, state PENDING" while the deduct may have run or may still run;
 * none (a plain 503, like the other nothing-to-undo answers) once deduct.lua has taken
 * nothing (e.g. only the DB check that picks 404, 403 or 503 is outstanding). */
const char *fr_req_unanswered_state(fr_req_t *req)
{
        if (req->kind != FR_KIND_PURCHASE || atomic_load(&req->nothing_taken))
                return NULL;
        return "PENDING";
}

int fr_inflight_acquire(fr_req_t *req, int max)
{
        if (atomic_fetch_add(&inflight, 1) >= max) {
                atomic_fetch_sub(&inflight, 1);
                return -1;
        }
        req->inflight_counted = 1;
        return 0;
}

void fr_inflight_release(fr_req_t *req)
{
        /* Every path that gives the slot back has settled the purchase's Kafka side: the
         * last produce has its report, or none will ever be made (DESIGN.md 12 b). */
        fr_vflight_leave(req->voucher_id, &req->vflight);
        if (req->inflight_counted) {
                req->inflight_counted = 0;
                atomic_fetch_sub(&inflight, 1);
        }
}

int fr_inflight(void)
{
        return atomic_load(&inflight);
}

int fr_stopping(void)
{
        return atomic_load(&stopping);
}

void fr_set_stopping(int level)
{
        atomic_store(&stopping, level);
}

/* Once the shutdown has flushed the pending list for the last time (level 2, read under
 * pend_mu, the lock fr_pending_flush takes), nothing is suspended any more: the request
 * is answered 503 at once instead, so MHD_stop_daemon never finds a suspended
 * connection (it MHD_PANICs on one). */
int fr_req_suspend(fr_req_t *req, struct MHD_Connection *conn)
{
        pthread_mutex_lock(&pend_mu);
        if (atomic_load(&stopping) > 1) {
                pthread_mutex_unlock(&pend_mu);
                fr_inflight_release(req);
                fr_quick_503(req, "shutdown", "shutting down");
                return -1;
        }
        fr_req_ref(req); /* the pipeline's reference, dropped by fr_req_done() */
        pend_add(req);
        req->suspended = 1;
        MHD_suspend_connection(conn);
        pthread_mutex_unlock(&pend_mu);
        return 0;
}

fr_req_t *fr_pending_expired(int64_t now_ms)
{
        fr_req_t *req = NULL;

        pthread_mutex_lock(&pend_mu);
        if (pend_head && pend_head->deadline_mono_ms <= now_ms) {
                req = pend_head;
                fr_req_ref(req);
        }
        pthread_mutex_unlock(&pend_mu);
        return req;
}

void fr_pending_flush(const char *cause)
{
        for (;;) {
                fr_req_t *req;
                const char *state;

                pthread_mutex_lock(&pend_mu);
                req = pend_head;
                if (req)
                        fr_req_ref(req);
                pthread_mutex_unlock(&pend_mu);
                if (!req)
                        return;
                /* fr_answer unlinks it, so the loop advances. */
                state = fr_req_unanswered_state(req);
                fr_answer_503(req, cause, state, state ? "outcome not yet known" : "try again later");
                fr_req_unref(req);
        }
}

char *fr_req_take_body(fr_req_t *req, size_t *len)
{
        char *body;

        pthread_mutex_lock(&pend_mu);
        body = req->body;
        *len = req->body_len;
        req->body = NULL; /* the caller (MHD) owns it now */
        req->queued = 1;
        pthread_mutex_unlock(&pend_mu);
        return body;
}

int fr_req_is_answered(fr_req_t *req)
{
        int answered;

        pthread_mutex_lock(&pend_mu);
        answered = req->answered;
        pthread_mutex_unlock(&pend_mu);
        return answered;
}

int fr_req_answer_ready(fr_req_t *req)
{
        int ready;

        pthread_mutex_lock(&pend_mu);
        ready = req->answered && !req->queued;
        pthread_mutex_unlock(&pend_mu);
        return ready;
}
