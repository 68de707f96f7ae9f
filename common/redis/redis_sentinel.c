/* redis_sentinel.c: master discovery through Redis Sentinel (DESIGN.md 4b, the Redis
 * "Sentinel clients" guidelines): ask the listed Sentinels in turn, each with a short
 * timeout, SENTINEL get-master-addr-by-name MASTER; the first that answers with an
 * address wins and moves to the front of the list for next time (the guidelines' step
 * 1); the caller connects and accepts the server only if ROLE says master, and
 * resolves again on every reconnect and after READONLY. Sentinels are asked without
 * AUTH (the URL's credentials are the data nodes'). Not thread-safe (one handle). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "redis_int.h"

#define SENTINEL_TIMEOUT_MS 300 /* per Sentinel: connect and the one command */

int sk__role_is_master(redisContext *ctx)
{
        redisReply *reply = redisCommand(ctx, "ROLE");
        int ret;

        if (!reply)
                return -1;
        ret = reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
              reply->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(reply->element[0]->str, "master") == 0;
        freeReplyObject(reply);
        return ret;
}

/* One Sentinel: SK_OK with the address, or SK_EAGAIN. */
static sk_err_t ask_one(const sk_redis_t *r, const sk_redis_seed_t *s, char *host,
                        size_t host_size, int *port, char *errstr, size_t errstr_size)
{
        int ms = r->timeout_ms < SENTINEL_TIMEOUT_MS ? r->timeout_ms : SENTINEL_TIMEOUT_MS;
        struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
        redisContext *ctx = redisConnectWithTimeout(s->host, s->port, tv);
        redisReply *reply;
        sk_err_t err = SK_EAGAIN;

        if (!ctx || ctx->err) {
                sk_seterr(errstr, errstr_size, "sentinel %s:%d: %s", s->host, s->port,
                          ctx ? ctx->errstr : "out of memory");
                goto out;
        }
        (void)redisSetTimeout(ctx, tv);
        reply = redisCommand(ctx, "SENTINEL get-master-addr-by-name %s", r->url.master);
        if (!reply) {
                sk_seterr(errstr, errstr_size, "sentinel %s:%d: %s", s->host, s->port,
                          ctx->errstr);
                goto out;
        }
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
            reply->element[0]->type == REDIS_REPLY_STRING &&
            reply->element[1]->type == REDIS_REPLY_STRING &&
            reply->element[0]->len < host_size &&
            sk_parse_int(reply->element[1]->str, 1, 65535, port) == 0) {
                memcpy(host, reply->element[0]->str, reply->element[0]->len + 1);
                err = SK_OK;
        } else {
                sk_seterr(errstr, errstr_size, "sentinel %s:%d does not know master '%s'%s%.*s",
                          s->host, s->port, r->url.master,
                          reply->type == REDIS_REPLY_ERROR ? ": " : "",
                          reply->type == REDIS_REPLY_ERROR ? (int)reply->len : 0,
                          reply->type == REDIS_REPLY_ERROR ? reply->str : "");
        }
        freeReplyObject(reply);
out:
        if (ctx)
                redisFree(ctx);
        return err;
}

sk_err_t sk__sentinel_resolve(sk_redis_t *r, char *host, size_t host_size, int *port,
                              char *errstr, size_t errstr_size)
{
        char last[256] = "";

        for (int i = 0; i < r->url.nseeds; i++) {
                if (ask_one(r, &r->url.seeds[i], host, host_size, port, last,
                            sizeof(last)) == SK_OK) {
                        if (i > 0) {    /* the answering Sentinel goes first next time */
                                sk_redis_seed_t s = r->url.seeds[i];
                                memmove(&r->url.seeds[1], &r->url.seeds[0],
                                        sizeof(s) * (size_t)i);
                                r->url.seeds[0] = s;
                        }
                        return SK_OK;
                }
        }
        sk_seterr(errstr, errstr_size, "no Sentinel of %d gave the address of master '%s' "
                  "(last: %s)", r->url.nseeds, r->url.master, last);
        return SK_EAGAIN;
}
