/* redis_sentinel_watch.c: the +switch-master subscription of DESIGN.md 4b: every
 * process that talks to a Sentinel-managed master keeps one subscription to a Sentinel's
 * `+switch-master` channel, and re-asks `SENTINEL get-master-addr-by-name` once a second
 * as well (the Redis "Sentinel clients" guidelines). Either one that shows the master
 * moved bumps a process-wide switch epoch; every sk_redis_t of that master compares it
 * before its next command and, when it changed, drops its connection and resolves the
 * master again (sk__node_open: Sentinels, then ROLE must say master). So writes leave
 * the old master within about a second of the Sentinels' switch, not only at its
 * demotion (up to ~10 s later).
 *
 * One watcher thread per distinct Sentinel master (name + first seed), at most
 * WATCH_MAX per process, started by the first handle that needs it and never stopped
 * (detached; it only reads). On losing the subscription it subscribes to the next
 * Sentinel of the list at once. Thread-safe: the epochs are atomics, the table is
 * guarded by a mutex. */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "redis_int.h"
#include "sk/clock.h"
#include "sk/log.h"

#define WATCH_MAX 4
#define WATCH_ASK_MS 1000       /* get-master-addr-by-name once a second */
#define WATCH_CONNECT_MS 300    /* per Sentinel */

typedef struct watch {
        char master[128];
        char seed_host[256];
        int seed_port;
        sk_redis_t *probe;      /* unconnected handle: the URL, for sk__sentinel_resolve */
        atomic_uint_fast64_t epoch;
        char addr[300];         /* "host:port" last known (watcher thread only) */
} watch_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static watch_t *watches[WATCH_MAX];     /* guarded by mu (slots only grow) */
static int nwatches;

static void bump(watch_t *w, const char *why, const char *addr)
{
        uint64_t e = atomic_fetch_add(&w->epoch, 1) + 1;

        SK_LOG(SK_WARN, "sentinel_switch", "master=%s addr=%s epoch=%llu why=%s", w->master,
               addr, (unsigned long long)e, why);
}

/* Ask the Sentinels for the address; a change from the last known one is a switch. */
static void ask(watch_t *w)
{
        char host[256], addr[300], errstr[256];
        int port;

        if (sk__sentinel_resolve(w->probe, host, sizeof(host), &port, errstr, sizeof(errstr)) !=
            SK_OK)
                return;
        snprintf(addr, sizeof(addr), "%s:%d", host, port);
        if (w->addr[0] && strcmp(addr, w->addr) != 0)
                bump(w, "asked", addr);
        memcpy(w->addr, addr, sizeof(addr));
}

/* One pushed message: "message" "+switch-master" "<name> <oldip> <oldport> <newip>
 * <newport>". */
static void on_message(watch_t *w, const redisReply *m)
{
        char name[128], oip[256], nip[256], addr[300];
        int oport, nport;

        if (m->type != REDIS_REPLY_ARRAY || m->elements != 3 ||
            m->element[2]->type != REDIS_REPLY_STRING)
                return;
        if (sscanf(m->element[2]->str, "%127s %255s %d %255s %d", name, oip, &oport, nip,
                   &nport) != 5 || strcmp(name, w->master) != 0)
                return;
        snprintf(addr, sizeof(addr), "%s:%d", nip, nport);
        memcpy(w->addr, addr, sizeof(addr));
        bump(w, "switch_master", addr);
}

/* Subscribed to one Sentinel until the connection breaks. */
static void listen_one(watch_t *w, const sk_redis_seed_t *s)
{
        struct timeval tv = { 0, WATCH_CONNECT_MS * 1000 };
        redisContext *ctx = redisConnectWithTimeout(s->host, s->port, tv);
        redisReply *reply = NULL;
        int64_t next_ask = 0;

        if (!ctx || ctx->err)
                goto out;
        (void)redisSetTimeout(ctx, tv);
        reply = redisCommand(ctx, "SUBSCRIBE +switch-master");
        if (!reply || reply->type == REDIS_REPLY_ERROR)
                goto out;
        freeReplyObject(reply);
        reply = NULL;
        (void)redisEnableKeepAlive(ctx);
        ask(w); /* a switch while no subscription was held */
        for (;;) {
                struct pollfd pfd = { ctx->fd, POLLIN, 0 };
                void *msg = NULL;
                int64_t now = sk_mono_ms();

                if (now >= next_ask) {
                        ask(w);
                        next_ask = now + WATCH_ASK_MS;
                }
                if (poll(&pfd, 1, WATCH_ASK_MS / 4) < 0)
                        continue;
                if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL))
                        goto out;
                if (!(pfd.revents & POLLIN))
                        continue;
                if (redisBufferRead(ctx) != REDIS_OK)
                        goto out;
                while (redisGetReplyFromReader(ctx, &msg) == REDIS_OK && msg) {
                        on_message(w, msg);
                        freeReplyObject(msg);
                        msg = NULL;
                }
                if (ctx->err)
                        goto out;
        }
out:
        if (reply)
                freeReplyObject(reply);
        if (ctx)
                redisFree(ctx);
}

static void *watch_main(void *arg)
{
        watch_t *w = arg;

        for (;;) {
                sk_redis_url_t *u = &w->probe->url;
                int n = u->nseeds;

                for (int i = 0; i < n; i++) {
                        sk_redis_seed_t s = u->seeds[i];

                        listen_one(w, &s);
                        ask(w);
                }
                struct timespec ts = { 0, 200 * 1000000L };
                nanosleep(&ts, NULL); /* every Sentinel refused: try the list again soon */
        }
        return NULL;
}

/* The watch of @p url's master, started if new; NULL when the table is full or the
 * thread could not start (the handle then follows the master on errors only). */
static watch_t *watch_of(const sk_redis_url_t *url)
{
        watch_t *w = NULL;
        pthread_t th;
        int i;

        pthread_mutex_lock(&mu);
        for (i = 0; i < nwatches; i++)
                if (strcmp(watches[i]->master, url->master) == 0 &&
                    strcmp(watches[i]->seed_host, url->seeds[0].host) == 0 &&
                    watches[i]->seed_port == url->seeds[0].port) {
                        w = watches[i];
                        goto done;
                }
        if (nwatches == WATCH_MAX || !(w = calloc(1, sizeof(*w))) ||
            !(w->probe = calloc(1, sizeof(*w->probe)))) {
                if (w)
                        free(w);
                w = NULL;
                goto done;
        }
        snprintf(w->master, sizeof(w->master), "%s", url->master);
        snprintf(w->seed_host, sizeof(w->seed_host), "%s", url->seeds[0].host);
        w->seed_port = url->seeds[0].port;
        w->probe->url = *url;
        w->probe->timeout_ms = WATCH_CONNECT_MS;
        atomic_init(&w->epoch, 1);
        if (pthread_create(&th, NULL, watch_main, w) != 0) {
                free(w->probe);
                free(w);
                w = NULL;
                goto done;
        }
        pthread_detach(th);
        watches[nwatches++] = w;
done:
        pthread_mutex_unlock(&mu);
        return w;
}

uint64_t sk__sentinel_epoch(const sk_redis_url_t *url)
{
        watch_t *w;

        if (url->kind != SK_REDIS_SENTINEL || url->nseeds < 1 || !(w = watch_of(url)))
                return 0;
        return atomic_load(&w->epoch);
}
