/* conn.c: what every module of a consumer worker calls back into (worker.h): the stop
 * flag, the worker's DB link checked and reconnected, its Redis connection reconnected
 * once marked broken. The bottom of the consumer: it calls no other file of this folder
 * but apply.c (its prepared statements are dropped with a reconnect).
 *
 * Not thread-safe: each worker owns its handles; only the metrics are shared. */
#include "sk/log.h"
#include "worker.h"

int cons_stopping(void)
{
        return g_stop != 0;
}

void cons_worker_ensure_db(worker_t *w)
{
        char errstr[512];

        if (sk_db_ping(w->db))
                return;
        cons_apply_reset(w->ap);
        /* The link broke (an I/O error or timeout closes it): the node it was on may be
         * dead or frozen, so the next node of the URL first (DESIGN.md 16). */
        sk_db_prefer_next_node(w->db);
        if (sk_db_reconnect(w->db, errstr, sizeof(errstr)) == SK_OK)
                SK_LOG(SK_INFO, "db_reconnected", "worker=%d", w->idx);
        else
                SK_LOG(SK_WARN, "db_reconnect_failed", "worker=%d err=\"%s\"", w->idx, errstr);
}

sk_redis_t *cons_worker_redis(worker_t *w)
{
        char errstr[512];

        if (w->redis && !w->redis_broken)
                return w->redis;
        if (w->redis) {
                if (sk_redis_reconnect(w->redis, errstr, sizeof(errstr)) == SK_OK) {
                        w->redis_broken = 0;
                        return w->redis;
                }
        } else if ((w->redis = sk_redis_connect(&w->conf->redis, 2000, errstr, sizeof(errstr)))) {
                w->redis_broken = 0;
                return w->redis;
        }
        SK_LOG(SK_WARN, "redis_connect_failed", "worker=%d err=\"%s\"", w->idx, errstr);
        return NULL;
}

void cons_worker_redis_failed(worker_t *w, sk_err_t err)
{
        sk_metric_add(w->m->redis_errors, 1);
        if (err == SK_EUNKNOWN || err == SK_EAGAIN || err == SK_EREDIS)
                w->redis_broken = 1;
}
