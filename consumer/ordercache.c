/* ordercache.c: after a batch, the JSON of every order it created goes to Redis
 * (`<prefix>:order:<id>`, EX 60; DESIGN.md 4) so the front answers GET
 * /api/v1/orders/{id} without the DB. Pipelined on the worker's Redis connection
 * (sk_redis_pipe: one batch per node of a Cluster);
 * failures only cost a cache miss (the front falls back to the DB). No state of its
 * own. Not thread-safe (one per worker). */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include "sk/clock.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "worker.h"

/* createTime: the commit time in UTC, as DATE_FORMAT(create_time) renders it (the DB
 * session runs in UTC). */
static void format_ctime(char *buf, size_t size)
{
        int64_t now_ms = sk_now_ms();
        time_t secs = (time_t)(now_ms / 1000);
        struct tm tm;
        char tbuf[32];

        gmtime_r(&secs, &tm);
        strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s.%03d", tbuf, (int)(now_ms % 1000));
}

/* Queue the SETs on @p p. @returns how many were queued. */
static int append_sets(worker_t *w, sk_redis_pipe_t *p, const char *ctime_s)
{
        int sent = 0;

        for (int i = 0; i < w->nbatch; i++) {
                const sk_order_msg_t *m = &w->batch[i].msg;
                char key[SK_KEY_MAX], json[320];
                const char *argv[5] = { "SET", key, json, "EX", "60" };
                if (!w->batch[i].applied)
                        continue;
                sk_key_order(key, w->conf->redis_prefix, m->order_id);
                /* The shape the front answers GET /api/v1/orders/{id} with from the DB
                 * (producer/lookup.c), served as is from the cache. */
                snprintf(json, sizeof(json),
                         "{\"code\":0,\"orderId\":\"%" PRId64 "\",\"userId\":\"%" PRId64
                         "\",\"voucherId\":\"%" PRId64 "\",\"traceId\":\"%" PRId64
                         "\",\"status\":1,\"createTime\":\"%s\"}",
                         m->order_id, m->user_id, m->voucher_id, m->trace_id, ctime_s);
                if (sk_redis_pipe_add(p, 5, argv, NULL) < 0)
                        break;
                sent++;
        }
        return sent;
}

void cons_order_cache(worker_t *w)
{
        sk_redis_pipe_t *p;
        sk_redis_t *r;
        char ctime_s[40], errstr[256];
        int sent, i;

        for (i = 0; i < w->nbatch; i++)
                if (w->batch[i].applied)
                        break;
        if (i == w->nbatch || !(r = cons_worker_redis(w)) || !(p = sk_redis_pipe_new(r)))
                return;
        format_ctime(ctime_s, sizeof(ctime_s));
        sent = append_sets(w, p, ctime_s);
        /* Grouped per node on a Cluster (order keys hash anywhere; DESIGN.md 4b). A
         * failure only costs a cache miss. */
        if (sent > 0)
                sk_redis_pipe_exec(p);
        for (i = 0; i < sent; i++) {
                redisReply *reply = NULL;
                sk_err_t err = sk_redis_pipe_result(p, i, &reply, errstr, sizeof(errstr));
                if (err == SK_OK)
                        continue;
                SK_LOG(SK_WARN, "order_cache_failed", "worker=%d err=%s reason=\"%s\"",
                       w->idx, sk_err2str(err), errstr);
                if (err == SK_EUNKNOWN) {
                        cons_worker_redis_failed(w, SK_EUNKNOWN);
                        break;
                }
                sk_metric_add(w->m->redis_errors, 1);
        }
        sk_redis_pipe_free(p);
}
