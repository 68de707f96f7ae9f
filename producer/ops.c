/* producer/ops.c: the front's operations listener (DESIGN.md 15 "Operations listener",
 * §3's /healthz · /readyz · /metrics row): served on SECKILL_OPS_ADDR by common/http's
 * listener on its own thread, never on the API listener, so the public path can neither
 * read the metrics nor probe readiness. /readyz answers 200 when Redis (every master:
 * reachable, noeviction, scripts loaded, a supported server), Kafka and the worker-id
 * lease are usable and the front is not stopping, else 503, with each part and the
 * degrade states in its JSON body. It reads the health, kprod, degrade and lease state
 * (each thread-safe); it owns only the listener handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "degrade.h"
#include "front.h"
#include "health.h"
#include "kprod.h"
#include "metrics.h"
#include "ops.h"
#include "req.h"
#include "room_tick.h"
#include "sk/db_writer.h"
#include "sk/metrics_http.h"

static void *ops_srv;           /* the listener (main thread only) */

/* /readyz (listener thread): status 200 or 503, *body malloc'd JSON. */
static int ops_ready(void *ctx, char **body)
{
        sk_idgen_t *gen = ctx;
        char buf[5376], degrade[4096], writer[300], writer_json[310], queue[128];
        int redis, noev, scripts, server, kafka = fr_kprod_ok(), lease = sk_idgen_usable(gen);
        int ready, minrep, minlag;

        fr_health_redis(&redis, &noev, &scripts, &server);
        fr_health_min_replicas(&minrep, &minlag);
        fr_degrade_json(degrade, sizeof(degrade));
        /* DESIGN.md 18: whether this front serves the waiting room (keys file) */
        fr_room_json(queue, sizeof(queue));
        /* DESIGN.md 18, invariant 8: no purchase is judged before the table of waiting
         * rooms was read once */
        ready = redis && noev && scripts && server && kafka && lease && !fr_stopping() &&
                fr_room_table_read();
        /* The DB node this process's new transactions go to (DESIGN.md 16); null before
         * the first connection. Host names and addresses need no JSON escaping. */
        if (sk_db_writer_name(&g_fr.conf.mysql, writer, sizeof(writer)))
                snprintf(writer_json, sizeof(writer_json), "\"%s\"", writer);
        else
                snprintf(writer_json, sizeof(writer_json), "null");
        snprintf(buf, sizeof(buf),
                 "{\"ready\":%s,\"redis\":%s,\"noeviction\":%s,\"scripts\":%s,"
                 "\"redisServer\":%s,\"minReplicasToWrite\":%d,\"minReplicasMaxLag\":%d,"
                 "\"kafka\":%s,\"lease\":%s,\"workerId\":%d,\"dbWriter\":%s,\"degrade\":%s,"
                 "\"queue\":%s}",
                 ready ? "true" : "false", redis ? "true" : "false", noev ? "true" : "false",
                 scripts ? "true" : "false", server ? "true" : "false", minrep, minlag,
                 kafka ? "true" : "false", lease ? "true" : "false", sk_idgen_worker_id(gen),
                 writer_json, degrade, queue);
        *body = strdup(buf);
        return ready ? 200 : 503;
}

/* /metrics (listener thread): the gauges sampled now, then every metric. */
static char *ops_render(void *ctx)
{
        (void)ctx;
        return fr_metrics_render();
}

int fr_ops_start(sk_idgen_t *gen, char *errstr, size_t errstr_size)
{
        sk_ops_http_t ops = { .render = ops_render, .ready = ops_ready, .ctx = gen };

        if (!strcmp(g_fr.ops_addr, "off"))
                return 0;
        ops_srv = sk_ops_http_start(&ops, g_fr.ops_addr, errstr, errstr_size);
        return ops_srv ? 0 : -1;
}

void fr_ops_stop(void)
{
        sk_metrics_http_stop(ops_srv);
        ops_srv = NULL;
}
