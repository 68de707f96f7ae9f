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

/* The integer after "NAME:" in an INFO reply @p text, or @p dflt when absent. */
static long info_long(const char *text, const char *name, long dflt)
{
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\n%s:", name);
        p = strstr(text, pat);
        return p ? strtol(p + strlen(pat), NULL, 10) : dflt;
}

/* A node's INFO replication, or NULL when it does not answer (owned: free()). */
static char *node_info_repl(const char *host, int port)
{
        struct timeval tv = { 2, 0 };
        redisContext *c = redisConnectWithTimeout(host, port, tv);
        redisReply *r;
        char *out = NULL;

        if (!c || c->err) {
                if (c)
                        redisFree(c);
                return NULL;
        }
        redisSetTimeout(c, tv);
        r = redisCommand(c, "INFO replication");
        if (r && r->type == REDIS_REPLY_STRING) {
                out = malloc(r->len + 2);
                ck_assert_ptr_nonnull(out);
                out[0] = '\n';         /* every field, the first too, follows a newline */
                memcpy(out + 1, r->str, r->len + 1);
        }
        if (r)
                freeReplyObject(r);
        redisFree(c);
        return out;
}

/* 1 when the master on @p host:@p port has at least min-replicas-to-write good replicas
 * (at least 1 when the setting is 0); why not into @p why. */
static int master_writable(const char *host, int port, char *why, size_t why_size)
{
        char *info = node_info_repl(host, port);
        long good, want = 1;
        redisContext *c;

        if (!info) {
                snprintf(why, why_size, "master %s:%d does not answer", host, port);
                return 0;
        }
        c = sk_test_node(host, port);
        {
                redisReply *r = sk_test_node_cmd(c, "CONFIG GET min-replicas-to-write");
                if (r->elements == 2 && r->element[1]->str)
                        want = strtol(r->element[1]->str, NULL, 10);
                freeReplyObject(r);
        }
        redisFree(c);
        if (want < 1)
                want = 1;
        good = info_long(info, "min_slaves_good_slaves", 0);
        free(info);
        if (good >= want)
                return 1;
        snprintf(why, why_size, "master %s:%d has %ld good replica(s), min-replicas-to-write wants %ld",
                 host, port, good, want);
        return 0;
}

int sk_test_wait_replica_usable(int replica_port, int timeout_ms)
{
        int64_t t0 = sk_mono_ms();
        char why[256] = "not asked yet";

        for (;;) {
                char *info = node_info_repl("127.0.0.1", replica_port);
                int master = -1;

                if (!info)
                        snprintf(why, sizeof(why), "replica %d does not answer", replica_port);
                else if (!strstr(info, "\nrole:slave"))
                        snprintf(why, sizeof(why), "node %d is not a replica", replica_port);
                else if (!strstr(info, "\nmaster_link_status:up"))
                        snprintf(why, sizeof(why), "replica %d: link to its master down", replica_port);
                else
                        master = (int)info_long(info, "master_port", -1);
                free(info);
                if (master > 0 && master_writable("127.0.0.1", master, why, sizeof(why)))
                        return master;
                ck_assert_msg(sk_mono_ms() - t0 < timeout_ms, "replica %d not usable for a failover after %d ms: %s",
                              replica_port, timeout_ms, why);
                usleep(200000);
        }
}

/* Field @p name of a SENTINEL REPLICAS entry @p e (a flat name/value array), or "". */
static const char *sentinel_field(const redisReply *e, const char *name)
{
        for (size_t i = 0; i + 1 < e->elements; i += 2)
                if (e->element[i]->str && strcmp(e->element[i]->str, name) == 0)
                        return e->element[i + 1]->str ? e->element[i + 1]->str : "";
        return "";
}

/* How many replicas in the Sentinel's reply @p r are usable (see
 * sk_test_sentinel_wait_usable) for master @p mhost:@p mport; their view into @p why. */
static int sentinel_usable(const redisReply *r, const char *mhost, int mport, char *why, size_t why_size)
{
        int usable = 0;
        size_t off = 0;

        why[0] = '\0';
        for (size_t i = 0; i < r->elements; i++) {
                const redisReply *e = r->element[i];
                const char *flags = sentinel_field(e, "flags"), *ip = sentinel_field(e, "ip");
                int port = atoi(sentinel_field(e, "port"));
                int ok = !strstr(flags, "s_down") && !strstr(flags, "o_down") &&
                         !strstr(flags, "disconnected") &&
                         strcmp(sentinel_field(e, "master-link-status"), "ok") == 0 &&
                         atoi(sentinel_field(e, "master-port")) == mport &&
                         strcmp(sentinel_field(e, "master-host"), mhost) == 0;

                if (ok) {
                        char *info = node_info_repl(ip, port);
                        ok = info && strstr(info, "\nmaster_link_status:up") &&
                             info_long(info, "master_port", -1) == mport;
                        free(info);
                }
                usable += ok;
                if (off < why_size)
                        off += (size_t)snprintf(why + off, why_size - off, "%s%s:%d flags=%s link=%s master=%s:%s%s",
                                                i ? "; " : "", ip, port, flags,
                                                sentinel_field(e, "master-link-status"),
                                                sentinel_field(e, "master-host"),
                                                sentinel_field(e, "master-port"), ok ? " usable" : "");
        }
        return usable;
}

int sk_test_sentinel_wait_usable(const sk_redis_url_t *url, int timeout_ms)
{
        int64_t t0 = sk_mono_ms();
        char why[768] = "not asked yet", mwhy[256];

        for (;;) {
                redisContext *sc = sk_test_node(url->seeds[0].host, url->seeds[0].port);
                redisReply *m = redisCommand(sc, "SENTINEL get-master-addr-by-name %s", url->master);
                int usable = 0;

                if (m && m->type == REDIS_REPLY_ARRAY && m->elements == 2) {
                        char mhost[64];
                        int mport = atoi(m->element[1]->str);
                        redisReply *r = redisCommand(sc, "SENTINEL REPLICAS %s", url->master);

                        snprintf(mhost, sizeof(mhost), "%s", m->element[0]->str);
                        if (r && r->type == REDIS_REPLY_ARRAY)
                                usable = sentinel_usable(r, mhost, mport, why, sizeof(why));
                        if (r)
                                freeReplyObject(r);
                        if (usable > 0 && !master_writable(mhost, mport, mwhy, sizeof(mwhy))) {
                                snprintf(why, sizeof(why), "%s", mwhy);
                                usable = 0;
                        }
                }
                if (m)
                        freeReplyObject(m);
                redisFree(sc);
                if (usable > 0)
                        return usable;
                ck_assert_msg(sk_mono_ms() - t0 < timeout_ms,
                              "the Sentinels report no usable replica of '%s' after %d ms: %s", url->master,
                              timeout_ms, why);
                usleep(200000);
        }
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
