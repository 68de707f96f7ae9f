/* 0119_redis_topo_support.h: helpers of the Redis Cluster and Sentinel tests
 * (DESIGN.md 4b, 10; labels cluster / sentinel).
 *
 * Topology: each test runs `scripts/stack.sh up cluster|sentinel` first, which starts
 * the local topology (127.0.0.1:7000-7005, or 6390/6391 + Sentinels 26390-26392) when
 * it is not running and otherwise uses the running one; the tests leave it running for
 * the next test (`scripts/stack.sh down cluster|sentinel` stops it). Tests that change
 * the topology (failover, slot migration) hold the CTest RESOURCE_LOCK of their
 * topology and leave it serving every slot. SECKILL_TEST_CLUSTER_URL /
 * SECKILL_TEST_SENTINEL_URL point them at another topology (then nothing is started).
 * Direct hiredis connections here are only for inspecting and steering single nodes
 * (CLUSTER SETSLOT, FAILOVER, ROLE); every data command goes through sk_redis. */
#pragma once
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <hiredis/hiredis.h>

#include "sk_test.h"
#include "sk/conf.h"
#include "sk/redis.h"

#define TOPO_CLUSTER_URL "redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"
#define TOPO_SENTINEL_URL \
        "redis-sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/seckill"

/* Start (or reuse) topology @p which via scripts/stack.sh unless @p env_url is set;
 * parse the URL into @p url. */
static inline void topo_up(const char *which, const char *env_var, const char *def_url,
                           sk_redis_url_t *url)
{
        const char *u = getenv(env_var);
        char cmd[1024], err[256];

        if (!u || !*u) {
                const char *src = getenv("SK_SRC");
                snprintf(cmd, sizeof(cmd), "bash %s/scripts/stack.sh up %s >&2",
                         src ? src : ".", which);
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

static inline int64_t topo_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A direct connection to one node (inspection / steering only). */
static inline redisContext *node_conn(const char *host, int port)
{
        struct timeval tv = { 5, 0 };
        redisContext *c = redisConnectWithTimeout(host, port, tv);
        ck_assert_msg(c && !c->err, "connect %s:%d: %s", host, port, c ? c->errstr : "oom");
        redisSetTimeout(c, tv);
        return c;
}

/* Run a command on a direct connection; the reply must not be an error. */
static inline redisReply *node_ok(redisContext *c, const char *fmt, ...)
{
        va_list ap;
        redisReply *r;

        va_start(ap, fmt);
        r = redisvCommand(c, fmt, ap);
        va_end(ap);
        ck_assert_msg(r != NULL, "%s: %s", fmt, c->errstr);
        ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s: %s", fmt, r->str);
        return r;
}

/* Owner "host:port" of @p slot per CLUSTER SLOTS of a direct connection @p c;
 * replica (first one) into @p rhost/@p rport when not NULL. @returns the owner's port. */
static inline int slot_owner(redisContext *c, int slot, int *replica_port)
{
        redisReply *r = node_ok(c, "CLUSTER SLOTS");
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

/* Wait (at most 30 s) until @p slot's master lists a replica in CLUSTER SLOTS and has a
 * good one (acked within min-replicas-max-lag): right after a failover or a rejoin it
 * may have neither. @returns the master's port; its replica's into *replica_port. */
static inline int wait_slot_replica(const sk_redis_url_t *url, int slot, int *replica_port)
{
        redisContext *c = node_conn(url->host, url->port);
        int64_t t0 = topo_now_ms();
        int master = -1, good = 0;

        *replica_port = -1;
        while (topo_now_ms() - t0 < 30000) {
                master = slot_owner(c, slot, replica_port);
                if (master > 0 && *replica_port > 0) {
                        redisContext *cm = node_conn("127.0.0.1", master);
                        redisReply *r = node_ok(cm, "INFO replication");
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

/* Node id of the node on @p port (CLUSTER MYID) into @p id (41 bytes). */
static inline void node_id(int port, char *id)
{
        redisContext *c = node_conn("127.0.0.1", port);
        redisReply *r = node_ok(c, "CLUSTER MYID");
        snprintf(id, 41, "%s", r->str);
        freeReplyObject(r);
        redisFree(c);
}

/* Outcomes of commands run through a failover. */
typedef struct { long ok, eagain, unknown, other; } tally_t;

/* INCR @p key through sk_redis, counted by outcome in @p t. */
static inline void tally_incr(sk_redis_t *r, const char *key, tally_t *t)
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

/* claim.lua "claim" of trace @p trace_id on the keys BASE:meta / BASE:trace (BASE
 * carries the hash tag); *redrives = the new redrive count. */
static inline sk_err_t topo_claim(sk_redis_t *r, const char *base, const char *trace_id,
                                  long long *redrives, char *err, size_t err_size)
{
        char meta[160], trace[160];
        const char *keys[2] = { meta, trace }, *args[3] = { "claim", "60000", trace_id };
        redisReply *rep = NULL;
        sk_err_t e;

        snprintf(meta, sizeof(meta), "%s:meta", base);
        snprintf(trace, sizeof(trace), "%s:trace", base);
        if ((e = sk_redis_evalsha(r, SK_SCRIPT_CLAIM, 2, keys, 3, args, &rep, err, err_size)) != SK_OK)
                return e;
        *redrives = rep->element[1]->integer;
        freeReplyObject(rep);
        return SK_OK;
}
