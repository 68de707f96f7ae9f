/* redis_node.c: one connection of an sk_redis_t (DESIGN.md 4b, 8): connect with a
 * timeout, command timeout, keepalive, AUTH [user] password, SELECT; for Sentinel the
 * master's address is resolved again on every (re)connect and ROLE must say master.
 * Also the mapping of an error reply every caller shares (DESIGN.md 8): the "did not
 *   run" words of sk/redis_error.h -> SK_EAGAIN; any other error reply -> SK_EREDIS.
 * Not thread-safe (works on one sk_redis_t). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "redis_int.h"

static struct timeval ms_to_tv(int ms)
{
        struct timeval tv;
        tv.tv_sec = ms / 1000;
        tv.tv_usec = (ms % 1000) * 1000;
        return tv;
}

void sk__node_drop(sk_redis_t *r, int n)
{
        if (r->nodes[n].ctx) {
                redisFree(r->nodes[n].ctx);
                r->nodes[n].ctx = NULL;
        }
}

sk_err_t sk__error_reply(redisReply *reply, char *errstr, size_t errstr_size)
{
        sk_err_t err = sk_redis_error_not_run(reply->str, reply->len) ? SK_EAGAIN : SK_EREDIS;
        sk_seterr(errstr, errstr_size, "redis: %.*s", (int)reply->len, reply->str);
        freeReplyObject(reply);
        return err;
}

/* AUTH (password never in errstr) and SELECT on a fresh context. */
static sk_err_t login(sk_redis_t *r, redisContext *ctx, char *errstr, size_t errstr_size)
{
        redisReply *reply = NULL;

        if (r->url.password[0]) {
                if (r->url.user[0])
                        reply = redisCommand(ctx, "AUTH %s %s", r->url.user, r->url.password);
                else
                        reply = redisCommand(ctx, "AUTH %s", r->url.password);
                if (!reply || reply->type == REDIS_REPLY_ERROR) {
                        sk_seterr(errstr, errstr_size, "redis AUTH failed%s%.*s",
                                  reply ? ": " : "", reply ? (int)reply->len : 0,
                                  reply ? reply->str : "");
                        if (reply)
                                freeReplyObject(reply);
                        return reply ? SK_EREDIS : SK_EAGAIN;
                }
                freeReplyObject(reply);
        }
        if (r->url.db != 0) {
                reply = redisCommand(ctx, "SELECT %d", r->url.db);
                if (!reply || reply->type == REDIS_REPLY_ERROR) {
                        sk_seterr(errstr, errstr_size, "redis SELECT %d failed%s%.*s",
                                  r->url.db, reply ? ": " : "",
                                  reply ? (int)reply->len : 0, reply ? reply->str : "");
                        if (reply)
                                freeReplyObject(reply);
                        return reply ? SK_EREDIS : SK_EAGAIN;
                }
                freeReplyObject(reply);
        }
        return SK_OK;
}

sk_err_t sk__node_open(sk_redis_t *r, int n, char *errstr, size_t errstr_size)
{
        sk_rnode_t *node = &r->nodes[n];
        redisContext *ctx;
        sk_err_t err;

        sk__node_drop(r, n);
        if (r->url.kind == SK_REDIS_SENTINEL) {
                /* Every (re)connect asks the Sentinels again (DESIGN.md 4b); the switch
                 * epoch is read first, so a switch during the resolve is seen next time. */
                r->sentinel_epoch = sk__sentinel_epoch(&r->url);
                if ((err = sk__sentinel_resolve(r, node->host, sizeof(node->host), &node->port,
                                                errstr, errstr_size)) != SK_OK)
                        return err;
        }
        ctx = redisConnectWithTimeout(node->host, node->port, ms_to_tv(r->timeout_ms));
        if (!ctx) {
                sk_seterr(errstr, errstr_size, "redis connect %s:%d: out of memory",
                          node->host, node->port);
                return SK_ENOMEM;
        }
        if (ctx->err) {
                sk_seterr(errstr, errstr_size, "redis connect %s:%d: %s", node->host,
                          node->port, ctx->errstr);
                redisFree(ctx);
                return SK_EAGAIN;
        }
        if (redisSetTimeout(ctx, ms_to_tv(r->timeout_ms)) != REDIS_OK) {
                sk_seterr(errstr, errstr_size, "redis set timeout: %s", ctx->errstr);
                redisFree(ctx);
                return SK_EAGAIN;
        }
        (void)redisEnableKeepAlive(ctx);
        if ((err = login(r, ctx, errstr, errstr_size)) != SK_OK) {
                redisFree(ctx);
                return err;
        }
        if (r->url.kind == SK_REDIS_SENTINEL && sk__role_is_master(ctx) != 1) {
                /* A Sentinel may answer with a demoted master for a moment. */
                sk_seterr(errstr, errstr_size, "redis %s:%d: ROLE is not master (Sentinel "
                          "master '%s' is failing over)", node->host, node->port, r->url.master);
                redisFree(ctx);
                return SK_EAGAIN;
        }
        node->ctx = ctx;
        return SK_OK;
}

sk_err_t sk__node_ensure(sk_redis_t *r, int n, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        /* Sentinel: the master switched since node 0 was resolved (the watcher's
         * +switch-master): leave the old master now, before it is demoted. */
        if (r->url.kind == SK_REDIS_SENTINEL && r->nodes[n].ctx &&
            r->sentinel_epoch != sk__sentinel_epoch(&r->url))
                sk__node_drop(r, n);
        if (r->nodes[n].ctx && !r->nodes[n].ctx->err)
                return SK_OK;
        /* Nothing sent yet: a failed connect means the command did not run. */
        err = sk__node_open(r, n, errstr, errstr_size);
        if (err != SK_OK) {
                r->need_refresh = 2;    /* a connection error: refresh the map soon */
                return err == SK_ENOMEM ? err : SK_EAGAIN;
        }
        return SK_OK;
}
