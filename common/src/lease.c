/* lease.c: snowflake worker ids leased in Redis, and the generator they gate
 * (DESIGN.md 2; contract in sk/lease.h).
 *
 * Keys: <prefix>:worker:<id> = "host:pid:start_ms" (SET NX PX lease) and
 * <prefix>:worker:<id>:until = the last wall-clock ms the holder may mint (no TTL, so
 * the next holder still sees it after the lease key expired).
 *
 * Acquire: SET NX PX; then read the old :until; then a first renewal. The mint window
 * opens at max(old :until + 1, or acquire time + 2/3 lease when :until is missing) and
 * ends at (time just before the latest successful renewal was sent) + 2/3 lease; the
 * renewal wrote that same value into :until. Because the window's end is taken from the
 * local clock *before* the renewal request left, a slow or lost reply can only shorten
 * the window, never extend it past what :until says.
 *
 * Renewal: a thread with its own Redis connection wakes every lease/3 and runs a small
 * compare-and-set script, EVAL'd inline (RENEW_LUA below; it is lease bookkeeping, not
 * one of the purchase scripts of lua/): if the key still holds our value, PEXPIRE it and
 * raise :until (never lower it). A renewal that errors (Redis down, timeout) changes
 * nothing: the window closes by itself when its end passes. A renewal that finds the
 * key gone or someone else's value means the lease is lost: the mint window is closed
 * at once, then the thread tries to lease the same id again every lease/3 (reading the
 * :until again, so whoever held it meanwhile is respected).
 *
 * sk_idgen_stop closes the window, stops the thread, and deletes the lease key only if
 * it is still ours (DEL_LUA). :until is left in place for the next holder. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sk/lease.h"
#include "sk/clock.h"
#include "sk/keys.h"
#include "sk/redis.h"
#include "sk/snowflake.h"

#define SK_WORKER_IDS 1024
#define MAX_BACKWARDS_MS 500 /* how long sk_idgen_next waits for a clock that went back */

/* KEYS[1] lease key, KEYS[2] :until key; ARGV[1] our value, ARGV[2] lease ms,
 * ARGV[3] new :until (ms). Returns 1 if renewed, 0 if the lease is not ours. */
static const char RENEW_LUA[] =
        "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
        "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
        "local cur = tonumber(redis.call('GET', KEYS[2]) or '0') or 0\n"
        "if tonumber(ARGV[3]) > cur then redis.call('SET', KEYS[2], ARGV[3]) end\n"
        "return 1\n";

/* KEYS[1] lease key; ARGV[1] our value. Deletes the key only if it is ours. */
static const char DEL_LUA[] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
        "return 0\n";

struct sk_idgen {
        sk_redis_url_t url;
        char prefix[64];
        int lease_ms;
        int worker_id;
        char value[300];               /* host:pid:start_ms */
        char k_lease[SK_KEY_MAX];
        char k_until[SK_KEY_MAX];
        sk_snowflake_t *sf;
        sk_redis_t *rconn;             /* used by the renewal thread only (after start) */

        pthread_mutex_t mu;            /* guards everything below */
        pthread_cond_t cv;             /* signalled by sk_idgen_stop */
        int stop;
        int held;                      /* 1 while we believe the lease is ours */
        int64_t mint_from_ms, mint_until_ms; /* the window given to the snowflake */
        int thread_started;
        pthread_t thr;
};

static int64_t two_thirds(int lease_ms)
{
        return (int64_t)lease_ms * 2 / 3;
}

static void set_window(sk_idgen_t *g, int64_t from_ms, int64_t until_ms)
{
        /* Caller holds g->mu. */
        g->mint_from_ms = from_ms;
        g->mint_until_ms = until_ms;
        sk_snowflake_set_mint_window(g->sf, from_ms, until_ms);
}

/* SET lease NX PX. @returns 1 acquired, 0 taken, <0 error. */
static int try_set_nx(sk_idgen_t *g, sk_redis_t *r, char *errstr, size_t errstr_size)
{
        char px[24];
        const char *argv[6] = { "SET", g->k_lease, g->value, "NX", "PX", px };
        redisReply *reply = NULL;
        int ret;

        snprintf(px, sizeof(px), "%d", g->lease_ms);
        if (sk_redis_cmd(r, &reply, 6, argv, NULL, errstr, errstr_size) != SK_OK)
                return -1;
        ret = reply->type == REDIS_REPLY_STATUS ? 1 : 0; /* "OK" or nil */
        freeReplyObject(reply);
        return ret;
}

/* GET :until. @returns 1 with *out, 0 if missing, <0 error. */
static int read_until(sk_idgen_t *g, sk_redis_t *r, int64_t *out, char *errstr,
                      size_t errstr_size)
{
        const char *argv[2] = { "GET", g->k_until };
        redisReply *reply = NULL;
        int ret = 0;

        if (sk_redis_cmd(r, &reply, 2, argv, NULL, errstr, errstr_size) != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_STRING) {
                char *end = NULL;
                long long v = strtoll(reply->str, &end, 10);
                if (end && *end == '\0' && v > 0) {
                        *out = (int64_t)v;
                        ret = 1;
                }
        }
        freeReplyObject(reply);
        return ret;
}

/* Run RENEW_LUA with until = @p until_ms. @returns 1 renewed, 0 lost, <0 error. */
static int renew(sk_idgen_t *g, sk_redis_t *r, int64_t until_ms, char *errstr,
                 size_t errstr_size)
{
        char px[24], until_s[24];
        const char *argv[8] = { "EVAL", RENEW_LUA, "2", g->k_lease, g->k_until, g->value,
                                px, until_s };
        redisReply *reply = NULL;
        int ret = -1;

        snprintf(px, sizeof(px), "%d", g->lease_ms);
        snprintf(until_s, sizeof(until_s), "%" PRId64, until_ms);
        if (sk_redis_cmd(r, &reply, 8, argv, NULL, errstr, errstr_size) != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_INTEGER)
                ret = reply->integer == 1 ? 1 : 0;
        else
                sk_seterr(errstr, errstr_size, "lease renew: unexpected reply type %d",
                          reply->type);
        freeReplyObject(reply);
        return ret;
}

/* After SET NX succeeded: read :until, renew once, open the window.
 * @returns 0 ok, <0 error (the key is ours but the window stays closed; the renewal
 * thread will retry as a lost lease). */
static int after_acquire(sk_idgen_t *g, sk_redis_t *r, int64_t acquired_ms, char *errstr,
                         size_t errstr_size)
{
        int64_t old_until = 0, from_ms, t_ms;
        int rc;

        if ((rc = read_until(g, r, &old_until, errstr, errstr_size)) < 0)
                return -1;
        from_ms = rc == 1 ? old_until + 1 : acquired_ms + two_thirds(g->lease_ms);
        t_ms = sk_now_ms();
        if ((rc = renew(g, r, t_ms + two_thirds(g->lease_ms), errstr, errstr_size)) != 1)
                return -1;
        pthread_mutex_lock(&g->mu);
        g->held = 1;
        set_window(g, from_ms, t_ms + two_thirds(g->lease_ms));
        pthread_mutex_unlock(&g->mu);
        return 0;
}

static void set_worker(sk_idgen_t *g, int id)
{
        g->worker_id = id;
        sk_key_worker(g->k_lease, g->prefix, id, 0);
        sk_key_worker(g->k_until, g->prefix, id, 1);
}

static void *renew_thread(void *arg)
{
        sk_idgen_t *g = arg;
        int64_t period_ms = g->lease_ms / 3 > 0 ? g->lease_ms / 3 : 1;

        for (;;) {
                struct timespec ts;
                char errstr[256];
                int held, rc;

                /* Sleep one period, or until stopped. */
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_sec += period_ms / 1000;
                ts.tv_nsec += (period_ms % 1000) * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                pthread_mutex_lock(&g->mu);
                while (!g->stop &&
                       pthread_cond_timedwait(&g->cv, &g->mu, &ts) == 0)
                        ;
                held = g->held;
                if (g->stop) {
                        pthread_mutex_unlock(&g->mu);
                        break;
                }
                pthread_mutex_unlock(&g->mu);

                if (held) {
                        int64_t t_ms = sk_now_ms();
                        int64_t until_ms = t_ms + two_thirds(g->lease_ms);
                        rc = renew(g, g->rconn, until_ms, errstr, sizeof(errstr));
                        pthread_mutex_lock(&g->mu);
                        if (rc == 1) {
                                set_window(g, g->mint_from_ms, until_ms);
                        } else if (rc == 0) {
                                /* Lost: someone else holds it, or it expired. Stop now. */
                                g->held = 0;
                                set_window(g, 0, 0);
                        }
                        /* rc < 0: Redis unreachable; the window closes by itself. */
                        pthread_mutex_unlock(&g->mu);
                        if (rc != 0)
                                continue;
                }
                /* Not held: try to lease the same id again. */
                {
                        int64_t acquired_ms = sk_now_ms();
                        rc = try_set_nx(g, g->rconn, errstr, sizeof(errstr));
                        if (rc == 1)
                                (void)after_acquire(g, g->rconn, acquired_ms, errstr,
                                                    sizeof(errstr));
                }
        }
        return NULL;
}

sk_idgen_t *sk_idgen_start(const sk_conf_t *conf, sk_err_t *err, char *errstr,
                           size_t errstr_size)
{
        sk_idgen_t *g = NULL;
        char host[256] = "unknown";
        pthread_condattr_t cattr;
        int rc, mu_init = 0, cv_init = 0;

        *err = SK_EINVAL;
        if (!conf || conf->worker_id < -1 || conf->worker_id >= SK_WORKER_IDS ||
            conf->worker_lease_ms < 3) {
                sk_seterr(errstr, errstr_size, "idgen: invalid worker id or lease");
                return NULL;
        }
        if (!(g = calloc(1, sizeof(*g)))) {
                *err = SK_ENOMEM;
                sk_seterr(errstr, errstr_size, "idgen: out of memory");
                return NULL;
        }
        g->url = conf->redis;
        snprintf(g->prefix, sizeof(g->prefix), "%s", conf->redis_prefix);
        g->lease_ms = conf->worker_lease_ms;
        (void)gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = '\0';
        snprintf(g->value, sizeof(g->value), "%s:%ld:%" PRId64, host, (long)getpid(),
                 sk_now_ms());
        if (pthread_mutex_init(&g->mu, NULL) != 0)
                goto fail;
        mu_init = 1;
        pthread_condattr_init(&cattr);
        pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
        rc = pthread_cond_init(&g->cv, &cattr);
        pthread_condattr_destroy(&cattr);
        if (rc != 0)
                goto fail;
        cv_init = 1;

        /* The connection used to acquire becomes the renewal thread's own. Command
         * timeout: a third of the lease, so a stuck renewal never outlives a period. */
        g->rconn = sk_redis_connect(&conf->redis,
                                    g->lease_ms / 3 < 2000 ? (g->lease_ms / 3 > 50 ? g->lease_ms / 3 : 50) : 2000,
                                    errstr, errstr_size);
        if (!g->rconn) {
                *err = SK_EAGAIN;
                goto fail;
        }

        if (conf->worker_id >= 0) {
                set_worker(g, conf->worker_id);
                if (!(g->sf = sk_snowflake_new(g->worker_id, MAX_BACKWARDS_MS, NULL, NULL))) {
                        sk_seterr(errstr, errstr_size, "idgen: snowflake_new failed");
                        *err = SK_ENOMEM;
                        goto fail;
                }
                int64_t acquired_ms = sk_now_ms();
                rc = try_set_nx(g, g->rconn, errstr, errstr_size);
                if (rc < 0) {
                        *err = SK_EAGAIN;
                        goto fail;
                }
                if (rc == 0) {
                        *err = SK_EEXIST;
                        sk_seterr(errstr, errstr_size, "worker id %d is leased by another process (%s)",
                                  conf->worker_id, g->k_lease);
                        goto fail;
                }
                if (after_acquire(g, g->rconn, acquired_ms, errstr, errstr_size) < 0) {
                        *err = SK_EAGAIN;
                        goto fail_release;
                }
        } else {
                int id;
                for (id = 0; id < SK_WORKER_IDS; id++) {
                        int64_t acquired_ms = sk_now_ms();
                        set_worker(g, id);
                        rc = try_set_nx(g, g->rconn, errstr, errstr_size);
                        if (rc < 0) {
                                *err = SK_EAGAIN;
                                goto fail;
                        }
                        if (rc == 1) {
                                if (!(g->sf = sk_snowflake_new(id, MAX_BACKWARDS_MS, NULL, NULL))) {
                                        sk_seterr(errstr, errstr_size, "idgen: snowflake_new failed");
                                        *err = SK_ENOMEM;
                                        goto fail_release;
                                }
                                if (after_acquire(g, g->rconn, acquired_ms, errstr,
                                                  errstr_size) < 0) {
                                        *err = SK_EAGAIN;
                                        goto fail_release;
                                }
                                break;
                        }
                }
                if (id == SK_WORKER_IDS) {
                        *err = SK_EAGAIN;
                        sk_seterr(errstr, errstr_size, "no free worker id in 0..%d",
                                  SK_WORKER_IDS - 1);
                        goto fail;
                }
        }

        if (pthread_create(&g->thr, NULL, renew_thread, g) != 0) {
                *err = SK_ENOMEM;
                sk_seterr(errstr, errstr_size, "idgen: cannot start the renewal thread");
                goto fail_release;
        }
        g->thread_started = 1;
        *err = SK_OK;
        return g;

fail_release:
        {
                const char *argv[5] = { "EVAL", DEL_LUA, "1", g->k_lease, g->value };
                redisReply *reply = NULL;
                if (sk_redis_cmd(g->rconn, &reply, 5, argv, NULL, NULL, 0) == SK_OK)
                        freeReplyObject(reply);
        }
fail:
        sk_redis_close(g->rconn);
        if (g->sf)
                sk_snowflake_destroy(g->sf);
        if (cv_init)
                pthread_cond_destroy(&g->cv);
        if (mu_init)
                pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
}

sk_err_t sk_idgen_next(sk_idgen_t *g, int64_t *out, char *errstr, size_t errstr_size)
{
        /* The snowflake enforces the mint window itself (its own mutex). */
        return sk_snowflake_next(g->sf, out, errstr, errstr_size);
}

int sk_idgen_usable(sk_idgen_t *g)
{
        int64_t now_ms = sk_now_ms();
        int ok;

        pthread_mutex_lock(&g->mu);
        ok = g->held && now_ms >= g->mint_from_ms && now_ms <= g->mint_until_ms;
        pthread_mutex_unlock(&g->mu);
        return ok;
}

int sk_idgen_worker_id(const sk_idgen_t *g)
{
        return g->worker_id;
}

void sk_idgen_stop(sk_idgen_t *g)
{
        if (!g)
                return;
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        set_window(g, 0, 0); /* mint nothing more */
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        if (g->thread_started)
                pthread_join(g->thr, NULL);
        {
                /* Release the lease only if it is still ours; :until stays. */
                const char *argv[5] = { "EVAL", DEL_LUA, "1", g->k_lease, g->value };
                redisReply *reply = NULL;
                if (sk_redis_cmd(g->rconn, &reply, 5, argv, NULL, NULL, 0) == SK_OK)
                        freeReplyObject(reply);
        }
        sk_redis_close(g->rconn);
        sk_snowflake_destroy(g->sf);
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
}
