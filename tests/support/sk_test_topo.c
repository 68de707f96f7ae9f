/* sk_test_topo.c: the Redis Cluster and Sentinel tests' helpers (sk_test_topo.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/scripts.h"

void sk_test_topo_up(const char *which, const char *env_var, const char *def_url,
                     sk_redis_url_t *url)
{
        const char *u = getenv(env_var);
        char cmd[1024], err[256];

        if (!u || !*u) {
                const char *src = getenv("SK_SRC");

                snprintf(cmd, sizeof(cmd), "bash %s/scripts/stack.sh up %s >&2", src ? src : ".", which);
                if (system(cmd) != 0) {
                        fprintf(stderr, "FAIL: '%s' failed\n", cmd);
                        exit(1);
                }
                u = def_url;
        }
        if (sk_redis_url_parse(u, url, err, sizeof(err)) != 0) {
                fprintf(stderr, "FAIL: %s=%s: %s\n", env_var, u, err);
                exit(1);
        }
}

redisContext *sk_test_node(const char *host, int port)
{
        struct timeval tv = { 5, 0 };
        redisContext *c = redisConnectWithTimeout(host, port, tv);

        ck_assert_msg(c && !c->err, "connect %s:%d: %s", host, port, c ? c->errstr : "oom");
        redisSetTimeout(c, tv);
        return c;
}

redisReply *sk_test_node_cmd(redisContext *c, const char *fmt, ...)
{
        redisReply *r;
        va_list ap;

        va_start(ap, fmt);
        r = redisvCommand(c, fmt, ap);
        va_end(ap);
        ck_assert_msg(r != NULL, "%s: %s", fmt, c->errstr);
        ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s: %s", fmt, r->str);
        return r;
}

int sk_test_slot_owner(redisContext *c, int slot, int *replica_port)
{
        redisReply *r = sk_test_node_cmd(c, "CLUSTER SLOTS");
        int port = -1;

        for (size_t i = 0; i < r->elements; i++) {
                redisReply *e = r->element[i];

                if (slot >= e->element[0]->integer && slot <= e->element[1]->integer) {
                        port = (int)e->element[2]->element[1]->integer;
                        if (replica_port)
                                *replica_port = e->elements > 3 ?
                                        (int)e->element[3]->element[1]->integer : -1;
                }
        }
        freeReplyObject(r);
        return port;
}

int sk_test_wait_slot_replica(const sk_redis_url_t *url, int slot, int *replica_port)
{
        redisContext *c = sk_test_node(url->host, url->port);
        int64_t t0 = sk_mono_ms();
        int master = -1, good = 0;

        *replica_port = -1;
        while (sk_mono_ms() - t0 < 30000) {
                master = sk_test_slot_owner(c, slot, replica_port);
                if (master > 0 && *replica_port > 0) {
                        redisContext *cm = sk_test_node("127.0.0.1", master);
                        redisReply *r = sk_test_node_cmd(cm, "INFO replication");
                        const char *p = strstr(r->str, "min_slaves_good_slaves:");

                        good = p && atoi(p + 23) >= 1;
                        freeReplyObject(r);
                        redisFree(cm);
                        if (good)
                                break;
                }
                usleep(200000);
        }
        redisFree(c);
        ck_assert_msg(good, "slot %d: master %d has no good replica after 30 s", slot, master);
        return master;
}

void sk_test_node_id(int port, char *id)
{
        redisContext *c = sk_test_node("127.0.0.1", port);
        redisReply *r = sk_test_node_cmd(c, "CLUSTER MYID");

        snprintf(id, 41, "%s", r->str);
        freeReplyObject(r);
        redisFree(c);
}

void sk_test_tally_incr(sk_redis_t *r, const char *key, sk_test_tally_t *t)
{
        char err[256];
        redisReply *rep = NULL;

        switch (sk_redis_cmdf(r, &rep, err, sizeof(err), "INCR %s", key)) {
        case SK_OK:
                t->ok++;
                freeReplyObject(rep);
                break;
        case SK_EAGAIN:
                t->eagain++;
                break;
        case SK_EUNKNOWN:
                t->unknown++;
                break;
        default:
                t->other++;
                fprintf(stderr, "INCR: unexpected error: %s\n", err);
        }
}

sk_err_t sk_test_claim(sk_redis_t *r, const char *base, const char *trace_id,
                       long long *redrives, char *err, size_t err_size)
{
        char meta[160], trace[160];
        const char *keys[2] = { meta, trace }, *args[3] = { "claim", "60000", trace_id };
        redisReply *rep = NULL;
        sk_err_t e;

        snprintf(meta, sizeof(meta), "%s:meta", base);
        snprintf(trace, sizeof(trace), "%s:trace", base);
        if ((e = sk_script_eval(r, SK_SCRIPT_CLAIM, 2, keys, 3, args, &rep, err, err_size)) != SK_OK)
                return e;
        *redrives = rep->element[1]->integer;
        freeReplyObject(rep);
        return SK_OK;
}
