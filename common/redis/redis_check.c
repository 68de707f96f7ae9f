/* redis_check.c: what every binary checks of Redis at startup and /readyz reports
 * (DESIGN.md 4, 4b): every master reachable, Redis >= 7.0 (the scripts use PEXPIREAT
 * NX/GT), maxmemory-policy noeviction and done loading its dataset (loading:0) on each;
 * and the masters' min-replicas-to-write / min-replicas-max-lag, which /readyz reports.
 * Not thread-safe: one sk_redis_t per thread (sk_redis_startup_check opens its own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"
#include "sk/log.h"

/* redis_version of node @p n as major*100+minor, or -1. */
static int node_version(sk_redis_t *r, int n, char *ver, size_t ver_size)
{
        const char *argv[2] = { "INFO", "server" };
        redisReply *reply = NULL;
        const char *p;
        int major = -1, minor = 0;

        if (sk__node_cmd(r, n, 2, argv, NULL, &reply, NULL, 0) != SK_OK)
                return -1;
        if ((reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) &&
            (p = strstr(reply->str, "redis_version:")) &&
            sscanf(p + 14, "%d.%d", &major, &minor) >= 1)
                snprintf(ver, ver_size, "%.*s", (int)strcspn(p + 14, "\r\n"), p + 14);
        freeReplyObject(reply);
        return major < 0 ? -1 : major * 100 + minor;
}

/* 1 if node @p n is still loading its dataset (INFO persistence "loading:1": it answers
 * LOADING to every data command), 0 if not, -1 on error. */
static int node_loading(sk_redis_t *r, int n)
{
        const char *argv[2] = { "INFO", "persistence" };
        redisReply *reply = NULL;
        const char *p;
        int ret = -1;

        if (sk__node_cmd(r, n, 2, argv, NULL, &reply, NULL, 0) != SK_OK)
                return -1;
        if ((reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS) &&
            (p = strstr(reply->str, "loading:")))
                ret = p[8] == '1';
        freeReplyObject(reply);
        return ret;
}

/* CONFIG GET @p name of node @p n as a non-negative integer, or -1. */
static long long node_config_int(sk_redis_t *r, int n, const char *name)
{
        const char *argv[3] = { "CONFIG", "GET", name };
        redisReply *reply = NULL;
        long long v = -1;
        char *end;

        if (sk__node_cmd(r, n, 3, argv, NULL, &reply, NULL, 0) != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
            reply->element[1]->type == REDIS_REPLY_STRING) {
                v = strtoll(reply->element[1]->str, &end, 10);
                if (end == reply->element[1]->str || *end || v < 0)
                        v = -1;
        }
        freeReplyObject(reply);
        return v;
}

int sk_redis_min_replicas(sk_redis_t *r, int *max_lag_s)
{
        int m[SK_RNODES_MAX], nm = sk__masters(r, m);
        long long to_write = -1, lag = 0;

        if (nm == 0)
                return -1;
        for (int i = 0; i < nm; i++) {
                long long w = node_config_int(r, m[i], "min-replicas-to-write");
                long long l = node_config_int(r, m[i], "min-replicas-max-lag");

                if (w < 0 || l < 0)
                        return -1;
                if (to_write < 0 || w < to_write)
                        to_write = w;
                if (l > lag)
                        lag = l;
        }
        if (max_lag_s)
                *max_lag_s = lag > 1000000 ? 1000000 : (int)lag;
        return to_write > 1000000 ? 1000000 : (int)to_write;
}

sk_err_t sk_redis_check_server(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        int m[SK_RNODES_MAX], nm = sk__masters(r, m);

        if (nm == 0) {
                sk_seterr(errstr, errstr_size, "redis: no master reachable");
                return SK_EAGAIN;
        }
        for (int i = 0; i < nm; i++) {
                sk_rnode_t *nd = &r->nodes[m[i]];
                char ver[32] = "?", policy[64] = "?";
                int v = node_version(r, m[i], ver, sizeof(ver));
                int ne;

                if (v < 0) {
                        sk_seterr(errstr, errstr_size, "redis %s:%d: unreachable (INFO server "
                                  "failed)", nd->host, nd->port);
                        return SK_EAGAIN;
                }
                if (v < 700) {
                        sk_seterr(errstr, errstr_size, "redis %s:%d runs Redis %s; seckill "
                                  "needs Redis >= 7.0 (PEXPIREAT NX/GT, DESIGN.md 4)",
                                  nd->host, nd->port, ver);
                        return SK_EINVAL;
                }
                if ((ne = sk__node_noeviction(r, m[i], policy, sizeof(policy))) < 0) {
                        sk_seterr(errstr, errstr_size, "redis %s:%d: CONFIG GET "
                                  "maxmemory-policy failed", nd->host, nd->port);
                        return SK_EAGAIN;
                }
                if (!ne) {
                        sk_seterr(errstr, errstr_size, "redis %s:%d has maxmemory-policy %s; "
                                  "seckill needs noeviction (DESIGN.md 4)", nd->host,
                                  nd->port, policy);
                        return SK_EINVAL;
                }
                if ((ne = node_loading(r, m[i])) != 0) {
                        sk_seterr(errstr, errstr_size, ne > 0 ? "redis %s:%d is loading its "
                                  "dataset (loading:1)" : "redis %s:%d: INFO persistence "
                                  "failed", nd->host, nd->port);
                        return SK_EAGAIN;
                }
        }
        return SK_OK;
}

int sk_redis_startup_check(const sk_redis_url_t *url, const char *prog)
{
        char errstr[512];
        sk_redis_t *r = sk_redis_connect(url, 1000, errstr, sizeof(errstr));
        sk_err_t err;

        if (!r) {
                /* Unreachable now: every binary copes with Redis being down (DESIGN.md 12). */
                SK_LOG(SK_DEBUG, "redis_check_skipped", "reason=\"%s\"", errstr);
                return 0;
        }
        err = sk_redis_check_server(r, errstr, sizeof(errstr));
        sk_redis_close(r);
        if (err == SK_EINVAL) {
                fprintf(stderr, "%s: %s\n", prog, errstr);
                return 2;
        }
        if (err != SK_OK)
                SK_LOG(SK_DEBUG, "redis_check_skipped", "reason=\"%s\"", errstr);
        return 0;
}
