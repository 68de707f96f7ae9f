/* producer/breaker.c: the front's Redis breakers (producer/breaker.h, DESIGN.md 4b, 12).
 * Owns the one breaker table of the process (breaker_set.h, behind brk_mu), the
 * lock-free "usable" flag every purchase reads, the transition log lines and metrics,
 * and the probe thread: every open breaker gets its half-open probe on its own node (a
 * one-server connection to "host:port"; entry 0 through the topology's URL), and on a
 * Cluster, while a node's breaker is open, the thread reads the slot map every
 * BREAKER_FOLLOW_MS (CLUSTER SLOTS on a live master) and retires the breakers of nodes
 * that no longer serve slots (a replica was promoted in their place), so a dead master's
 * breaker does not count for the metrics, the degrade decision or the health of Redis
 * once the Cluster has moved on; a retirement bumps the map generation, and every
 * handle that asks fr_breaker_allow_key follows it (sk_redis_map_follow: one CLUSTER
 * SLOTS) before it routes its next purchase, so the dead master's buckets go to the new
 * owner, with its own breaker, within about BREAKER_FOLLOW_MS of the promotion.
 * The rules themselves (what opens a breaker, no flapping, probation) are in
 * producer/breaker_fsm.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "breaker.h"
#include "breaker_set.h"
#include "front.h"
#include "metrics.h"
#include "pool.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "sk/redis.h"

#define BREAKER_PROBE_MS 1000           /* DESIGN.md 12: one probe a second */
#define BREAKER_FOLLOW_MS 50            /* Cluster, a breaker open: the map re-read */

static pthread_mutex_t brk_mu = PTHREAD_MUTEX_INITIALIZER;
static fr_brkset_t brk;                 /* guarded by brk_mu */
static atomic_int usable = 1;           /* mirrors fr_brkset_usable(&brk) */
static _Atomic uint64_t map_gen;        /* bumped when a node's slots moved */
static int per_node;                    /* set once at init: a Cluster */
static fr_thread_t t_probe;

void fr_breaker_init(void)
{
        sk_breaker_conf_t c = {
                .failures = g_fr.conf.breaker_failures,
                .slow_ms = g_fr.conf.breaker_slow_ms,
                .open_ms = g_fr.conf.breaker_open_ms,
                .probe_ms = BREAKER_PROBE_MS,
                .healthy_ms = g_fr.conf.breaker_healthy_ms,
        };

        per_node = g_fr.conf.redis.kind == SK_REDIS_CLUSTER;
        fr_brkset_init(&brk, &c, per_node, sk_mono_ms());
        atomic_store(&usable, 1);
        sk_metric_set(fr_m.brk_open, 0);
}

int fr_breaker_allow(void)
{
        return atomic_load(&usable);
}

static const char *node_name(int i)
{
        return i == 0 ? "topology" : brk.e[i].addr;
}

/* Caller holds brk_mu. One log line and the metrics per transition of entry @p i. */
static void transition(int i, sk_brk_event_t ev, const char *why)
{
        const sk_breaker_t *b = &brk.e[i].b;

        if (ev == SK_BRK_EV_OPENED) {
                sk_metric_add(fr_m.brk_to_open, 1);
                SK_LOG(SK_WARN, "redis_breaker_open", "node=%s open_ms=%d failures=%d slow_ms=%d why=%s",
                       node_name(i), b->c.open_ms, b->c.failures, b->c.slow_ms, why);
        } else if (ev == SK_BRK_EV_CLOSED) {
                sk_metric_add(fr_m.brk_to_closed, 1);
                SK_LOG(SK_INFO, "redis_breaker_closed", "node=%s open_for_ms=%lld", node_name(i),
                       (long long)(b->closed_ms - b->opened_ms));
        }
        if (ev != SK_BRK_EV_NONE || why == NULL) {
                int u = fr_brkset_usable(&brk);

                if (u != atomic_load(&usable))
                        SK_LOG(u ? SK_INFO : SK_WARN, "redis_breaker_usable",
                               "usable=%d reason=\"%s\"", u, u ? "a breaker closed" :
                               "every breaker of this front is open: Redis is down");
                atomic_store(&usable, u);
                sk_metric_set(fr_m.brk_open, fr_brkset_open_count(&brk));
        }
}

/* The node of @p key in @p r's map into @p addr ("" = the topology's breaker). */
static void key_addr(sk_redis_t *r, const char *key, char *addr, size_t addr_size)
{
        addr[0] = '\0';
        if (per_node && r && key && sk_redis_key_addr(r, key, addr, addr_size) != SK_OK)
                addr[0] = '\0';
}

int fr_breaker_allow_key(sk_redis_t *r, const char *key)
{
        char addr[FR_BRK_ADDR_MAX];
        int ok;

        if (!per_node || !r || !key)
                return fr_breaker_allow();
        sk_redis_map_follow(r, atomic_load(&map_gen));
        key_addr(r, key, addr, sizeof(addr));
        pthread_mutex_lock(&brk_mu);
        ok = fr_brkset_allow(&brk, addr);
        pthread_mutex_unlock(&brk_mu);
        if (!ok)
                sk_redis_map_stale(r);  /* follow the promotion that moves the slot */
        return ok;
}

void fr_breaker_record_addr(const char *addr, int failed, int64_t latency_ms)
{
        sk_brk_event_t ev;
        int i;

        /* A Cluster command that had no node (its slot not covered by the map) blames
         * nobody: the topology's breaker is for "no seed answers" only. */
        if (per_node && addr && !addr[0])
                return;
        pthread_mutex_lock(&brk_mu);
        ev = fr_brkset_record(&brk, per_node ? addr : NULL, sk_mono_ms(), failed, latency_ms, &i);
        transition(i, ev, failed ? "failed" : "slow");
        pthread_mutex_unlock(&brk_mu);
}

void fr_breaker_record_key(sk_redis_t *r, const char *key, int failed, int64_t latency_ms)
{
        char addr[FR_BRK_ADDR_MAX];

        if (!r || !key) {
                fr_breaker_record_addr(NULL, failed, latency_ms);
                return;
        }
        key_addr(r, key, addr, sizeof(addr));
        fr_breaker_record_addr(addr, failed, latency_ms);
}

void fr_breaker_record(int failed, int64_t latency_ms)
{
        fr_breaker_record_addr(NULL, failed, latency_ms);
}

/* PING -> PONG, ROLE -> master, INFO persistence -> loading:0 on *rp. @returns 1 if
 * healthy; a failed probe closes *rp (a fresh connection next time). */
static int probe_on(sk_redis_t **rp)
{
        redisReply *rep = NULL;
        char errstr[512] = "";
        int ok;

        ok = sk_redis_cmdf(*rp, &rep, errstr, sizeof(errstr), "PING") == SK_OK && rep &&
             rep->type == REDIS_REPLY_STATUS && !strcmp(rep->str, "PONG");
        freeReplyObject(rep);
        rep = NULL;
        ok = ok && sk_redis_cmdf(*rp, &rep, errstr, sizeof(errstr), "ROLE") == SK_OK && rep &&
             rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
             rep->element[0]->type == REDIS_REPLY_STRING && !strcmp(rep->element[0]->str, "master");
        freeReplyObject(rep);
        rep = NULL;
        ok = ok && sk_redis_cmdf(*rp, &rep, errstr, sizeof(errstr), "INFO persistence") == SK_OK &&
             rep && rep->type == REDIS_REPLY_STRING &&
             strstr(rep->str, "loading:0") != NULL;
        freeReplyObject(rep);
        if (!ok) {
                SK_LOG(SK_DEBUG, "redis_breaker_probe_failed", "reason=\"%s\"", errstr);
                sk_redis_close(*rp);
                *rp = NULL;
        }
        return ok;
}

/* The probe of entry 0 (the topology's URL, kept in *rp) or of node @p addr (a
 * one-server connection to it, opened and closed here). */
static int probe(sk_redis_t **rp, const char *addr)
{
        sk_redis_url_t url = g_fr.conf.redis;
        sk_redis_t *one = NULL;
        char errstr[512];
        const char *colon;
        int ok;

        if (!addr[0]) {
                if (!*rp)
                        *rp = sk_redis_connect(&url, FR_REDIS_CMD_TIMEOUT_MS, errstr, sizeof(errstr));
                return *rp && probe_on(rp);
        }
        if (!(colon = strrchr(addr, ':')) || (size_t)(colon - addr) >= sizeof(url.host))
                return 0;
        url.kind = SK_REDIS_STANDALONE;
        snprintf(url.host, sizeof(url.host), "%.*s", (int)(colon - addr), addr);
        url.port = 0;
        sscanf(colon + 1, "%d", &url.port);
        url.db = 0;
        url.nseeds = 1;
        snprintf(url.seeds[0].host, sizeof(url.seeds[0].host), "%s", url.host);
        url.seeds[0].port = url.port;
        if (!(one = sk_redis_connect(&url, FR_REDIS_CMD_TIMEOUT_MS, errstr, sizeof(errstr))))
                return 0;
        ok = probe_on(&one);
        sk_redis_close(one);
        return ok;
}

/* Cluster: retire the breakers (open or not) of nodes that serve no slot in the map of
 * *rp, read again now (CLUSTER SLOTS, not rate-limited); any retirement bumps map_gen.
 * A map that cannot be read retires nothing. */
static void retire_gone(sk_redis_t **rp)
{
        char masters[FR_BRKSET_MAX][FR_BRK_ADDR_MAX];
        const char *mp[FR_BRKSET_MAX];
        int idx[FR_BRKSET_MAX];
        char errstr[512];
        int nm, nmoved, i;

        if (!*rp)
                *rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr, sizeof(errstr));
        if (!*rp || sk_redis_map_refresh(*rp) != SK_OK)
                return;
        nm = sk_redis_master_count(*rp);
        if (nm <= 0 || nm > FR_BRKSET_MAX)
                return;
        for (i = 0; i < nm; i++) {
                if (sk_redis_master_addr(*rp, i, masters[i], sizeof(masters[i])) != SK_OK)
                        return;
                mp[i] = masters[i];
        }
        pthread_mutex_lock(&brk_mu);
        nmoved = fr_brkset_moved(&brk, mp, nm, idx, FR_BRKSET_MAX);
        for (i = 0; i < nmoved; i++) {
                if (fr_brkset_retire(&brk, idx[i], sk_mono_ms()))
                        SK_LOG(SK_INFO, "redis_breaker_retired", "node=%s map_gen=%llu reason=\"serves "
                               "no slot in the Cluster's map any more\"", brk.e[idx[i]].addr,
                               (unsigned long long)atomic_load(&map_gen) + 1);
                transition(idx[i], SK_BRK_EV_NONE, NULL);
        }
        pthread_mutex_unlock(&brk_mu);
        if (nmoved > 0)
                atomic_fetch_add(&map_gen, 1);  /* every handle follows at its next purchase */
}

/* One pass: every breaker whose probe is due is probed (on its own node), one by one. */
static void probe_due(sk_redis_t **rp)
{
        char addr[FR_BRK_ADDR_MAX];
        int i, n, due, ok;

        pthread_mutex_lock(&brk_mu);
        n = brk.n;
        pthread_mutex_unlock(&brk_mu);
        for (i = 0; i < n && !fr_thread_stopping(&t_probe); i++) {
                pthread_mutex_lock(&brk_mu);
                due = brk.e[i].live && sk_breaker_probe_begin(&brk.e[i].b, sk_mono_ms());
                snprintf(addr, sizeof(addr), "%s", brk.e[i].addr);
                pthread_mutex_unlock(&brk_mu);
                if (!due)
                        continue;
                ok = probe(rp, addr);
                pthread_mutex_lock(&brk_mu);
                transition(i, sk_breaker_probe_end(&brk.e[i].b, sk_mono_ms(), ok), "probe");
                pthread_mutex_unlock(&brk_mu);
        }
}

static void *probe_main(void *arg)
{
        sk_redis_t *r = NULL;
        int64_t next_follow = 0;

        (void)arg;
        while (!fr_thread_stopping(&t_probe)) {
                int open;

                probe_due(&r);
                pthread_mutex_lock(&brk_mu);
                open = fr_brkset_open_count(&brk);
                pthread_mutex_unlock(&brk_mu);
                if (per_node && open > 0 && sk_mono_ms() >= next_follow) {
                        next_follow = sk_mono_ms() + BREAKER_FOLLOW_MS;
                        retire_gone(&r);
                }
                sk_sleep_ms(open > 0 ? 10 : 50, NULL);
        }
        sk_redis_close(r);
        return NULL;
}

int fr_breaker_start(void)
{
        return fr_thread_start(&t_probe, probe_main);
}

void fr_breaker_stop(void)
{
        fr_thread_stop(&t_probe);
}

int fr_breaker_healthy(void)
{
        int ok;

        pthread_mutex_lock(&brk_mu);
        ok = fr_brkset_healthy(&brk, sk_mono_ms());
        pthread_mutex_unlock(&brk_mu);
        return ok;
}
