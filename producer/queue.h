/* producer/queue.h: the intrusive request list (requests linked through fr_req_t.qnext,
 * so appending never allocates) and, built on it, a small multi-producer multi-consumer
 * FIFO of requests (mutex + condition variable): the hand-off into each pool of the
 * front (pool.h). */
#pragma once
#include <pthread.h>
#include <stddef.h>

struct fr_req;

/* A singly linked FIFO of requests through qnext. Not thread-safe: its owner's lock (or
 * its one thread) guards it. A request is on at most one list at a time. */
typedef struct fr_req_list {
        struct fr_req *head, *tail;
} fr_req_list_t;

/** Append @p req at the tail of @p l (its qnext is overwritten). Not thread-safe. */
void fr_req_list_append(fr_req_list_t *l, struct fr_req *req);
/** Unlink and return the head of @p l (its qnext cleared), or NULL when empty. Not
 *  thread-safe. */
struct fr_req *fr_req_list_shift(fr_req_list_t *l);

typedef struct fr_queue {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        fr_req_list_t list;
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
