/* producer/queue.c: the request list and FIFO of producer/queue.h. It owns no global
 * state: each pool (pool.c) owns its queue, each other list its owner. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "queue.h"
#include "req.h"

void fr_req_list_append(fr_req_list_t *l, fr_req_t *req)
{
        req->qnext = NULL;
        if (l->tail)
                l->tail->qnext = req;
        else
                l->head = req;
        l->tail = req;
}

fr_req_t *fr_req_list_shift(fr_req_list_t *l)
{
        fr_req_t *req = l->head;

        if (!req)
                return NULL;
        l->head = req->qnext;
        if (!l->head)
                l->tail = NULL;
        req->qnext = NULL;
        return req;
}

void fr_queue_init(fr_queue_t *q)
{
        memset(q, 0, sizeof(*q));
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
}

int fr_queue_push(fr_queue_t *q, fr_req_t *req)
{
        pthread_mutex_lock(&q->mu);
        if (q->closed) {
                pthread_mutex_unlock(&q->mu);
                return -1;
        }
        fr_req_list_append(&q->list, req);
        q->len++;
        pthread_mutex_unlock(&q->mu);
        /* After the unlock: the woken worker does not wake only to wait for the mutex the
         * pusher still holds (the queue outlives every push: pools stop after HTTP). */
        pthread_cond_signal(&q->cv);
        return 0;
}

fr_req_t *fr_queue_pop(fr_queue_t *q, int max, int wait_ms)
{
        fr_req_list_t out = { NULL, NULL };
        struct timespec ts;
        fr_req_t *req;
        int n = 0;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait_ms / 1000;
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&q->mu);
        while (!q->list.head && !q->closed) {
                if (pthread_cond_timedwait(&q->cv, &q->mu, &ts) == ETIMEDOUT)
                        break;
        }
        while (n < max && (req = fr_req_list_shift(&q->list)) != NULL) {
                q->len--;
                fr_req_list_append(&out, req);
                n++;
        }
        pthread_mutex_unlock(&q->mu);
        return out.head;
}

int fr_queue_drained(fr_queue_t *q)
{
        int done;

        pthread_mutex_lock(&q->mu);
        done = q->closed && !q->list.head;
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
