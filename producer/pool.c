/* producer/pool.c: the pools and threads of producer/pool.h. The wait, the drained-exit
 * rule and the answered-drop rule of every pool of the front are written here only. */
#include <stdlib.h>

#include "pool.h"
#include "req.h"
#include "sk/db.h"
#include "sk/redis.h"

/* One thread of a pool: its connections and its batch array, owned by the pool. */
typedef struct fr_pool_slot {
        fr_pool_t *pool;
        pthread_t tid;
        fr_conns_t conns;
        fr_req_t **batch;
} fr_pool_slot_t;

/* The answered-drop rule (pool.h). @returns 1 if @p req was dropped. */
static int drop_answered(const fr_pool_ops_t *ops, fr_req_t *req)
{
        if (!ops->drop_answered || !fr_req_is_answered(req))
                return 0;
        if (ops->dropped)
                sk_metric_add(*ops->dropped, 1);
        fr_req_done(req);
        return 1;
}

static void *pool_main(void *arg)
{
        fr_pool_slot_t *s = arg;
        fr_pool_t *p = s->pool;
        const fr_pool_ops_t *ops = p->ops;

        for (;;) {
                fr_req_t *req = fr_queue_pop(&p->q, p->batch_max, FR_POOL_WAIT_MS);
                int n = 0;

                if (ops->idle)
                        ops->idle(&s->conns);
                if (!req) {
                        /* The drained-exit rule: only once closed and empty. */
                        if (fr_queue_drained(&p->q))
                                break;
                        continue;
                }
                while (req) {
                        fr_req_t *next = req->qnext;

                        req->qnext = NULL;
                        if (!drop_answered(ops, req))
                                s->batch[n++] = req;
                        req = next;
                }
                if (n > 0)
                        ops->run(&s->conns, s->batch, n);
        }
        if (ops->close)
                ops->close(&s->conns);
        sk_redis_close(s->conns.r);
        sk_db_close(s->conns.db);
        s->conns.r = NULL;
        s->conns.db = NULL;
        return NULL;
}

int fr_pool_start(fr_pool_t *p, const fr_pool_ops_t *ops, int nthreads, int batch_max)
{
        int i;

        fr_queue_init(&p->q);
        p->ops = ops;
        p->batch_max = batch_max > 0 ? batch_max : 1;
        p->n = 0;
        if (!(p->slots = calloc((size_t)nthreads, sizeof(*p->slots))))
                return -1;
        p->nslots = nthreads;
        for (i = 0; i < nthreads; i++) {
                fr_pool_slot_t *s = &p->slots[i];

                s->pool = p;
                if (!(s->batch = calloc((size_t)p->batch_max, sizeof(*s->batch))) ||
                    pthread_create(&s->tid, NULL, pool_main, s) != 0)
                        return -1;
                p->n++;
        }
        return 0;
}

int fr_pool_push(fr_pool_t *p, fr_req_t *req)
{
        return fr_queue_push(&p->q, req);
}

void fr_pool_push_or_refuse(fr_pool_t *p, fr_req_t *req)
{
        if (fr_queue_push(&p->q, req) == 0)
                return;
        fr_answer_503(req, "shutdown", NULL, "shutting down");
        fr_req_done(req);
}

int fr_pool_full(fr_pool_t *p, size_t max)
{
        return fr_queue_len(&p->q) >= max;
}

size_t fr_pool_depth(fr_pool_t *p)
{
        return fr_queue_len(&p->q);
}

void fr_pool_stop(fr_pool_t *p)
{
        int i;

        if (!p->slots)
                return;
        fr_queue_close(&p->q);
        for (i = 0; i < p->n; i++)
                pthread_join(p->slots[i].tid, NULL);
        for (i = 0; i < p->nslots; i++)
                free(p->slots[i].batch);
        free(p->slots);
        p->slots = NULL;
        p->nslots = 0;
        p->n = 0;
}

int fr_thread_start(fr_thread_t *th, void *(*fn)(void *))
{
        atomic_store(&th->stop, 0);
        th->started = pthread_create(&th->tid, NULL, fn, NULL) == 0;
        return th->started ? 0 : -1;
}

int fr_thread_stopping(fr_thread_t *th)
{
        return atomic_load(&th->stop);
}

void fr_thread_stop(fr_thread_t *th)
{
        atomic_store(&th->stop, 1);
        if (th->started)
                pthread_join(th->tid, NULL);
        th->started = 0;
}
