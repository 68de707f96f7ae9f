/* lease.c: snowflake worker ids leased in the database, and the generator they gate
 * (DESIGN.md 2; contract in sk/lease.h; table in ddl/0002_worker_lease.sql).
 *
 * The table's protocol (take, renew, release by conditional UPDATEs judged by NOW(3))
 * is lease_db.c's; the timing is lease_plan.c's. Here: the generator, the renewal thread
 * and the stamp clock. Renewal every lease/3, off the request path (the HTTP threads
 * only mint inside the window the thread last confirmed): holder still ours -> the
 * window's end becomes the mint_until read back; anyone else -> the lease is lost, the
 * window closes at once and the thread takes an id again (every lease/3 until it gets
 * one). An error or a timeout changes nothing (the window keeps its end, which the
 * stamps reach by themselves): a renewal whose autocommit UPDATE failed, applied or not,
 * is an unknown outcome (DESIGN.md 16); the next attempt comes at once on the next node
 * of the URL (sk_db_prefer_next_node; backoff once every node failed in a row),
 * reconnects with sk_db_resolve_begin (wsrep_sync_wait = 1 on Galera) and the window
 * moves again only when a read back there shows holder = us. So a database stall
 * shorter than the window's reach (at least lease/3: 10 s for the default lease) is
 * never seen by the minting: a front keeps admitting through Redis and Kafka while
 * Galera evicts a dead or frozen writer (DESIGN.md 16; docs/SCALING.md).
 *
 * Why a window reaching seconds ahead is safe. Two holders of one id never mint one
 * stamp value, by the compare-and-set argument below, which does not depend on how far
 * ahead a window reaches or on any clock. It is also cheap for the next holder: each
 * renewal writes lease_until = NOW(3) + lease, a third of a lease past the mint_until
 * it writes in the same UPDATE, and a takeover waits until lease_until (+ D for a
 * front's row, DESIGN.md 12) has passed on the database's clock, so a new holder
 * normally finds the old mint_until already behind it and mints at once.
 *
 * Stamps: the snowflake's clock here is the database's clock, estimated as the local
 * monotonic clock plus an offset measured at each take/renewal (NOW(3) read back minus
 * the monotonic time its reply arrived; re-anchored when it moved by more than
 * ANCHOR_SLACK_MS). Why this is safe whatever the skew: the window is a range of stamp
 * *values*, and the snowflake refuses any stamp outside it. Holder A only ever uses a
 * window end U that it read back while holder was A, and once B has taken X no
 * UPDATE of A matches (holder <> A), so A's U <= the M that B's compare-and-set read.
 * A's stamps are <= U <= M < B's stamps: disjoint, however wrong either clock estimate
 * is (an estimate only decides *when* a stamp value is reached, i.e. availability).
 * A free id normally has M < NOW(3) (mint_until trails lease_until by 1/3 lease), so a
 * new holder mints at once; an M far ahead (a database clock that stepped back) would
 * stall the new holder, so the lowest-usable search skips ids whose M is more than one
 * lease ahead, and prefers ids whose M is already past.
 *
 * common/ never logs: loss, re-acquisition and renewal trouble go to the binary's
 * callback once each (and to metrics). Threads: the caller's threads mint; one renewal
 * thread owns the DB connection after start. Lock order: g->mu, then the snowflake's
 * mutex; the snowflake's clock callback reads atomics only. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sk/lease.h"
#include "sk/lease_plan.h"
#include "lease_db.h"
#include "sk/clock.h"
#include "sk/db_outcome.h"
#include "sk/snowflake.h"

#define SK_WORKER_IDS 1024
#define MAX_BACKWARDS_MS 500  /* how long sk_idgen_next waits for a stamp clock that went back */
#define ANCHOR_SLACK_MS 5     /* re-anchor the stamp clock when it is off by more */

struct sk_idgen {
        sk_lease_db_t ld;              /* its connection is the renewal thread's after start */
        sk_lease_plan_t plan;          /* period, window, attempt timeout, retry waits */
        sk_snowflake_t *sf;
        int need_reconnect;            /* renewal thread only */
        int resolving;                 /* renewal thread only: resolution session open */
        int64_t test_offset_ms;
        sk_idgen_event_fn on_event;
        void *event_arg;
        sk_metric_t *m_held, *m_id, *m_lost, *m_reacq, *m_renew_err;

        _Atomic int64_t db_minus_mono; /* stamp clock = mono + this + test_offset_ms */
        _Atomic int anchored;
        _Atomic int worker_id;

        pthread_mutex_t mu;            /* guards everything below */
        pthread_cond_t cv;             /* signalled by sk_idgen_stop */
        int stop;
        int held;                      /* 1 while the row says holder = us (last we saw) */
        int renew_failing;             /* renewals failing since the last success */
        int64_t win_from_ms, win_until_ms;
        int thread_started;
        pthread_t thr;
};

/* ------------------------------------------------------------ clock and window */

static int64_t stamp_now(const sk_idgen_t *g)
{
        return sk_mono_ms() + atomic_load(&g->db_minus_mono) + g->test_offset_ms;
}

static int64_t stamp_clock(void *arg)
{
        return stamp_now(arg);
}

static void anchor(sk_idgen_t *g, const sk_lease_read_t *r)
{
        int64_t off = r->db_now_ms - r->mono_ms, cur = atomic_load(&g->db_minus_mono);

        if (!atomic_load(&g->anchored) || off - cur > ANCHOR_SLACK_MS || cur - off > ANCHOR_SLACK_MS)
                atomic_store(&g->db_minus_mono, off);
        atomic_store(&g->anchored, 1);
}

static void metric_set(sk_metric_t *m, int64_t v)
{
        if (m)
                sk_metric_set(m, v);
}

static void metric_inc(sk_metric_t *m)
{
        if (m)
                sk_metric_add(m, 1);
}

static void emit(sk_idgen_t *g, sk_idgen_event_t ev, int id, const char *detail)
{
        if (g->on_event)
                g->on_event(g->event_arg, ev, id, detail);
}

/* Hold (or drop) the lease of @p id with window [from, until]. Takes g->mu. */
static void set_held(sk_idgen_t *g, int id, int held, int64_t from_ms, int64_t until_ms)
{
        pthread_mutex_lock(&g->mu);
        g->held = held;
        g->win_from_ms = held ? from_ms : 0;
        g->win_until_ms = held ? until_ms : 0;
        atomic_store(&g->worker_id, id);
        if (held)
                (void)sk_snowflake_rebind(g->sf, id, from_ms, until_ms);
        else
                sk_snowflake_set_mint_window(g->sf, 0, 0);
        pthread_mutex_unlock(&g->mu);
        metric_set(g->m_held, sk_idgen_usable(g));
        metric_set(g->m_id, id);
}

/* ------------------------------------------------------------ renewal thread */

/* Sleep one period or until stopped. @returns 1 if stopped; *held = g->held. */
static int wait_period(sk_idgen_t *g, int64_t period_ms, int *held)
{
        struct timespec ts;
        int stop;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += period_ms / 1000;
        ts.tv_nsec += (period_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&g->mu);
        while (!g->stop && pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0)
                ;
        stop = g->stop;
        *held = g->held;
        pthread_mutex_unlock(&g->mu);
        return stop;
}

/* After a failed lease write or read (its outcome possibly unknown, DESIGN.md 16):
 * a fresh session whose reads wait for the cluster (sk_db_resolve_begin: wsrep_sync_wait
 * = 1 on Galera), kept until a read back shows holder = us (resolved()). Meanwhile the
 * window keeps its last confirmed end. Renewal thread only. */
static int db_usable(sk_idgen_t *g)
{
        if (g->need_reconnect) {
                if (sk_db_resolve_begin(g->ld.db, NULL, 0) != SK_OK)
                        return 0;
                g->need_reconnect = 0;
                g->resolving = 1;
        }
        return 1;
}

/* A read back showed holder = us: the resolution session goes back to normal reads. */
static void resolved(sk_idgen_t *g)
{
        if (g->resolving) {
                sk_db_resolve_end(g->ld.db);
                g->resolving = 0;
        }
}

/* What one attempt of the renewal thread found. */
enum { STEP_OK, STEP_FAILED, STEP_LOST, STEP_NONE };

/* One renewal of the held lease. @returns STEP_OK (renewed), STEP_FAILED (a DB error or
 * timeout: nothing known, the window keeps its end) or STEP_LOST (another holder). */
static int renew_step(sk_idgen_t *g)
{
        char errstr[256] = "";
        sk_lease_read_t r;
        int id = atomic_load(&g->worker_id), ours = 0;
        sk_err_t err = SK_EAGAIN;

        if (db_usable(g))
                err = sk_lease_db_renew(&g->ld, id, &r, &ours, errstr, sizeof(errstr));

        if (err != SK_OK) {
                g->need_reconnect = 1;
                metric_inc(g->m_renew_err);
                if (!g->renew_failing)
                        emit(g, SK_IDGEN_EV_RENEW_FAILED, id, errstr[0] ? errstr : "reconnect failed");
                g->renew_failing = 1;
                return STEP_FAILED;
        }
        if (g->renew_failing)
                emit(g, SK_IDGEN_EV_RENEW_RECOVERED, id, ours ? "renewed" : "lost");
        g->renew_failing = 0;
        if (!ours) {
                set_held(g, id, 0, 0, 0);   /* stop minting at once */
                metric_inc(g->m_lost);
                emit(g, SK_IDGEN_EV_LOST, id, "another process holds the id");
                return STEP_LOST;
        }
        resolved(g);
        anchor(g, &r);
        pthread_mutex_lock(&g->mu);
        g->win_until_ms = r.until_ms;
        (void)sk_snowflake_rebind(g->sf, id, g->win_from_ms, r.until_ms);
        pthread_mutex_unlock(&g->mu);
        return STEP_OK;
}

/* One attempt to lease again after a loss. @returns STEP_OK (leased), STEP_NONE
 * (nothing to take: try again next period) or STEP_FAILED (a DB error or timeout). */
static int reacquire_step(sk_idgen_t *g)
{
        char errstr[256] = "", detail[64];
        sk_lease_read_t r;
        int id = -1;

        if (!db_usable(g))
                return STEP_FAILED;
        if (sk_lease_db_take(&g->ld, &r, &id, errstr, sizeof(errstr)) != SK_OK) {
                g->need_reconnect = 1;
                return STEP_FAILED;
        }
        if (id < 0)
                return STEP_NONE;
        resolved(g);
        anchor(g, &r);
        set_held(g, id, 1, r.from_ms, r.until_ms);
        metric_inc(g->m_reacq);
        snprintf(detail, sizeof(detail), "mint_from_ms=%" PRId64, r.from_ms);
        emit(g, SK_IDGEN_EV_ACQUIRED, id, detail);
        return STEP_OK;
}

/* Renew every period; after a failed attempt, the next node of the URL at once (then
 * with backoff, sk/lease_plan.h), so a frozen or dead node costs one attempt timeout
 * and the window, confirmed seconds ahead, outlasts the stall. */
static void *renew_thread(void *arg)
{
        sk_idgen_t *g = arg;
        int64_t delay_ms = g->plan.period_ms;
        int held, failures = 0, step;

        while (!wait_period(g, delay_ms, &held)) {
                step = held ? renew_step(g) : STEP_LOST;
                if (step == STEP_LOST)
                        step = reacquire_step(g);   /* not held, or just lost: lease again now */
                if (step == STEP_FAILED) {
                        failures++;
                        sk_db_prefer_next_node(g->ld.db);
                } else {
                        failures = 0;
                }
                delay_ms = sk_lease_plan_delay_ms(&g->plan, failures);
                metric_set(g->m_held, sk_idgen_usable(g));
        }
        return NULL;
}

/* ------------------------------------------------------------ start / stop */

static void register_metrics(sk_idgen_t *g, sk_metrics_t *m)
{
        if (!m)
                return;
        g->m_held = sk_metrics_gauge(m, "seckill_worker_lease_held", NULL,
                                     "1 while this process holds its worker-id lease and may mint "
                                     "(window open), updated every lease/3");
        g->m_id = sk_metrics_gauge(m, "seckill_worker_id", NULL, "the leased snowflake worker id");
        g->m_lost = sk_metrics_counter(m, "seckill_worker_lease_lost_total", NULL,
                                       "worker-id leases found held by another process");
        g->m_reacq = sk_metrics_counter(m, "seckill_worker_lease_reacquired_total", NULL,
                                        "worker-id leases taken again after a loss");
        g->m_renew_err = sk_metrics_counter(m, "seckill_worker_lease_renew_errors_total", NULL,
                                            "worker-id lease renewals that failed (DB errors)");
}

static void destroy(sk_idgen_t *g)
{
        sk_db_close(g->ld.db);
        sk_snowflake_destroy(g->sf);
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
}

static sk_idgen_t *alloc_idgen(const sk_conf_t *conf, const sk_idgen_opts_t *opts)
{
        sk_idgen_t *g = calloc(1, sizeof(*g));
        pthread_condattr_t cattr;

        if (!g)
                return NULL;
        if (pthread_mutex_init(&g->mu, NULL) != 0) {
                free(g);
                return NULL;
        }
        pthread_condattr_init(&cattr);
        pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
        if (pthread_cond_init(&g->cv, &cattr) != 0) {
                pthread_condattr_destroy(&cattr);
                pthread_mutex_destroy(&g->mu);
                free(g);
                return NULL;
        }
        pthread_condattr_destroy(&cattr);
        g->ld.lease_ms = conf->worker_lease_ms;
        sk_lease_plan_init(&g->plan, conf->worker_lease_ms,
                           conf->mysql.nhosts > 1 ? conf->mysql.nhosts : 1);
        g->ld.fixed_id = conf->worker_id;
        g->ld.front_grace_ms = 2 * (int64_t)conf->kafka_delivery_timeout_ms + 1000;
        snprintf(g->ld.role, sizeof(g->ld.role), "%s", opts && opts->role ? opts->role : "admin");
        atomic_store(&g->worker_id, conf->worker_id < 0 ? 0 : conf->worker_id);
        sk_lease_db_make_holder(g->ld.holder, sizeof(g->ld.holder));
        if (opts) {
                g->test_offset_ms = opts->test_clock_offset_ms;
                g->on_event = opts->on_event;
                g->event_arg = opts->event_arg;
        }
        if (!(g->sf = sk_snowflake_new(atomic_load(&g->worker_id), MAX_BACKWARDS_MS,
                                       stamp_clock, g))) {
                destroy(g);
                return NULL;
        }
        return g;
}

sk_idgen_t *sk_idgen_start_opts(const sk_conf_t *conf, const sk_idgen_opts_t *opts,
                                sk_err_t *err, char *errstr, size_t errstr_size)
{
        sk_idgen_t *g;
        sk_lease_read_t r;
        int id = -1;

        *err = SK_EINVAL;
        if (!conf || conf->worker_id < -1 || conf->worker_id >= SK_WORKER_IDS ||
            conf->worker_lease_ms < 3) {
                sk_seterr(errstr, errstr_size, "idgen: invalid worker id or lease");
                return NULL;
        }
        if (opts && opts->role && strcmp(opts->role, "front") && strcmp(opts->role, "consumer") &&
            strcmp(opts->role, "admin") && strcmp(opts->role, "reconciler")) {
                sk_seterr(errstr, errstr_size, "idgen: unknown role");  /* spliced into SQL */
                return NULL;
        }
        if (!(g = alloc_idgen(conf, opts))) {
                *err = SK_ENOMEM;
                sk_seterr(errstr, errstr_size, "idgen: out of memory");
                return NULL;
        }
        /* Connects, statements and row-lock waits give up after the attempt timeout
         * (1..5 s, sk/lease_plan.h): a frozen node must cost one timeout, not the window,
         * and a hanging database must not hold sk_idgen_stop for long. */
        if (!(g->ld.db = sk_db_connect_io(&conf->mysql, 0, g->plan.attempt_timeout_s,
                                          g->plan.attempt_timeout_s, errstr, errstr_size))) {
                *err = SK_EAGAIN;
                destroy(g);
                return NULL;
        }
        if ((*err = sk_lease_db_take(&g->ld, &r, &id, errstr, errstr_size)) != SK_OK || id < 0) {
                if (*err == SK_OK)
                        *err = g->ld.fixed_id >= 0 ? SK_EEXIST : SK_EAGAIN;
                destroy(g);
                return NULL;
        }
        register_metrics(g, opts ? opts->metrics : NULL);
        anchor(g, &r);
        set_held(g, id, 1, r.from_ms, r.until_ms);
        if (pthread_create(&g->thr, NULL, renew_thread, g) != 0) {
                *err = SK_ENOMEM;
                sk_seterr(errstr, errstr_size, "idgen: cannot start the renewal thread");
                sk_lease_db_release(&g->ld, id, 0);
                destroy(g);
                return NULL;
        }
        g->thread_started = 1;
        *err = SK_OK;
        return g;
}

sk_idgen_t *sk_idgen_start(const sk_conf_t *conf, sk_err_t *err, char *errstr, size_t errstr_size)
{
        return sk_idgen_start_opts(conf, NULL, err, errstr, errstr_size);
}

sk_err_t sk_idgen_next(sk_idgen_t *g, int64_t *out, char *errstr, size_t errstr_size)
{
        /* The snowflake enforces the window on the stamp values itself (its own mutex). */
        return sk_snowflake_next(g->sf, out, errstr, errstr_size);
}

int sk_idgen_usable(sk_idgen_t *g)
{
        int64_t now_ms = stamp_now(g);
        int ok;

        pthread_mutex_lock(&g->mu);
        ok = g->held && now_ms >= g->win_from_ms && now_ms <= g->win_until_ms;
        pthread_mutex_unlock(&g->mu);
        return ok;
}

int sk_idgen_worker_id(const sk_idgen_t *g)
{
        return atomic_load(&((sk_idgen_t *)g)->worker_id);
}

const char *sk_idgen_holder(const sk_idgen_t *g)
{
        return g->ld.holder;
}

void sk_idgen_stop(sk_idgen_t *g)
{
        sk_idgen_stop_quiet(g, 0);
}

void sk_idgen_stop_quiet(sk_idgen_t *g, int quiet)
{
        if (!g)
                return;
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        sk_snowflake_set_mint_window(g->sf, 0, 0); /* mint nothing more */
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        if (g->thread_started)
                pthread_join(g->thr, NULL);
        /* The thread has stopped: g->held is final (a re-lease may have just landed). */
        sk_snowflake_set_mint_window(g->sf, 0, 0);
        if (g->held && db_usable(g))
                sk_lease_db_release(&g->ld, atomic_load(&g->worker_id), quiet);
        destroy(g);
}
