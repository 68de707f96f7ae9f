/* producer/pool.h: the two thread shapes of seckill-front, written once.
 *
 * A pool (fr_pool_t): a FIFO of requests (queue.h) served by N threads, each with its own
 * connections (fr_conns_t: hiredis and MySQL handles are never shared between threads).
 * A module describes its pool with hooks (fr_pool_ops_t): `run` serves each popped batch
 * and opens the thread's connections lazily, on first use (a Redis or DB that is down at
 * start-up stops nothing; run drops and reopens a broken one); `idle` runs on every
 * wake-up; `close` runs as the thread exits, before the pool closes its connections. The
 * rules every pool shares live in pool.c only:
 *   - a thread waits at most FR_POOL_WAIT_MS for work, then wakes (idle work, stop);
 *   - drained exit: a thread exits only once the queue is closed and empty, so every
 *     request queued before fr_pool_stop is still served (and its in-flight slot
 *     released) before the join returns;
 *   - answered drop (for the pools that set drop_answered): a request answered while it
 *     waited (the deadline's 503) is dropped unrun, its reference released, the drop
 *     counted if the pool names a counter; the client has moved on and nothing runs
 *     behind its back (DESIGN.md 3).
 * Pools: deduct.c (batches of --pipeline-max), probe.c, rollback.c, lookup.c,
 * payment.c, dbonly.c.
 *
 * A thread (fr_thread_t): one long-lived thread with a stop flag it polls (breaker probe,
 * deadline timer, health, degrade follower, Kafka poll). */
#pragma once
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "queue.h"
#include "sk/metrics.h"

struct fr_req;
struct sk_redis;
struct sk_db;

/* One pool thread's own connections: NULL until its run hook opens them; closed by the
 * pool when the thread exits. Only that thread touches them. */
typedef struct fr_conns {
        struct sk_redis *r;
        struct sk_db *db;
} fr_conns_t;

#define FR_POOL_WAIT_MS 200             /* the longest a pool thread waits for work */

/* What a pool's threads do. Static, borrowed by the pool until fr_pool_stop. */
typedef struct fr_pool_ops {
        /* Serve batch[0..n) (n >= 1, each request unlinked) on the thread's connections
         * @p c: run takes over the reference each request held in the queue (it answers
         * and fr_req_done()s it, or hands it on). Required. */
        void (*run)(fr_conns_t *c, struct fr_req **batch, int n);
        /* Every wake-up (work or not), before the batch is served; NULL = none. */
        void (*idle)(fr_conns_t *c);
        /* The thread exits (queue drained), its connections still open; NULL = none. */
        void (*close)(fr_conns_t *c);
        int drop_answered;              /* 1: the answered-drop rule above */
        sk_metric_t **dropped;          /* counts those drops (&fr_m.lk_dropped); NULL = none */
} fr_pool_ops_t;

typedef struct fr_pool {
        fr_queue_t q;
        const fr_pool_ops_t *ops;
        int batch_max;                  /* requests per run call */
        struct fr_pool_slot *slots;     /* one per thread (pool.c), nslots of them */
        int nslots;
        int n;                          /* threads started */
} fr_pool_t;

/** Initialise @p p's queue and start @p nthreads threads serving it with @p ops
 *  (borrowed, static), each popping up to @p batch_max requests per run call. Before
 *  anything is pushed; not thread-safe. @returns 0, or -1 (out of memory or
 *  pthread_create failed: the threads already started keep serving until
 *  fr_pool_stop, which must still be called). */
int fr_pool_start(fr_pool_t *p, const fr_pool_ops_t *ops, int nthreads, int batch_max);
/** Queue @p req (taking over the caller's pipeline reference). Thread-safe.
 *  @returns 0, or -1 when the pool is stopping (nothing queued: the caller still owns
 *  @p req and answers it). */
int fr_pool_push(fr_pool_t *p, struct fr_req *req);
/** fr_pool_push for a purchase or lookup whose refusal has nothing to undo: when the
 *  pool is stopping, answer 503 cause shutdown and release the pipeline reference
 *  (fr_req_done). Thread-safe. */
void fr_pool_push_or_refuse(fr_pool_t *p, struct fr_req *req);
/** 1 if @p max (> 0) requests or more are waiting: the caller answers 503 (a bounded
 *  queue, DESIGN.md 3). The check and the push are not one step: a few over the cap
 *  under a race is harmless, the queue cannot grow without bound. Thread-safe. */
int fr_pool_full(fr_pool_t *p, size_t max);
/** Requests waiting in @p p right now (a gauge; stale as soon as it returns). */
size_t fr_pool_depth(fr_pool_t *p);
/** Close the queue, let the threads drain it (the drained-exit rule), join them and free
 *  their state. Safe after a failed or absent fr_pool_start (nothing started). */
void fr_pool_stop(fr_pool_t *p);

/* One thread with a stop flag. */
typedef struct fr_thread {
        pthread_t tid;
        atomic_int stop;
        int started;
} fr_thread_t;

/** Clear @p th's stop flag and start @p fn(NULL) on a new thread. Not thread-safe (the
 *  owner's start-up). @returns 0, or -1 (pthread_create failed; stop is then a no-op). */
int fr_thread_start(fr_thread_t *th, void *(*fn)(void *));
/** 1 once fr_thread_stop was called: the thread's loop returns. Thread-safe. */
int fr_thread_stopping(fr_thread_t *th);
/** Set the stop flag and join the thread (which polls fr_thread_stopping). Not
 *  thread-safe (the owner's shutdown); a no-op when it never started. */
void fr_thread_stop(fr_thread_t *th);
