/* bench/redis_topo.c: command and pipeline rates of sk_redis on one topology
 * (DESIGN.md 4b): N INCRs one by one, then N INCRs in pipelines of B, on keys with
 * distinct hash tags (so a Cluster spreads them over its masters).
 *   build/bench/redis_topo URL [N] [B]
 * Prints one line per run: topology, mode, n, seconds, ops/s. Never asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sk/conf.h"
#include "sk/redis.h"

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
        static const char *const kinds[] = { "standalone", "sentinel", "cluster" };
        sk_redis_url_t url;
        sk_redis_t *r;
        sk_redis_pipe_t *p;
        char err[512], key[64];
        int n = argc > 2 ? atoi(argv[2]) : 20000, b = argc > 3 ? atoi(argv[3]) : 100, fail = 0;
        double t0, t1;

        if (argc < 2 || n < 1 || b < 1 || sk_redis_url_parse(argv[1], &url, err, sizeof(err)) != 0) {
                fprintf(stderr, "usage: redis_topo URL [N] [BATCH]%s%s\n", argc >= 2 ? ": " : "",
                        argc >= 2 ? err : "");
                return 2;
        }
        if (!(r = sk_redis_connect(&url, 2000, err, sizeof(err)))) {
                fprintf(stderr, "redis_topo: %s\n", err);
                return 1;
        }
        t0 = now_s();
        for (int i = 0; i < n; i++) {
                redisReply *rep;
                snprintf(key, sizeof(key), "redis_topo:{t%d}", i % 1000);
                if (sk_redis_cmdf(r, &rep, err, sizeof(err), "INCR %s", key) == SK_OK)
                        freeReplyObject(rep);
                else
                        fail++;
        }
        t1 = now_s();
        printf("%s one-by-one n=%d s=%.3f ops/s=%.0f failed=%d masters=%d\n", kinds[url.kind], n,
               t1 - t0, n / (t1 - t0), fail, sk_redis_master_count(r));
        p = sk_redis_pipe_new(r);
        fail = 0;
        t0 = now_s();
        for (int i = 0; i < n; i += b) {
                for (int j = i; j < i + b && j < n; j++) {
                        const char *a[2] = { "INCR", key };
                        snprintf(key, sizeof(key), "redis_topo:{t%d}", j % 1000);
                        sk_redis_pipe_add(p, 2, a, NULL);
                }
                fail += sk_redis_pipe_exec(p);
                sk_redis_pipe_reset(p);
        }
        t1 = now_s();
        printf("%s pipelined(batch=%d) n=%d s=%.3f ops/s=%.0f failed=%d\n", kinds[url.kind], b, n,
               t1 - t0, n / (t1 - t0), fail);
        for (int i = 0; i < 1000; i++) {
                redisReply *rep;
                snprintf(key, sizeof(key), "redis_topo:{t%d}", i);
                if (sk_redis_cmdf(r, &rep, err, sizeof(err), "DEL %s", key) == SK_OK)
                        freeReplyObject(rep);
        }
        sk_redis_pipe_free(p);
        sk_redis_close(r);
        return 0;
}
