/* producer/breaker.c: the front's Redis breaker (producer/breaker.h, DESIGN.md 12).
 * Owns the one sk_breaker_t of the process (behind brk_mu), the lock-free "closed"
 * flag every purchase reads, the transition log lines and metrics, and the probe
 * thread. The rules themselves (what opens it, no flapping, probation) are in
 * producer/breaker_fsm.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "breaker.h"
#include "front.h"
#include "metrics.h"
#include "breaker_fsm.h"
#include "pool.h"
#include "sk/clock.h"
#include "sk/log.h"
#include "sk/redis.h"

#define BREAKER_PROBE_MS 1000           /* DESIGN.md 12: one probe a second */

static pthread_mutex_t brk_mu = PTHREAD_MUTEX_INITIALIZER;
static sk_breaker_t brk;                /* guarded by brk_mu */
static atomic_int closed = 1;           /* mirrors sk_breaker_allow(&brk) */
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

        sk_breaker_init(&brk, &c, sk_mono_ms());
        atomic_store(&closed, 1);
        sk_metric_set(fr_m.brk_open, 0);
}

int fr_breaker_allow(void)
{
        return atomic_load(&closed);
}

/* Caller holds brk_mu. One log line and the metrics per transition. */
static void transition(sk_brk_event_t ev, const char *why)
{
        if (ev == SK_BRK_EV_OPENED) {
                atomic_store(&closed, 0);
                sk_metric_set(fr_m.brk_open, 1);
                sk_metric_add(fr_m.brk_to_open, 1);
                SK_LOG(SK_WARN, "redis_breaker_open", "open_ms=%d failures=%d slow_ms=%d why=%s",
                       brk.c.open_ms, brk.c.failures, brk.c.slow_ms, why);
        } else if (ev == SK_BRK_EV_CLOSED) {
                atomic_store(&closed, 1);
                sk_metric_set(fr_m.brk_open, 0);
                sk_metric_add(fr_m.brk_to_closed, 1);
                SK_LOG(SK_INFO, "redis_breaker_closed", "open_for_ms=%lld",
                       (long long)(brk.closed_ms - brk.opened_ms));
        }
}

void fr_breaker_record(int failed, int64_t latency_ms)
{
        sk_brk_event_t ev;

        pthread_mutex_lock(&brk_mu);
        ev = sk_breaker_record(&brk, sk_mono_ms(), failed, latency_ms);
        transition(ev, failed ? "failed" : "slow");
        pthread_mutex_unlock(&brk_mu);
}

/* PING -> PONG, ROLE -> master, INFO persistence -> loading:0. @returns 1 if healthy. */
static int probe(sk_redis_t **rp)
{
        redisReply *rep = NULL;
        char errstr[512];
        int ok;

        if (!*rp)
                *rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr, sizeof(errstr));
        if (!*rp)
                return 0;
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
                sk_redis_close(*rp); /* a fresh connection for the next probe */
                *rp = NULL;
        }
        return ok;
}

static void *probe_main(void *arg)
{
        sk_redis_t *r = NULL;

        (void)arg;
        while (!fr_thread_stopping(&t_probe)) {
                int due, ok;

                pthread_mutex_lock(&brk_mu);
                due = sk_breaker_probe_begin(&brk, sk_mono_ms());
                pthread_mutex_unlock(&brk_mu);
                if (due) {
                        ok = probe(&r);
                        pthread_mutex_lock(&brk_mu);
                        transition(sk_breaker_probe_end(&brk, sk_mono_ms(), ok), "probe");
                        pthread_mutex_unlock(&brk_mu);
                }
                sk_sleep_ms(50, NULL);
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
        ok = sk_breaker_healthy(&brk, sk_mono_ms());
        pthread_mutex_unlock(&brk_mu);
        return ok;
}
