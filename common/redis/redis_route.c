/* redis_route.c: Redis Cluster routing of one command (DESIGN.md 4b).
 *
 *   - The slot map comes from CLUSTER SLOTS, asked of a known master (or any node, or
 *     a seed); it is refreshed in full at once after a connection error (at most every
 *     100 ms) and at most once a second after a MOVED or CLUSTERDOWN; at once, whatever
 *     the limit, by sk_redis_map_refresh and by sk_redis_map_follow when another thread
 *     saw the map change (its generation differs from the one this handle followed).
 *   - MOVED: that slot now maps to the named node; retry there. ASK: ASKING + retry on
 *     the named node, map unchanged. TRYAGAIN: back off (20, 40, 80, 160, 320 ms) and
 *     retry. At most SK_REDIR_MAX redirects, then SK_EAGAIN (not run).
 *   - CLUSTERDOWN and an uncovered slot are transient (SK_EAGAIN, not run).
 *   - No reply after the command was handed to hiredis: outcome unknown (SK_EUNKNOWN),
 *     exactly as on one server (DESIGN.md 8); the node's connection is dropped.
 * For redis:// and Sentinel every slot is node 0 and no map is kept. The per-command
 * bookkeeping is sk_pcmd_on_reply (redis_redirect.c), shared with pipelines.
 * Not thread-safe (works on one sk_redis_t). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "redis_int.h"
#include "sk/redis_redirect.h"

#define HARD_REFRESH_MIN_MS 100

int64_t sk__now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sk__node_find_or_add(sk_redis_t *r, const char *host, size_t host_len, int port)
{
        sk_rnode_t *n;

        for (int i = 0; i < r->nnodes; i++)
                if (r->nodes[i].port == port && strlen(r->nodes[i].host) == host_len &&
                    memcmp(r->nodes[i].host, host, host_len) == 0)
                        return i;
        if (r->nnodes == SK_RNODES_MAX || host_len >= sizeof(n->host) || host_len == 0)
                return -1;
        n = &r->nodes[r->nnodes];
        memset(n, 0, sizeof(*n));
        memcpy(n->host, host, host_len);
        n->host[host_len] = '\0';
        n->port = port;
        return r->nnodes++;
}

int sk__node_for_slot(sk_redis_t *r, int slot)
{
        if (r->url.kind != SK_REDIS_CLUSTER)
                return 0;
        if (slot >= 0)
                return r->slots[slot];
        for (int i = 0; i < r->nnodes; i++)     /* keyless: a connected master first */
                if (r->nodes[i].is_master && r->nodes[i].ctx)
                        return i;
        for (int i = 0; i < r->nnodes; i++)
                if (r->nodes[i].is_master)
                        return i;
        return -1;
}

/* CLUSTER SLOTS reply of node @p asked into the map. 0, or -1 (map unchanged). */
static int apply_slots(sk_redis_t *r, const redisReply *rep, int asked)
{
        const size_t map_size = sizeof(int16_t) * SK_CLUSTER_SLOTS;
        char master[SK_RNODES_MAX] = { 0 };
        int16_t *m = malloc(map_size);

        if (!m)
                return -1;
        for (int s = 0; s < SK_CLUSTER_SLOTS; s++)
                m[s] = -1;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
                goto bad;
        for (size_t i = 0; i < rep->elements; i++) {
                const redisReply *e = rep->element[i], *nd;
                const char *host;
                size_t hl;
                int idx;

                if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
                    e->element[0]->type != REDIS_REPLY_INTEGER ||
                    e->element[1]->type != REDIS_REPLY_INTEGER ||
                    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
                        goto bad;
                nd = e->element[2];
                if (nd->element[0]->type != REDIS_REPLY_STRING ||
                    nd->element[1]->type != REDIS_REPLY_INTEGER ||
                    nd->element[1]->integer < 1 || nd->element[1]->integer > 65535 ||
                    e->element[0]->integer < 0 || e->element[1]->integer >= SK_CLUSTER_SLOTS ||
                    e->element[0]->integer > e->element[1]->integer)
                        goto bad;
                host = nd->element[0]->str;
                hl = nd->element[0]->len;
                if (hl == 0 || (hl == 1 && host[0] == '?')) {   /* "the node you asked" */
                        host = r->nodes[asked].host;
                        hl = strlen(host);
                }
                if ((idx = sk__node_find_or_add(r, host, hl, (int)nd->element[1]->integer)) < 0)
                        goto bad;
                master[idx] = 1;
                for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
                        m[s] = (int16_t)idx;
        }
        memcpy(r->slots, m, map_size);
        for (int i = 0; i < r->nnodes; i++)
                r->nodes[i].is_master = master[i];
        free(m);
        return 0;
bad:
        free(m);
        return -1;
}

/* CLUSTER SLOTS on node @p n. 0 when the map was replaced. */
static int refresh_from(sk_redis_t *r, int n)
{
        redisReply *rep = NULL;
        int ok;

        if (sk__node_ensure(r, n, r->lasterr, sizeof(r->lasterr)) != SK_OK)
                return -1;
        if (!(rep = redisCommand(r->nodes[n].ctx, "CLUSTER SLOTS"))) {
                sk_seterr(r->lasterr, sizeof(r->lasterr), "CLUSTER SLOTS on %s:%d: %s",
                          r->nodes[n].host, r->nodes[n].port, r->nodes[n].ctx->errstr);
                sk__node_drop(r, n);
                return -1;
        }
        if ((ok = apply_slots(r, rep, n)) != 0)
                sk_seterr(r->lasterr, sizeof(r->lasterr), "CLUSTER SLOTS on %s:%d: %s%.*s",
                          r->nodes[n].host, r->nodes[n].port,
                          rep->type == REDIS_REPLY_ERROR ? "" : "unexpected reply",
                          rep->type == REDIS_REPLY_ERROR ? (int)rep->len : 0,
                          rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        freeReplyObject(rep);
        return ok;
}

void sk__map_refresh(sk_redis_t *r, int force)
{
        int64_t now;
        int nseen;

        if (r->url.kind != SK_REDIS_CLUSTER)
                return;
        now = sk__now_ms();
        if (!force) {
                if (!r->need_refresh)
                        return;
                if (now - r->refreshed_ms < (r->need_refresh > 1 ? HARD_REFRESH_MIN_MS
                                                                 : SK_REFRESH_MIN_MS))
                        return;
        }
        r->refreshed_ms = now;
        /* Connected masters, other masters, any node, then the seeds again. */
        for (int pass = 0; pass < 3; pass++)
                for (int i = 0; i < r->nnodes; i++) {
                        sk_rnode_t *nd = &r->nodes[i];
                        if ((pass == 0 && !(nd->is_master && nd->ctx)) ||
                            (pass == 1 && !(nd->is_master && !nd->ctx)) ||
                            (pass == 2 && nd->is_master))
                                continue;
                        if (refresh_from(r, i) == 0) {
                                r->need_refresh = 0;
                                return;
                        }
                }
        nseen = r->nnodes;
        for (int i = 0; i < r->url.nseeds; i++) {
                int n = sk__node_find_or_add(r, r->url.seeds[i].host,
                                             strlen(r->url.seeds[i].host), r->url.seeds[i].port);
                if (n >= nseen && refresh_from(r, n) == 0) {
                        r->need_refresh = 0;
                        return;
                }
        }
}

/* Routing slot of a command: its key's slot, -2 for MULTI/EXEC/DISCARD/UNWATCH/WAIT
 * (the node of the previous keyed command: WAIT 1 100 after rollback.lua must ask the
 * master that ran it, DESIGN.md 4b), -1 for other keyless commands, -3 for a
 * keyspace walk. */
int sk__cmd_slot(int argc, const char **argv, const size_t *argvlen)
{
        int k = sk_cmd_key_index(argc, argv, argvlen);
        size_t n0;

        if (k < 0)
                return -3;
        if (k > 0 && k < argc)
                return sk_key_slot(argv[k], argvlen ? argvlen[k] : strlen(argv[k]));
        n0 = argvlen ? argvlen[0] : strlen(argv[0]);
        if ((n0 == 4 && (strncasecmp(argv[0], "EXEC", 4) == 0 ||
                         strncasecmp(argv[0], "WAIT", 4) == 0)) ||
            (n0 == 5 && strncasecmp(argv[0], "MULTI", 5) == 0) ||
            (n0 == 7 && (strncasecmp(argv[0], "DISCARD", 7) == 0 ||
                         strncasecmp(argv[0], "UNWATCH", 7) == 0)))
                return -2;
        return -1;
}

int sk__masters(sk_redis_t *r, int *out)
{
        int c = 0;

        if (r->url.kind != SK_REDIS_CLUSTER) {
                out[0] = 0;
                return 1;
        }
        sk__map_refresh(r, 0);
        for (int n = 0; n < r->nnodes; n++)
                if (r->nodes[n].is_master)
                        out[c++] = n;
        return c;
}

sk_err_t sk__node_cmd(sk_redis_t *r, int n, int argc, const char **argv,
                      const size_t *argvlen, redisReply **raw, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        *raw = NULL;
        if ((err = sk__node_ensure(r, n, errstr, errstr_size)) != SK_OK)
                return err;
        if (!(*raw = redisCommandArgv(r->nodes[n].ctx, argc, argv, argvlen))) {
                sk_seterr(errstr, errstr_size, "redis %s:%d: %s (outcome unknown)",
                          r->nodes[n].host, r->nodes[n].port,
                          r->nodes[n].ctx->errstr[0] ? r->nodes[n].ctx->errstr : "no reply");
                sk__node_drop(r, n);
                r->need_refresh = 2;
                return SK_EUNKNOWN;
        }
        return SK_OK;
}

/* Send ASKING and the command in one round trip; the command's reply or NULL. */
static redisReply *asking_cmd(redisContext *ctx, int argc, const char **argv,
                              const size_t *argvlen)
{
        void *a = NULL, *rep = NULL;

        if (redisAppendCommand(ctx, "ASKING") != REDIS_OK ||
            redisAppendCommandArgv(ctx, argc, argv, argvlen) != REDIS_OK)
                return NULL;
        if (redisGetReply(ctx, &a) != REDIS_OK || !a)
                return NULL;
        freeReplyObject(a);
        if (redisGetReply(ctx, &rep) != REDIS_OK)
                return NULL;
        return rep;
}

/* Node index a MOVED/ASK names (host "" = the node that answered). */
static int redirect_node(sk_redis_t *r, const sk_redir_t *rd, int from)
{
        const char *h = rd->host[0] ? rd->host : r->nodes[from].host;
        return sk__node_find_or_add(r, h, strlen(h), rd->port);
}

sk_err_t sk__route_cmd(sk_redis_t *r, int slot, int argc, const char **argv,
                       const size_t *argvlen, redisReply **raw, int *node_out,
                       char *errstr, size_t errstr_size)
{
        sk_pcmd_t c = { .slot = slot };
        sk_err_t err;

        *raw = NULL;
        sk__map_refresh(r, 0);
        c.target = slot == -2 && r->last_node >= 0 ? r->last_node
                                                   : sk__node_for_slot(r, slot < 0 ? -1 : slot);
        if (c.target < 0) {
                r->need_refresh = 2;
                sk__map_refresh(r, 0);
                c.target = sk__node_for_slot(r, slot < 0 ? -1 : slot);
                if (c.target < 0) {
                        sk_seterr(errstr, errstr_size, "redis cluster: slot %d is not covered "
                                  "by any reachable master", slot);
                        return SK_EAGAIN;
                }
        }
        for (;;) {
                redisReply *rep;
                sk_redir_t rd;
                int rn = -1;

                if (c.backoff)
                        usleep((useconds_t)(10000u << (c.redirects < 5 ? c.redirects : 5)));
                if ((err = sk__node_ensure(r, c.target, errstr, errstr_size)) != SK_OK)
                        return err;
                if (c.asking)
                        rep = asking_cmd(r->nodes[c.target].ctx, argc, argv, argvlen);
                else
                        rep = redisCommandArgv(r->nodes[c.target].ctx, argc, argv, argvlen);
                if (!rep) {
                        sk_rnode_t *nd = &r->nodes[c.target];
                        sk_seterr(errstr, errstr_size, "redis %s:%d: %s (outcome unknown)",
                                  nd->host, nd->port,
                                  nd->ctx && nd->ctx->errstr[0] ? nd->ctx->errstr : "no reply");
                        sk__node_drop(r, c.target);
                        r->need_refresh = 2;
                        return SK_EUNKNOWN;
                }
                if (rep->type != REDIS_REPLY_ERROR || r->url.kind != SK_REDIS_CLUSTER ||
                    sk_redir_parse(rep->str, rep->len, &rd) == SK_REDIR_NONE) {
                        *raw = rep;
                        break;
                }
                if (rd.kind == SK_REDIR_CLUSTERDOWN) {
                        if (r->need_refresh < 1)
                                r->need_refresh = 1;
                        *raw = rep;
                        break;
                }
                if (rd.kind == SK_REDIR_MOVED || rd.kind == SK_REDIR_ASK)
                        rn = redirect_node(r, &rd, c.target);
                if (rd.kind == SK_REDIR_MOVED && rn >= 0) {
                        r->slots[rd.slot] = (int16_t)rn;
                        if (r->need_refresh < 1)
                                r->need_refresh = 1;
                }
                if (sk_pcmd_on_reply(&c, &rd, rn) == SK_PCMD_NOTRUN) {
                        sk_seterr(errstr, errstr_size, "redis cluster: %.*s (gave up after %d "
                                  "redirects; not run)", (int)rep->len, rep->str, c.redirects);
                        freeReplyObject(rep);
                        return SK_EAGAIN;
                }
                freeReplyObject(rep);
        }
        *node_out = c.target;
        if (slot >= 0)
                r->last_node = c.target;
        return SK_OK;
}

/* "host:port" of node @p n into @p addr; "" when @p n is not a node. */
static void node_addr(const sk_redis_t *r, int n, char *addr, size_t addr_size)
{
        if (addr_size == 0)
                return;
        if (n < 0 || n >= r->nnodes)
                addr[0] = '\0';
        else
                snprintf(addr, addr_size, "%s:%d", r->nodes[n].host, r->nodes[n].port);
}

void sk__node_addr(const sk_redis_t *r, int n, char *addr, size_t addr_size)
{
        node_addr(r, n, addr, addr_size);
}

sk_err_t sk_redis_key_addr(sk_redis_t *r, const char *key, char *addr, size_t addr_size)
{
        int n;

        sk__map_refresh(r, 0);
        n = sk__node_for_slot(r, sk_key_slot(key, strlen(key)));
        node_addr(r, n, addr, addr_size);
        return n < 0 ? SK_EAGAIN : SK_OK;
}

void sk_redis_map_stale(sk_redis_t *r)
{
        if (r->url.kind == SK_REDIS_CLUSTER)
                r->need_refresh = 2;
}

void sk_redis_map_follow(sk_redis_t *r, uint64_t gen)
{
        if (r->url.kind != SK_REDIS_CLUSTER || gen == r->follow_gen)
                return;
        r->follow_gen = gen;
        r->need_refresh = 2;    /* kept if no node answers: retried as after an error */
        sk__map_refresh(r, 1);
}

sk_err_t sk_redis_map_refresh(sk_redis_t *r)
{
        if (r->url.kind != SK_REDIS_CLUSTER)
                return SK_OK;
        r->need_refresh = 2;
        sk__map_refresh(r, 1);
        return r->need_refresh == 0 ? SK_OK : SK_EAGAIN;
}
