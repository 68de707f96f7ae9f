/* redis.c: one blocking hiredis connection with connect/command timeouts, the error
 * classes of DESIGN.md 8, and EVALSHA of the embedded scripts (DESIGN.md 4).
 *
 * Error classes, decided here once so every caller maps them the same way:
 *   - an error reply whose first word is BUSY, LOADING, READONLY, OOM, MASTERDOWN,
 *     NOREPLICAS, TRYAGAIN or CLUSTERDOWN: the command did not run -> SK_EAGAIN;
 *   - any other error reply -> SK_EREDIS (for EVALSHA, "ERR SKARG ..." -> SK_EINVAL);
 *   - hiredis I/O error, EOF, timeout or protocol error after the command was handed to
 *     hiredis: the outcome is unknown -> SK_EUNKNOWN; the context is dropped and the next
 *     command on this handle reconnects first (nothing was sent yet at that point, so a
 *     failed reconnect is SK_EAGAIN: the command did not run).
 * It deliberately does not retry anything except NOSCRIPT (SCRIPT LOAD, then one retry):
 * whether a command may be repeated is the caller's decision (an unknown deduct outcome
 * is repeated with the same traceId, DESIGN.md 8).
 * Not thread-safe: one sk_redis_t per thread (hiredis contexts are not thread-safe). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "sk/redis.h"
#include "sk/scripts.h"


struct sk_redis {
        sk_redis_url_t url;     /* copy; holds the password for AUTH on reconnect */
        int timeout_ms;
        redisContext *ctx;      /* NULL after an error that broke it */
};

static struct timeval ms_to_tv(int ms)
{
        struct timeval tv;
        tv.tv_sec = ms / 1000;
        tv.tv_usec = (ms % 1000) * 1000;
        return tv;
}

static void drop_ctx(sk_redis_t *r)
{
        if (r->ctx) {
                redisFree(r->ctx);
                r->ctx = NULL;
        }
}

/* First word of an error reply that means "the server refused before running it". */
static int is_transient_error(const char *s, size_t len)
{
        static const char *const words[] = { "BUSY", "LOADING", "READONLY", "OOM",
                                             "MASTERDOWN", "NOREPLICAS", "TRYAGAIN",
                                             "CLUSTERDOWN", "NOSCRIPT", NULL };
        for (int i = 0; words[i]; i++) {
                size_t n = strlen(words[i]);
                if (len >= n && memcmp(s, words[i], n) == 0 && (len == n || s[n] == ' '))
                        return 1;
        }
        return 0;
}

/* Classify and consume an error reply (freed here). */
static sk_err_t error_reply(redisReply *reply, char *errstr, size_t errstr_size)
{
        sk_err_t err = is_transient_error(reply->str, reply->len) ? SK_EAGAIN : SK_EREDIS;
        sk_seterr(errstr, errstr_size, "redis: %.*s", (int)reply->len, reply->str);
        freeReplyObject(reply);
        return err;
}

/* Send a command over a fresh context; AUTH and SELECT on it. */
static sk_err_t open_ctx(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        redisContext *ctx;
        redisReply *reply;

        drop_ctx(r);
        ctx = redisConnectWithTimeout(r->url.host, r->url.port, ms_to_tv(r->timeout_ms));
        if (!ctx) {
                sk_seterr(errstr, errstr_size, "redis connect %s:%d: out of memory",
                          r->url.host, r->url.port);
                return SK_ENOMEM;
        }
        if (ctx->err) {
                sk_seterr(errstr, errstr_size, "redis connect %s:%d: %s", r->url.host,
                          r->url.port, ctx->errstr);
                redisFree(ctx);
                return SK_EAGAIN;
        }
        if (redisSetTimeout(ctx, ms_to_tv(r->timeout_ms)) != REDIS_OK) {
                sk_seterr(errstr, errstr_size, "redis set timeout: %s", ctx->errstr);
                redisFree(ctx);
                return SK_EAGAIN;
        }
        (void)redisEnableKeepAlive(ctx);
        if (r->url.password[0]) {
                /* The password never goes into errstr. */
                reply = redisCommand(ctx, "AUTH %s", r->url.password);
                if (!reply || reply->type == REDIS_REPLY_ERROR) {
                        sk_seterr(errstr, errstr_size, "redis AUTH failed%s%.*s",
                                  reply ? ": " : "", reply ? (int)reply->len : 0,
                                  reply ? reply->str : "");
                        if (reply)
                                freeReplyObject(reply);
                        redisFree(ctx);
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
                        redisFree(ctx);
                        return reply ? SK_EREDIS : SK_EAGAIN;
                }
                freeReplyObject(reply);
        }
        r->ctx = ctx;
        return SK_OK;
}

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
        r->timeout_ms = timeout_ms;
        if (open_ctx(r, errstr, errstr_size) != SK_OK) {
                free(r);
                return NULL;
        }
        return r;
}

sk_err_t sk_redis_reconnect(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        sk_err_t err = open_ctx(r, errstr, errstr_size);
        return err == SK_OK ? SK_OK : SK_EAGAIN;
}

redisContext *sk_redis_ctx(sk_redis_t *r)
{
        if (!r->ctx)
                (void)open_ctx(r, NULL, 0);
        return r->ctx;
}

/* Reply (or its absence) after hiredis had the command: classify. */
static sk_err_t finish(sk_redis_t *r, redisReply *reply, redisReply **out,
                       char *errstr, size_t errstr_size)
{
        if (!reply) {
                /* I/O error, EOF, timeout or protocol error: the server may or may not
                 * have run the command. The context is unusable now (hiredis). */
                sk_seterr(errstr, errstr_size, "redis %s:%d: %s (outcome unknown)",
                          r->url.host, r->url.port,
                          r->ctx && r->ctx->errstr[0] ? r->ctx->errstr : "no reply");
                drop_ctx(r);
                return SK_EUNKNOWN;
        }
        if (reply->type == REDIS_REPLY_ERROR)
                return error_reply(reply, errstr, errstr_size);
        *out = reply;
        return SK_OK;
}

static sk_err_t ensure_ctx(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        if (r->ctx && !r->ctx->err)
                return SK_OK;
        /* Nothing sent yet: a failed reconnect means the command did not run. */
        return open_ctx(r, errstr, errstr_size) == SK_OK ? SK_OK : SK_EAGAIN;
}

sk_err_t sk_redis_cmd(sk_redis_t *r, redisReply **reply, int argc, const char **argv,
                      const size_t *argvlen, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        *reply = NULL;
        if ((err = ensure_ctx(r, errstr, errstr_size)) != SK_OK)
                return err;
        return finish(r, redisCommandArgv(r->ctx, argc, argv, argvlen), reply, errstr,
                      errstr_size);
}

sk_err_t sk_redis_cmdf(sk_redis_t *r, redisReply **reply, char *errstr, size_t errstr_size,
                       const char *fmt, ...)
{
        sk_err_t err;
        va_list ap;
        redisReply *rep;

        *reply = NULL;
        if ((err = ensure_ctx(r, errstr, errstr_size)) != SK_OK)
                return err;
        va_start(ap, fmt);
        rep = redisvCommand(r->ctx, fmt, ap);
        va_end(ap);
        return finish(r, rep, reply, errstr, errstr_size);
}

/* SCRIPT LOAD @p s and cache the SHA the server returned. */
static sk_err_t load_one(sk_redis_t *r, sk_script_t s, char *errstr, size_t errstr_size)
{
        const sk_script_src_t *src = sk_script_get(s);
        const char *argv[3] = { "SCRIPT", "LOAD", NULL };
        size_t argvlen[3] = { 6, 4, 0 };
        redisReply *reply = NULL;
        sk_err_t err;

        if (!src) {
                sk_seterr(errstr, errstr_size, "script %d is not embedded in this build",
                          (int)s);
                return SK_EINVAL;
        }
        argv[2] = src->body;
        argvlen[2] = src->len;
        if ((err = sk_redis_cmd(r, &reply, 3, argv, argvlen, errstr, errstr_size)) != SK_OK)
                return err;
        if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
                sk_seterr(errstr, errstr_size, "SCRIPT LOAD %s: unexpected reply type %d",
                          src->name, reply->type);
                freeReplyObject(reply);
                return SK_EREDIS;
        }
        sk__script_set_sha(s, reply->str, reply->len);
        freeReplyObject(reply);
        return SK_OK;
}

sk_err_t sk_redis_load_scripts(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        for (int s = 0; s < SK_SCRIPT__N; s++) {
                sk_err_t err = load_one(r, (sk_script_t)s, errstr, errstr_size);
                if (err != SK_OK)
                        return err;
        }
        return SK_OK;
}

static int starts_with_word(const redisReply *reply, const char *word)
{
        size_t n = strlen(word);
        return reply->len >= n && memcmp(reply->str, word, n) == 0 &&
               (reply->len == n || reply->str[n] == ' ');
}

sk_err_t sk_redis_evalsha(sk_redis_t *r, sk_script_t s, int nkeys, const char **keys,
                          int nargs, const char **args, redisReply **reply,
                          char *errstr, size_t errstr_size)
{
        enum { STACK_ARGV = 64 };
        const char *argv_stack[STACK_ARGV], **argv = argv_stack;
        size_t argvlen_stack[STACK_ARGV], *argvlen = argvlen_stack;
        char nkeys_buf[16];
        const char *sha;
        redisReply *rep = NULL;
        sk_err_t err;
        int argc = 0, attempt;

        *reply = NULL;
        if ((int)s < 0 || s >= SK_SCRIPT__N || nkeys < 0 || nargs < 0 ||
            nkeys > 100000 || nargs > 100000) {
                sk_seterr(errstr, errstr_size, "evalsha: bad script or argument count");
                return SK_EINVAL;
        }
        if (3 + nkeys + nargs > STACK_ARGV) {
                /* Large calls (claim.lua consume of a whole batch) use the heap. */
                argv = malloc(sizeof(*argv) * (size_t)(3 + nkeys + nargs));
                argvlen = malloc(sizeof(*argvlen) * (size_t)(3 + nkeys + nargs));
                if (!argv || !argvlen) {
                        sk_seterr(errstr, errstr_size, "evalsha: out of memory");
                        err = SK_ENOMEM;
                        goto done;
                }
        }
        if (!(sha = sk_script_sha(s))) {
                /* First use in this process: SCRIPT LOAD gives us the SHA. */
                if ((err = load_one(r, s, errstr, errstr_size)) != SK_OK) {
                        err = err == SK_EUNKNOWN ? SK_EAGAIN : err; /* script not run */
                        goto done;
                }
                sha = sk_script_sha(s);
        }
        snprintf(nkeys_buf, sizeof(nkeys_buf), "%d", nkeys);
        argv[argc] = "EVALSHA"; argvlen[argc++] = 7;
        argv[argc] = sha; argvlen[argc++] = 40;
        argv[argc] = nkeys_buf; argvlen[argc++] = strlen(nkeys_buf);
        for (int i = 0; i < nkeys; i++) {
                argv[argc] = keys[i]; argvlen[argc++] = strlen(keys[i]);
        }
        for (int i = 0; i < nargs; i++) {
                argv[argc] = args[i]; argvlen[argc++] = strlen(args[i]);
        }

        for (attempt = 0; attempt < 2; attempt++) {
                if ((err = ensure_ctx(r, errstr, errstr_size)) != SK_OK)
                        goto done;
                rep = redisCommandArgv(r->ctx, argc, argv, argvlen);
                if (!rep) {
                        err = finish(r, rep, reply, errstr, errstr_size);
                        goto done;
                }
                if (rep->type != REDIS_REPLY_ERROR) {
                        *reply = rep;
                        err = SK_OK;
                        goto done;
                }
                if (!starts_with_word(rep, "NOSCRIPT"))
                        break;
                /* The server lost its script cache (restart, SCRIPT FLUSH, failover):
                 * the script did not run. Load it and retry once. */
                freeReplyObject(rep);
                rep = NULL;
                if (attempt == 0 && (err = load_one(r, s, errstr, errstr_size)) != SK_OK) {
                        err = err == SK_EUNKNOWN ? SK_EAGAIN : err;
                        goto done;
                }
        }
        if (!rep) {
                sk_seterr(errstr, errstr_size, "evalsha %s: NOSCRIPT twice",
                          sk_script_get(s) ? sk_script_get(s)->name : "?");
                err = SK_EAGAIN;
                goto done;
        }
        if (rep->len >= 10 && memcmp(rep->str, "ERR SKARG ", 10) == 0) {
                sk_seterr(errstr, errstr_size, "%.*s", (int)rep->len, rep->str);
                freeReplyObject(rep);
                err = SK_EINVAL;
                goto done;
        }
        err = error_reply(rep, errstr, errstr_size);
done:
        if (argv != argv_stack)
                free((void *)argv);
        if (argvlen != argvlen_stack)
                free(argvlen);
        return err;
}

int sk_redis_scripts_loaded(sk_redis_t *r)
{
        const char *argv[2 + SK_SCRIPT__N];
        size_t argvlen[2 + SK_SCRIPT__N];
        redisReply *reply = NULL;
        int argc = 0, ok = 1;

        argv[argc] = "SCRIPT"; argvlen[argc++] = 6;
        argv[argc] = "EXISTS"; argvlen[argc++] = 6;
        for (int s = 0; s < SK_SCRIPT__N; s++) {
                const char *sha = sk_script_sha((sk_script_t)s);
                if (!sha)
                        return 0; /* never loaded by this process */
                argv[argc] = sha; argvlen[argc++] = 40;
        }
        if (sk_redis_cmd(r, &reply, argc, argv, argvlen, NULL, 0) != SK_OK)
                return -1;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != SK_SCRIPT__N) {
                freeReplyObject(reply);
                return -1;
        }
        for (size_t i = 0; i < reply->elements; i++)
                if (reply->element[i]->type != REDIS_REPLY_INTEGER ||
                    reply->element[i]->integer != 1)
                        ok = 0;
        freeReplyObject(reply);
        return ok;
}

int sk_redis_noeviction(sk_redis_t *r)
{
        redisReply *reply = NULL;
        int ret = -1;

        if (sk_redis_cmdf(r, &reply, NULL, 0, "CONFIG GET maxmemory-policy") != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
            reply->element[1]->type == REDIS_REPLY_STRING)
                ret = strcmp(reply->element[1]->str, "noeviction") == 0;
        freeReplyObject(reply);
        return ret;
}

void sk_redis_close(sk_redis_t *r)
{
        if (!r)
                return;
        drop_ctx(r);
        memset(r->url.password, 0, sizeof(r->url.password));
        free(r);
}
