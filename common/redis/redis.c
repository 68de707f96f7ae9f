/* redis.c: the public commands of sk/redis.h on the three topologies of DESIGN.md 4b,
 * with the error classes of DESIGN.md 8 and EVALSHA of the scripts it is given
 * (DESIGN.md 4).
 *
 * Error classes, decided once so every caller maps them the same way:
 *   - an error reply whose first word is BUSY, LOADING, READONLY, OOM, MASTERDOWN,
 *     NOREPLICAS, TRYAGAIN or CLUSTERDOWN: the command did not run -> SK_EAGAIN;
 *   - any other error reply -> SK_EREDIS (for EVALSHA, "ERR SKARG ..." -> SK_EINVAL);
 *   - hiredis I/O error, EOF, timeout or protocol error after the command was handed to
 *     hiredis: the outcome is unknown -> SK_EUNKNOWN; that connection is dropped and the
 *     next command reconnects first (nothing was sent yet at that point, so a failed
 *     reconnect is SK_EAGAIN: the command did not run).
 * Routing (which node, redirects) is redis_route.c; one connection is redis_node.c.
 * It retries nothing a caller could see twice: only NOSCRIPT (SCRIPT LOAD, then one
 * retry) and the Cluster redirects, which mean the command did not run. Whether an
 * unknown outcome may be repeated is the caller's decision (DESIGN.md 8).
 * Not thread-safe: one sk_redis_t per thread (hiredis contexts are not thread-safe). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"
#include "sk/num.h"

sk_redis_t *sk_redis_connect(const sk_redis_url_t *url, int timeout_ms,
                             char *errstr, size_t errstr_size)
{
        sk_redis_t *r;

        if (!url || !url->host[0] || url->port <= 0 || timeout_ms <= 0) {
                sk_seterr(errstr, errstr_size, "redis connect: invalid url or timeout");
                return NULL;
        }
        if (!(r = calloc(1, sizeof(*r)))) {
                sk_seterr(errstr, errstr_size, "redis connect: out of memory");
                return NULL;
        }
        r->url = *url;
        if (r->url.nseeds < 1) {        /* a URL filled by hand: its host is the seed */
                r->url.nseeds = 1;
                memcpy(r->url.seeds[0].host, r->url.host, sizeof(r->url.host));
                r->url.seeds[0].port = r->url.port;
        }
        r->timeout_ms = timeout_ms;
        r->last_node = -1;
        for (int s = 0; s < SK_CLUSTER_SLOTS; s++)
                r->slots[s] = -1;
        if (sk_redis_reconnect(r, errstr, errstr_size) != SK_OK) {
                sk_redis_close(r);
                return NULL;
        }
        return r;
}

sk_err_t sk_redis_reconnect(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        for (int i = 0; i < r->nnodes; i++)
                sk__node_drop(r, i);
        if (r->url.kind != SK_REDIS_CLUSTER) {
                if (r->nnodes == 0) {
                        r->nnodes = 1;
                        memcpy(r->nodes[0].host, r->url.host, sizeof(r->url.host));
                        r->nodes[0].port = r->url.port;
                        r->nodes[0].is_master = 1;
                }
                return sk__node_open(r, 0, errstr, errstr_size) == SK_OK ? SK_OK : SK_EAGAIN;
        }
        r->lasterr[0] = '\0';
        sk__map_refresh(r, 1);
        if (sk__node_for_slot(r, -1) < 0) {
                sk_seterr(errstr, errstr_size, "redis cluster: no node of %d seeds answered "
                          "CLUSTER SLOTS (%s)", r->url.nseeds, r->lasterr);
                return SK_EAGAIN;
        }
        return SK_OK;
}

int64_t sk_redis_time_ms(const redisReply *rep)
{
        long s, us;

        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
            rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_STRING ||
            sk_parse_long(rep->element[0]->str, 0, 1000000000000L, &s) != 0 ||
            sk_parse_long(rep->element[1]->str, 0, 999999, &us) != 0)
                return -1;
        return (int64_t)s * 1000 + us / 1000;
}

sk_redis_kind_t sk_redis_kind(const sk_redis_t *r)
{
        return r->url.kind;
}

redisContext *sk_redis_ctx_key(sk_redis_t *r, const char *key)
{
        int n;

        sk__map_refresh(r, 0);
        n = sk__node_for_slot(r, sk_key_slot(key, strlen(key)));
        if (n < 0 || sk__node_ensure(r, n, NULL, 0) != SK_OK)
                return NULL;
        return r->nodes[n].ctx;
}

/* Classify a raw reply of node @p node: SK_OK with *out, or the error class. */
static sk_err_t classify(sk_redis_t *r, int node, redisReply *raw, redisReply **out,
                         char *errstr, size_t errstr_size)
{
        if (raw->type != REDIS_REPLY_ERROR) {
                *out = raw;
                return SK_OK;
        }
        if (r->url.kind == SK_REDIS_SENTINEL && sk_redis_reply_is(raw, "READONLY"))
                sk__node_drop(r, node); /* a demoted master: resolve again next time */
        return sk__error_reply(raw, errstr, errstr_size);
}

sk_err_t sk_redis_cmd(sk_redis_t *r, redisReply **reply, int argc, const char **argv,
                      const size_t *argvlen, char *errstr, size_t errstr_size)
{
        redisReply *raw = NULL;
        sk_err_t err;
        int slot, node = 0;

        *reply = NULL;
        if (argc < 1) {
                sk_seterr(errstr, errstr_size, "redis: empty command");
                return SK_EINVAL;
        }
        slot = sk__cmd_slot(argc, argv, argvlen);
        if (slot == -3 && r->url.kind == SK_REDIS_CLUSTER) {
                sk_seterr(errstr, errstr_size, "redis cluster: %s walks the keyspace of one "
                          "node; use sk_redis_scan", argv[0]);
                return SK_EINVAL;
        }
        if ((err = sk__route_cmd(r, slot < -2 ? -1 : slot, argc, argv, argvlen, &raw, &node,
                                 errstr, errstr_size)) != SK_OK)
                return err;
        return classify(r, node, raw, reply, errstr, errstr_size);
}

/* Split a RESP multi-bulk request (hiredis formatting) into argv pointing into @p buf.
 * @returns argc, or -1. */
static int resp_split(const char *buf, size_t len, const char ***argv, size_t **argvlen)
{
        const char *p = buf, *e = buf + len;
        char *end;
        long n = strtol(p + 1, &end, 10);

        if (len < 4 || *p != '*' || n < 1 || n > 1000000)
                return -1;
        *argv = malloc(sizeof(**argv) * (size_t)n);
        *argvlen = malloc(sizeof(**argvlen) * (size_t)n);
        if (!*argv || !*argvlen)
                goto bad;
        p = end + 2;
        for (long i = 0; i < n; i++) {
                long l;
                if (p >= e || *p != '$')
                        goto bad;
                l = strtol(p + 1, &end, 10);
                if (l < 0 || end + 2 + l + 2 > e)
                        goto bad;
                (*argv)[i] = end + 2;
                (*argvlen)[i] = (size_t)l;
                p = end + 2 + l + 2;
        }
        return (int)n;
bad:
        free(*argv);
        free(*argvlen);
        *argv = NULL;
        *argvlen = NULL;
        return -1;
}

sk_err_t sk_redis_vcmdf(sk_redis_t *r, redisReply **reply, char *errstr, size_t errstr_size,
                        const char *fmt, va_list ap)
{
        const char **argv = NULL;
        size_t *argvlen = NULL;
        char *buf = NULL;
        sk_err_t err;
        int len, argc;

        *reply = NULL;
        len = redisvFormatCommand(&buf, fmt, ap);
        if (len < 0 || (argc = resp_split(buf, (size_t)len, &argv, &argvlen)) < 0) {
                if (buf)
                        redisFreeCommand(buf);
                sk_seterr(errstr, errstr_size, "redis: cannot format command \"%s\"", fmt);
                return len == -1 ? SK_ENOMEM : SK_EINVAL;
        }
        err = sk_redis_cmd(r, reply, argc, argv, argvlen, errstr, errstr_size);
        free(argv);
        free(argvlen);
        redisFreeCommand(buf);
        return err;
}

sk_err_t sk_redis_cmdf(sk_redis_t *r, redisReply **reply, char *errstr, size_t errstr_size,
                       const char *fmt, ...)
{
        sk_err_t err;
        va_list ap;

        va_start(ap, fmt);
        err = sk_redis_vcmdf(r, reply, errstr, errstr_size, fmt, ap);
        va_end(ap);
        return err;
}

/* Node index of master number @p i, or -1. */
static int master_node(sk_redis_t *r, int i)
{
        int m[SK_RNODES_MAX], nm = sk__masters(r, m);

        return i >= 0 && i < nm ? m[i] : -1;
}

int sk_redis_master_count(sk_redis_t *r)
{
        int m[SK_RNODES_MAX];

        return sk__masters(r, m);
}

sk_err_t sk_redis_master_addr(sk_redis_t *r, int i, char *addr, size_t addr_size)
{
        int n = master_node(r, i);

        sk__node_addr(r, n, addr, addr_size);
        return n < 0 ? SK_EINVAL : SK_OK;
}

sk_err_t sk_redis_cmd_master(sk_redis_t *r, int i, redisReply **reply, int argc,
                             const char **argv, const size_t *argvlen,
                             char *errstr, size_t errstr_size)
{
        redisReply *raw = NULL;
        sk_err_t err;
        int n = master_node(r, i);

        *reply = NULL;
        if (n < 0) {
                sk_seterr(errstr, errstr_size, "redis: no master #%d", i);
                return SK_EAGAIN;
        }
        if ((err = sk__node_cmd(r, n, argc, argv, argvlen, &raw, errstr, errstr_size)) != SK_OK)
                return err;
        return classify(r, n, raw, reply, errstr, errstr_size);
}

sk_err_t sk_redis_scan(sk_redis_t *r, const char *match, int count,
                       int (*fn)(const char *key, size_t keylen, void *arg), void *arg,
                       char *errstr, size_t errstr_size)
{
        int nm = sk_redis_master_count(r);
        char cnt[16];

        snprintf(cnt, sizeof(cnt), "%d", count > 0 ? count : 1000);
        for (int m = 0; m < nm; m++) {
                char cursor[32] = "0";
                do {
                        const char *argv[6] = { "SCAN", cursor, "MATCH", match, "COUNT", cnt };
                        redisReply *rep = NULL, *keys;
                        sk_err_t err = sk_redis_cmd_master(r, m, &rep, 6, argv, NULL, errstr,
                                                           errstr_size);
                        if (err != SK_OK)
                                return err;
                        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
                            rep->element[0]->type != REDIS_REPLY_STRING ||
                            rep->element[0]->len >= sizeof(cursor) ||
                            rep->element[1]->type != REDIS_REPLY_ARRAY) {
                                freeReplyObject(rep);
                                sk_seterr(errstr, errstr_size, "SCAN: unexpected reply");
                                return SK_EREDIS;
                        }
                        memcpy(cursor, rep->element[0]->str, rep->element[0]->len + 1);
                        keys = rep->element[1];
                        for (size_t k = 0; k < keys->elements; k++)
                                if (keys->element[k]->type == REDIS_REPLY_STRING &&
                                    fn(keys->element[k]->str, keys->element[k]->len, arg)) {
                                        freeReplyObject(rep);
                                        return SK_OK;
                                }
                        freeReplyObject(rep);
                } while (strcmp(cursor, "0") != 0);
        }
        return SK_OK;
}

void sk_redis_close(sk_redis_t *r)
{
        if (!r)
                return;
        for (int i = 0; i < r->nnodes; i++)
                sk__node_drop(r, i);
        memset(r->url.password, 0, sizeof(r->url.password));
        free(r);
}
