/* producer/kprod.c: the Kafka producers of seckill-front (producer/kprod.h).
 *
 * State, all here: the current producer `cur`, the list of retired producers, and the
 * health flags. Locking: prod_rw (a rwlock) guards `cur` and the membership of the
 * retired list. produce() and every reader of `cur` outside the health thread take it
 * for reading; the health thread (the only thread that replaces `cur`) takes it for
 * writing to swap, and may read `cur` without it. Retired producers are polled and,
 * once their queue is empty, unlinked (write lock) and destroyed by the poll thread only:
 * nobody can produce on a retired producer (it is not `cur` any more), so its queue only
 * shrinks, and once unlinked nobody else can reach it. The poll thread never holds
 * prod_rw while it polls: delivery reports served by rd_kafka_poll() may produce (a
 * re-produce, publish.c) and so take the read lock (holding a lock across the poll of a
 * retired producer deadlocked the poll thread once).
 * What it does not do: decide answers (publish.c serves the delivery reports). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "front.h"
#include "kprod.h"
#include "metrics.h"
#include "pool.h"
#include "sk/clock.h"
#include "sk/failpoint.h"
#include "sk/kafka.h"
#include "sk/log.h"
#include "sk/msg.h"

typedef struct fr_prod {
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        struct fr_prod *retired_next;
} fr_prod_t;

static pthread_rwlock_t prod_rw = PTHREAD_RWLOCK_INITIALIZER;
static fr_prod_t *cur;                  /* guarded by prod_rw (written by health only) */
static fr_prod_t *retired;              /* guarded by prod_rw; nodes freed by poll only */
static atomic_int nretired;
static atomic_int prod_fatal;           /* error_cb saw a fatal error on cur */
static atomic_int kafka_ok;             /* broker metadata ok and producer not fatal */
static atomic_int topics_ok;
static fr_thread_t t_poll;
static fr_kprod_dr_cb_t dr_cb;         /* set once by fr_kprod_start, before any producer */

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
        int is_cur;

        (void)opaque;
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
                /* Only the current producer's fatal error matters: a retired one was
                 * already replaced (its report may be served after the swap). */
                pthread_rwlock_rdlock(&prod_rw);
                is_cur = !cur || cur->rk == rk;
                pthread_rwlock_unlock(&prod_rw);
                if (!is_cur) {
                        SK_LOG(SK_WARN, "kafka_fatal_retired", "reason=\"%s\"", reason);
                        return;
                }
                atomic_store(&prod_fatal, 1);
                atomic_store(&kafka_ok, 0);
                SK_LOG(SK_ERROR, "kafka_fatal", "reason=\"%s\"", reason);
                return;
        }
        if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
                atomic_store(&kafka_ok, 0);
        SK_LOG(SK_WARN, "kafka_error", "err=%s reason=\"%s\"",
               rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

/* 1 if -X gave property @p name. */
static int user_prop(const char *name)
{
        int i;

        for (i = 0; i < g_fr.conf.nkafka_props; i++)
                if (!strcmp(g_fr.conf.kafka_props[i][0], name))
                        return 1;
        return 0;
}

static fr_prod_t *prod_new(char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *kconf;
        fr_prod_t *p;

        if (!(kconf = sk_kafka_conf_new(&g_fr.conf, SK_KAFKA_PRODUCER, errstr, errstr_size)))
                return NULL;
        /* Batching (each unless -X sets it): a batch leaves when it holds
         * batch.num.messages (32) or its first message is linger.ms (5) old. librdkafka
         * 2.0 waits out the last sub-millisecond of every linger with poll(..., 0) in a
         * loop (measured: ~11,500 such polls a second on the broker thread at 2 ms), so a
         * short linger spends up to half of it spinning; a full batch is sent at once, so
         * under load the wait is the batch's filling, not the linger (bench/README.md,
         * bench/front.sh rows of 2026-12-01 10:00). Acks and idempotence are untouched. */
        if ((!user_prop("linger.ms") && !user_prop("queue.buffering.max.ms") &&
             sk_kafka_conf_set(kconf, "linger.ms", "5", errstr, errstr_size) != SK_OK) ||
            (!user_prop("batch.num.messages") &&
             sk_kafka_conf_set(kconf, "batch.num.messages", "32", errstr, errstr_size) != SK_OK)) {
                rd_kafka_conf_destroy(kconf);
                return NULL;
        }
        rd_kafka_conf_set_dr_msg_cb(kconf, dr_cb);
        rd_kafka_conf_set_error_cb(kconf, error_cb);
        rd_kafka_conf_set_log_cb(kconf, sk_kafka_log_cb);
        if (!(p = calloc(1, sizeof(*p)))) {
                rd_kafka_conf_destroy(kconf);
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, errstr_size);
        if (!p->rk) {
                rd_kafka_conf_destroy(kconf);
                free(p);
                return NULL;
        }
        kconf = NULL; /* p->rk owns it */
        p->rkt = rd_kafka_topic_new(p->rk, g_fr.conf.topic, NULL);
        if (!p->rkt) {
                sk_seterr(errstr, errstr_size, "topic_new: %s",
                          rd_kafka_err2str(rd_kafka_last_error()));
                rd_kafka_destroy(p->rk);
                free(p);
                return NULL;
        }
        return p;
}

int fr_kprod_produce(fr_req_t *req)
{
        rd_kafka_resp_err_t err;
        char key[SK_MSG_KEY_MAX];
        size_t klen = sk_msg_key(key, sizeof(key), req->voucher_id, req->bucket); /* DESIGN.md 5 */

        pthread_rwlock_rdlock(&prod_rw);
        err = rd_kafka_producev(cur->rk, RD_KAFKA_V_RKT(cur->rkt),
                                RD_KAFKA_V_KEY(key, klen),
                                RD_KAFKA_V_VALUE(req->msg, req->msg_len),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_OPAQUE(req), RD_KAFKA_V_END);
        pthread_rwlock_unlock(&prod_rw);
        if (err) {
                SK_LOG(SK_WARN, "produce_refused", "trace_id=%s err=%s", req->st,
                       rd_kafka_err2name(err));
                if (err == RD_KAFKA_RESP_ERR__FATAL)
                        atomic_store(&prod_fatal, 1);
                return -1;
        }
        return 0;
}

int fr_kprod_fatal_now(void)
{
        int fatal;

        pthread_rwlock_rdlock(&prod_rw);
        fatal = atomic_load(&prod_fatal) ||
                rd_kafka_fatal_error(cur->rk, NULL, 0) != RD_KAFKA_RESP_ERR_NO_ERROR;
        pthread_rwlock_unlock(&prod_rw);
        return fatal;
}

void fr_kprod_raise_fatal(const char *why)
{
        pthread_rwlock_rdlock(&prod_rw);
        rd_kafka_test_fatal_error(cur->rk, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, why);
        pthread_rwlock_unlock(&prod_rw);
}

int fr_kprod_usable(void)
{
        return atomic_load(&kafka_ok) && !atomic_load(&prod_fatal);
}

int fr_kprod_ok(void)
{
        return atomic_load(&kafka_ok);
}

int fr_kprod_retired(void)
{
        return atomic_load(&nretired);
}

void fr_kprod_replace_if_fatal(void)
{
        char errstr[512];
        fr_prod_t *np;

        /* Failpoint front.kafka_fatal (error): raise a fatal producer error, as a broker
         * fencing the idempotent producer would, to exercise the replacement. */
        if (SK_FAILPOINT("front.kafka_fatal"))
                fr_kprod_raise_fatal("failpoint front.kafka_fatal");
        if (!atomic_load(&prod_fatal) && !rd_kafka_fatal_error(cur->rk, errstr, sizeof(errstr)))
                return;
        if (!(np = prod_new(errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "producer_replace_failed", "reason=\"%s\"", errstr);
                atomic_store(&kafka_ok, 0);
                return;
        }
        pthread_rwlock_wrlock(&prod_rw);
        cur->retired_next = retired;
        retired = cur;
        cur = np;
        atomic_fetch_add(&nretired, 1);
        pthread_rwlock_unlock(&prod_rw);
        atomic_store(&prod_fatal, 0);
        sk_metric_add(fr_m.producer_replaced, 1);
        SK_LOG(SK_WARN, "producer_replaced", "topic=%s", g_fr.conf.topic);
}

void fr_kprod_check_health(void)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err;
        char errstr[512];
        int ok = 0;

        if (!atomic_load(&topics_ok)) {
                if (sk_kafka_ensure_topics(&g_fr.conf, 3000, errstr, sizeof(errstr)) == SK_OK) {
                        atomic_store(&topics_ok, 1);
                        SK_LOG(SK_INFO, "topics_ready", "topic=%s", g_fr.conf.topic);
                } else {
                        SK_LOG(SK_WARN, "topics_not_ready", "topic=%s reason=\"%s\"",
                               g_fr.conf.topic, errstr);
                }
        }
        /* cur without the lock: only this thread replaces it, and it is never destroyed
         * while current. */
        err = rd_kafka_metadata(cur->rk, 0, cur->rkt, &md, 1500 /* ms */);
        if (!err && md && md->topic_cnt == 1 && !md->topics[0].err &&
            md->topics[0].partition_cnt > 0)
                ok = 1;
        if (md)
                rd_kafka_metadata_destroy(md);
        if (ok != atomic_load(&kafka_ok))
                SK_LOG(ok ? SK_INFO : SK_WARN, "kafka_health", "ok=%d err=%s", ok,
                       rd_kafka_err2name(err));
        atomic_store(&kafka_ok, ok && !atomic_load(&prod_fatal));
}

static void prod_free(fr_prod_t *p)
{
        rd_kafka_topic_destroy(p->rkt);
        rd_kafka_destroy(p->rk);
        free(p);
}

/* Poll thread: serve the retired producers' reports; unlink and destroy those whose
 * queue is empty (nothing left to report: their delivery reports were all served). */
static void poll_retired(void)
{
        fr_prod_t *o, **pp, *done = NULL;

        pthread_rwlock_rdlock(&prod_rw);
        o = retired;
        pthread_rwlock_unlock(&prod_rw);
        if (!o)
                return;
        /* Without the lock (see the top comment): nodes are unlinked and freed only here,
         * and new ones only ever go in front of the snapshot. */
        for (; o; o = o->retired_next)
                rd_kafka_poll(o->rk, 0);
        pthread_rwlock_wrlock(&prod_rw);
        for (pp = &retired; *pp;) {
                o = *pp;
                if (rd_kafka_outq_len(o->rk) == 0) {
                        *pp = o->retired_next;
                        o->retired_next = done;
                        done = o;
                        atomic_fetch_sub(&nretired, 1);
                } else {
                        pp = &o->retired_next;
                }
        }
        pthread_rwlock_unlock(&prod_rw);
        while (done) {
                o = done;
                done = o->retired_next;
                prod_free(o);
                SK_LOG(SK_INFO, "producer_destroyed", "retired_left=%d", atomic_load(&nretired));
        }
}

static void *poll_main(void *arg)
{
        (void)arg;
        while (!fr_thread_stopping(&t_poll)) {
                fr_prod_t *p;

                /* cur stays alive after the unlock: only this thread frees producers, and
                 * only retired ones. */
                pthread_rwlock_rdlock(&prod_rw);
                p = cur;
                pthread_rwlock_unlock(&prod_rw);
                rd_kafka_poll(p->rk, 50 /* ms */);
                poll_retired();
        }
        return NULL;
}

int fr_kprod_start(fr_kprod_dr_cb_t on_delivery, char *errstr, size_t errstr_size)
{
        dr_cb = on_delivery;
        if (!(cur = prod_new(errstr, errstr_size)))
                return -1;
        if (sk_kafka_ensure_topics(&g_fr.conf, 5000, errstr, errstr_size) == SK_OK)
                atomic_store(&topics_ok, 1);
        else
                SK_LOG(SK_WARN, "topics_not_ready", "topic=%s reason=\"%s\"", g_fr.conf.topic, errstr);
        /* First health check before serving, so /readyz and admission start truthful. */
        fr_kprod_replace_if_fatal();
        fr_kprod_check_health();
        if (fr_thread_start(&t_poll, poll_main) != 0) {
                sk_seterr(errstr, errstr_size, "cannot start the Kafka poll thread");
                return -1;
        }
        return 0;
}

void fr_kprod_stop_poll(void)
{
        fr_thread_stop(&t_poll);
}

void fr_kprod_purge_queue(void)
{
        rd_kafka_resp_err_t err;
        fr_prod_t *o;

        /* Shutdown: only the queue; in-flight requests keep their delivery reports (or
         * are answered 503 PENDING without a rollback). */
        pthread_rwlock_rdlock(&prod_rw);
        if ((err = rd_kafka_purge(cur->rk, RD_KAFKA_PURGE_F_QUEUE)))
                SK_LOG(SK_WARN, "kafka_purge", "err=%s", rd_kafka_err2name(err));
        for (o = retired; o; o = o->retired_next)
                rd_kafka_purge(o->rk, RD_KAFKA_PURGE_F_QUEUE);
        pthread_rwlock_unlock(&prod_rw);
}

int fr_kprod_outq_len(void)
{
        fr_prod_t *o;
        int n;

        pthread_rwlock_rdlock(&prod_rw);
        n = rd_kafka_outq_len(cur->rk);
        for (o = retired; o; o = o->retired_next)
                n += rd_kafka_outq_len(o->rk);
        pthread_rwlock_unlock(&prod_rw);
        return n;
}

static void prod_destroy(fr_prod_t *p)
{
        int i;

        if (!p)
                return;
        /* Purge what is left so destroy does not block on the broker (the process is
         * exiting; the reconciler owns any DEDUCT left undecided), then serve the purged
         * messages' delivery reports here (the poll thread is gone): an in-flight one
         * comes back POSSIBLY_PERSISTED (503 PENDING, no rollback, no re-produce after
         * the shutdown's purge), and each request's pipeline reference is released
         * instead of being lost with the destroyed message. At most about a second. */
        rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        for (i = 0; i < 20 && rd_kafka_outq_len(p->rk) > 0; i++)
                rd_kafka_poll(p->rk, 50 /* ms */);
        prod_free(p);
}

void fr_kprod_destroy_all(void)
{
        fr_prod_t *o, *next, *c;

        /* Every other thread has been joined. Unlink first (error_cb, served while a
         * producer is destroyed, must not look at one already freed), then destroy
         * without the lock: delivery reports are served here. */
        pthread_rwlock_wrlock(&prod_rw);
        c = cur;
        o = retired;
        cur = NULL;
        retired = NULL;
        atomic_store(&nretired, 0);
        pthread_rwlock_unlock(&prod_rw);
        prod_destroy(c);
        for (; o; o = next) {
                next = o->retired_next;
                prod_destroy(o);
        }
}
