/* producer/queue.h: a small multi-producer multi-consumer FIFO of requests (mutex +
 * condition variable), the hand-off between the front's thread pools (deduct, rollback,
 * lookup), and the pool of threads that serves one. Requests are linked through
 * fr_req_t.qnext, so pushing never allocates. */
#pragma once
#include <pthread.h>
#include <stddef.h>

struct fr_req;

typedef struct fr_queue {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        struct fr_req *head, *tail;
        size_t len;
        int closed;
} fr_queue_t;

/** Initialise an empty, open queue. Not thread-safe (before the queue is shared). */
void fr_queue_init(fr_queue_t *q);
/** Append @p req (its qnext is overwritten). Thread-safe.
 *  @returns 0, or -1 when @p q is closed (nothing queued: the caller still owns the
 *  reference it meant to hand over). */
int fr_queue_push(fr_queue_t *q, struct fr_req *req);
/** Pop up to @p max requests, linked by qnext (the caller owns their references).
 *  Blocks up to @p wait_ms (ms); NULL on timeout or when closed and empty. Thread-safe. */
struct fr_req *fr_queue_pop(fr_queue_t *q, int max, int wait_ms);
/** No more pushes; wakes every waiting pop. Thread-safe. */
void fr_queue_close(fr_queue_t *q);
/** 1 once @p q is closed and empty (a worker may exit). Thread-safe. */
int fr_queue_drained(fr_queue_t *q);
/** Requests waiting in @p q right now (a gauge; stale as soon as it returns). */
size_t fr_queue_len(fr_queue_t *q);

/* A pool of threads serving one queue (deduct workers, rollback worker, lookup pool). */
typedef struct fr_pool {
        fr_queue_t q;
        pthread_t *threads;
        int n;                          /* threads started */
} fr_pool_t;

/** Initialise @p p's queue and start @p nthreads threads running @p fn (arg NULL); each
 *  exits once fr_queue_drained(&p->q). @returns 0, or -1 (the threads already started
 *  keep running until fr_pool_stop). */
int fr_pool_start(fr_pool_t *p, int nthreads, void *(*fn)(void *));
/** Close the queue, let the threads drain it, join them. */
void fr_pool_stop(fr_pool_t *p);
