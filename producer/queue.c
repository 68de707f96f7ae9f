/* producer/queue.c: the request FIFO of producer/queue.h. It owns no global state: each
 * pool (deduct.c, rollback.c, lookup.c) owns its queue. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue.h"
#include "req.h"

void fr_queue_init(fr_queue_t *q)
{
        memset(q, 0, sizeof(*q));
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
}

int fr_queue_push(fr_queue_t *q, fr_req_t *req)
{
        req->qnext = NULL;
        pthread_mutex_lock(&q->mu);
        if (q->closed) {
                pthread_mutex_unlock(&q->mu);
                return -1;
        }
        if (q->tail)
                q->tail->qnext = req;
        else
                q->head = req;
        q->tail = req;
        q->len++;
        pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
        return 0;
}

fr_req_t *fr_queue_pop(fr_queue_t *q, int max, int wait_ms)
{
        fr_req_t *first = NULL, *last = NULL;
        struct timespec ts;
        int n = 0;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait_ms / 1000;
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&q->mu);
        while (!q->head && !q->closed) {
                if (pthread_cond_timedwait(&q->cv, &q->mu, &ts) == ETIMEDOUT)
                        break;
        }
        while (q->head && n < max) {
                fr_req_t *req = q->head;

                q->head = req->qnext;
                if (!q->head)
                        q->tail = NULL;
                q->len--;
                req->qnext = NULL;
                if (last)
                        last->qnext = req;
                else
                        first = req;
                last = req;
                n++;
        }
        pthread_mutex_unlock(&q->mu);
        return first;
}

int fr_queue_drained(fr_queue_t *q)
{
        int done;

        pthread_mutex_lock(&q->mu);
        done = q->closed && !q->head;
        pthread_mutex_unlock(&q->mu);
        return done;
}

void fr_queue_close(fr_queue_t *q)
{
        pthread_mutex_lock(&q->mu);
        q->closed = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
}

size_t fr_queue_len(fr_queue_t *q)
{
        size_t n;

        pthread_mutex_lock(&q->mu);
        n = q->len;
        pthread_mutex_unlock(&q->mu);
        return n;
}

int fr_pool_start(fr_pool_t *p, int nthreads, void *(*fn)(void *))
{
        int i;

        fr_queue_init(&p->q);
        p->n = 0;
        if (!(p->threads = calloc((size_t)nthreads, sizeof(pthread_t))))
                return -1;
        for (i = 0; i < nthreads; i++) {
                if (pthread_create(&p->threads[i], NULL, fn, NULL) != 0)
                        return -1;
                p->n++;
        }
        return 0;
}

void fr_pool_stop(fr_pool_t *p)
{
        int i;

        fr_queue_close(&p->q);
        for (i = 0; i < p->n; i++)
                pthread_join(p->threads[i], NULL);
        free(p->threads);
        p->threads = NULL;
        p->n = 0;
}
