/* producer/health.c: the health thread of seckill-front (producer/health.h). Owns the
 * Redis health flags /readyz reports; Kafka's are kprod.c's. Redis first: the Kafka
 * check may block for seconds while brokers are down. A fatal producer is replaced at
 * once (the thread wakes early when kprod says fatal). */
#include <pthread.h>
#include <stdatomic.h>

#include "breaker.h"
#include "front.h"
#include "health.h"
#include "kprod.h"
#include "pool.h"
#include "publish.h"
#include "sk/clock.h"
#include "sk/redis.h"
#include "sk/scripts.h"

static atomic_int redis_ok, noeviction_ok, scripts_ok, server_ok;
/* The masters' min-replicas-to-write / min-replicas-max-lag (-1 unknown), DESIGN.md 4b. */
static atomic_int min_replicas = -1, min_replicas_lag = -1;
static fr_thread_t t_health;

static void redis_check(sk_redis_t **rp)
{
        char errstr[512];
        int ne, sl, mr, lag = 0;
        sk_err_t sv;

        /* The breaker (breaker.c) is open: Redis is known down and its probe thread
         * watches it; do not block this thread (and the Kafka checks) on it. */
        if (!fr_breaker_allow()) {
                atomic_store(&redis_ok, 0);
                return;
        }
        if (!*rp)
                *rp = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr, sizeof(errstr));
        if (!*rp) {
                atomic_store(&redis_ok, 0);
                return;
        }
        ne = sk_redis_noeviction(*rp);
        /* Every master reachable, Redis >= 7.0 and noeviction (DESIGN.md 3, 4, 4b). */
        sv = sk_redis_check_server(*rp, errstr, sizeof(errstr));
        sl = sk_scripts_loaded(*rp);
        if (sl == 0 && sk_scripts_load(*rp, errstr, sizeof(errstr)) == SK_OK)
                sl = 1;
        if (ne < 0 || sl < 0 || sv == SK_EAGAIN) {
                atomic_store(&redis_ok, 0);
                sk_redis_reconnect(*rp, errstr, sizeof(errstr));
                return;
        }
        /* Stored before redis_ok: a /readyz that says ready also shows them. */
        mr = sk_redis_min_replicas(*rp, &lag);
        atomic_store(&min_replicas, mr);
        atomic_store(&min_replicas_lag, mr < 0 ? -1 : lag);
        atomic_store(&redis_ok, 1);
        atomic_store(&noeviction_ok, ne == 1);
        atomic_store(&scripts_ok, sl == 1);
        atomic_store(&server_ok, sv == SK_OK);
}

static void kafka_check(void)
{
        fr_kprod_replace_if_fatal();
        /* The re-produces parked while the producer was fatal, once a healthy one is
         * current (after a shutdown's purge: answered, not produced). */
        if (!fr_kprod_fatal_now())
                fr_publish_run_deferred();
        fr_kprod_check_health();
}

static void *health_main(void *arg)
{
        sk_redis_t *r = NULL;

        (void)arg;
        while (!fr_thread_stopping(&t_health)) {
                int64_t t0 = sk_mono_ms();

                redis_check(&r);
                kafka_check();
                while (!fr_thread_stopping(&t_health) && sk_mono_ms() - t0 < 1000 &&
                       !fr_kprod_fatal_now())
                        sk_sleep_ms(50, NULL);
        }
        sk_redis_close(r);
        return NULL;
}

int fr_health_start(void)
{
        return fr_thread_start(&t_health, health_main);
}

void fr_health_stop(void)
{
        fr_thread_stop(&t_health);
}

void fr_health_redis(int *ok, int *noeviction, int *scripts, int *server)
{
        *server = atomic_load(&server_ok);
        *ok = atomic_load(&redis_ok);
        *noeviction = atomic_load(&noeviction_ok);
        *scripts = atomic_load(&scripts_ok);
}

void fr_health_min_replicas(int *to_write, int *max_lag_s)
{
        *to_write = atomic_load(&min_replicas);
        *max_lag_s = atomic_load(&min_replicas_lag);
}
