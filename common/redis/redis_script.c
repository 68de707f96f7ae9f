/* redis_script.c: the Lua scripts the caller gives (sk_redis_script_t: a name and a
 * source; which scripts exist is the caller's) on every master (DESIGN.md 4: SCRIPT LOAD
 * on every master, EVALSHA, NOSCRIPT -> load on that node and retry once), the
 * process-wide cache of their SHAs, and whether every master has them and runs with
 * noeviction (/readyz, DESIGN.md 4, 4b).
 * The SHA is not computed here (hashing is not our product's business): it is the one
 * SCRIPT LOAD returned. The cache lives in each script's object: written under a mutex
 * and published with a release store; readers use an acquire load. A SHA, once set,
 * never changes (same source, same SHA), so returned pointers stay valid.
 * Not thread-safe: one sk_redis_t per thread (the SHA caches are thread-safe). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"

#define SCRIPTS_MAX 64          /* sk_redis_scripts_loaded: one SCRIPT EXISTS per master */

static pthread_mutex_t sha_lock = PTHREAD_MUTEX_INITIALIZER;

const char *sk_redis_script_sha(const sk_redis_script_t *s)
{
        if (!s || !atomic_load_explicit(&s->sha_set, memory_order_acquire))
                return NULL;
        return s->sha;
}

/* Record the SHA SCRIPT LOAD returned (@p len 40); the first writer wins. */
static void set_sha(sk_redis_script_t *s, const char *sha, size_t len)
{
        if (len != 40)
                return;
        pthread_mutex_lock(&sha_lock);
        if (!atomic_load_explicit(&s->sha_set, memory_order_relaxed)) {
                /* Lowercase, as SCRIPT LOAD answers; written once. */
                for (size_t i = 0; i < 40; i++) {
                        char c = sha[i];
                        s->sha[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
                }
                s->sha[40] = '\0';
                atomic_store_explicit(&s->sha_set, 1, memory_order_release);
        }
        pthread_mutex_unlock(&sha_lock);
}

/* SCRIPT LOAD @p s on node @p n and cache the SHA the server returned. */
static sk_err_t load_on(sk_redis_t *r, int n, sk_redis_script_t *s, char *errstr,
                        size_t errstr_size)
{
        const char *argv[3] = { "SCRIPT", "LOAD", NULL };
        size_t argvlen[3] = { 6, 4, 0 };
        redisReply *reply = NULL;
        sk_err_t err;

        if (!s->body) {
                sk_seterr(errstr, errstr_size, "script %s is not in this build",
                          s->name ? s->name : "?");
                return SK_EINVAL;
        }
        argv[2] = s->body;
        argvlen[2] = strlen(s->body);
        if ((err = sk__node_cmd(r, n, 3, argv, argvlen, &reply, errstr, errstr_size)) != SK_OK)
                return err;
        if (reply->type == REDIS_REPLY_ERROR)
                return sk__error_reply(reply, errstr, errstr_size);
        if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
                sk_seterr(errstr, errstr_size, "SCRIPT LOAD %s: unexpected reply type %d",
                          s->name, reply->type);
                freeReplyObject(reply);
                return SK_EREDIS;
        }
        set_sha(s, reply->str, reply->len);
        freeReplyObject(reply);
        return SK_OK;
}

/* Load the @p n scripts of @p list on every master. */
static sk_err_t load_everywhere(sk_redis_t *r, sk_redis_script_t *list, size_t n, char *errstr,
                                size_t errstr_size)
{
        int m[SK_RNODES_MAX], nm = sk__masters(r, m);

        if (nm == 0) {
                sk_seterr(errstr, errstr_size, "redis cluster: no master known");
                return SK_EAGAIN;
        }
        for (int i = 0; i < nm; i++)
                for (size_t k = 0; k < n; k++) {
                        sk_err_t err = load_on(r, m[i], &list[k], errstr, errstr_size);
                        if (err != SK_OK)
                                return err;
                }
        return SK_OK;
}

sk_err_t sk_redis_load_scripts(sk_redis_t *r, sk_redis_script_t *list, size_t n,
                               char *errstr, size_t errstr_size)
{
        return load_everywhere(r, list, n, errstr, errstr_size);
}

/* EVALSHA's argv into @p argv/@p argvlen (room for 3 + nkeys + nargs). @returns argc. */
static int evalsha_argv(const char *sha, char *nkeys_buf, size_t nkeys_size, int nkeys,
                        const char **keys, int nargs, const char **args,
                        const char **argv, size_t *argvlen)
{
        int argc = 0;

        snprintf(nkeys_buf, nkeys_size, "%d", nkeys);
        argv[argc] = "EVALSHA"; argvlen[argc++] = 7;
        argv[argc] = sha; argvlen[argc++] = 40;
        argv[argc] = nkeys_buf; argvlen[argc++] = strlen(nkeys_buf);
        for (int i = 0; i < nkeys; i++) {
                argv[argc] = keys[i]; argvlen[argc++] = strlen(keys[i]);
        }
        for (int i = 0; i < nargs; i++) {
                argv[argc] = args[i]; argvlen[argc++] = strlen(args[i]);
        }
        return argc;
}

/* Error reply of a script: "ERR SKARG" -> SK_EINVAL, else the usual classes. */
static sk_err_t script_error(sk_redis_t *r, int node, redisReply *rep, char *errstr,
                             size_t errstr_size)
{
        if (rep->len >= 10 && memcmp(rep->str, "ERR SKARG ", 10) == 0) {
                sk_seterr(errstr, errstr_size, "%.*s", (int)rep->len, rep->str);
                freeReplyObject(rep);
                return SK_EINVAL;
        }
        if (r->url.kind == SK_REDIS_SENTINEL && sk_redis_reply_is(rep, "READONLY"))
                sk__node_drop(r, node);
        return sk__error_reply(rep, errstr, errstr_size);
}

sk_err_t sk_redis_evalsha(sk_redis_t *r, sk_redis_script_t *s, int nkeys, const char **keys,
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
        int argc, slot, node = 0;

        *reply = NULL;
        if (!s || nkeys < 0 || nargs < 0 ||
            nkeys > 100000 || nargs > 100000) {
                sk_seterr(errstr, errstr_size, "evalsha: bad script or argument count");
                return SK_EINVAL;
        }
        if (3 + nkeys + nargs > STACK_ARGV) {
                /* Large calls (a script over a whole batch of ids) use the heap. */
                argv = malloc(sizeof(*argv) * (size_t)(3 + nkeys + nargs));
                argvlen = malloc(sizeof(*argvlen) * (size_t)(3 + nkeys + nargs));
                if (!argv || !argvlen) {
                        sk_seterr(errstr, errstr_size, "evalsha: out of memory");
                        err = SK_ENOMEM;
                        goto done;
                }
        }
        if (!(sha = sk_redis_script_sha(s))) {
                /* First use in this process: SCRIPT LOAD (every master) gives the SHA. */
                if ((err = load_everywhere(r, s, 1, errstr, errstr_size)) != SK_OK) {
                        err = err == SK_EUNKNOWN ? SK_EAGAIN : err; /* script not run */
                        goto done;
                }
                sha = sk_redis_script_sha(s);
        }
        argc = evalsha_argv(sha, nkeys_buf, sizeof(nkeys_buf), nkeys, keys, nargs, args,
                            argv, argvlen);
        /* Every key of a script shares one hash tag: KEYS[1] routes it (DESIGN.md 4b). */
        slot = nkeys > 0 ? sk_key_slot(keys[0], strlen(keys[0])) : -1;
        for (int attempt = 0; attempt < 2; attempt++) {
                if ((err = sk__route_cmd(r, slot, argc, argv, argvlen, &rep, &node, errstr,
                                         errstr_size)) != SK_OK)
                        goto done;
                if (rep->type != REDIS_REPLY_ERROR) {
                        *reply = rep;
                        goto done;
                }
                if (!sk_redis_reply_is(rep, "NOSCRIPT"))
                        break;
                /* That node lost its script cache (restart, SCRIPT FLUSH, failover, a
                 * new master): the script did not run. Load it there, retry once. */
                freeReplyObject(rep);
                rep = NULL;
                if (attempt == 0 && (err = load_on(r, node, s, errstr, errstr_size)) != SK_OK) {
                        err = err == SK_EUNKNOWN ? SK_EAGAIN : err;
                        goto done;
                }
        }
        if (!rep) {
                sk_seterr(errstr, errstr_size, "evalsha %s: NOSCRIPT twice",
                          s->name ? s->name : "?");
                err = SK_EAGAIN;
                goto done;
        }
        err = script_error(r, node, rep, errstr, errstr_size);
done:
        if (argv != argv_stack)
                free((void *)argv);
        if (argvlen != argvlen_stack)
                free(argvlen);
        return err;
}

int sk_redis_scripts_loaded(sk_redis_t *r, const sk_redis_script_t *list, size_t n)
{
        const char *argv[2 + SCRIPTS_MAX];
        size_t argvlen[2 + SCRIPTS_MAX];
        int m[SK_RNODES_MAX], nm, argc = 0, ok = 1;

        if (n == 0)
                return 1;
        if (n > SCRIPTS_MAX)
                return -1;
        argv[argc] = "SCRIPT"; argvlen[argc++] = 6;
        argv[argc] = "EXISTS"; argvlen[argc++] = 6;
        for (size_t s = 0; s < n; s++) {
                const char *sha = sk_redis_script_sha(&list[s]);
                if (!sha)
                        return 0; /* never loaded by this process */
                argv[argc] = sha; argvlen[argc++] = 40;
        }
        if ((nm = sk__masters(r, m)) == 0)
                return -1;
        for (int i = 0; i < nm; i++) {
                redisReply *reply = NULL;
                if (sk__node_cmd(r, m[i], argc, argv, argvlen, &reply, NULL, 0) != SK_OK)
                        return -1;
                if (reply->type != REDIS_REPLY_ARRAY || reply->elements != n) {
                        freeReplyObject(reply);
                        return -1;
                }
                for (size_t k = 0; k < reply->elements; k++)
                        if (reply->element[k]->type != REDIS_REPLY_INTEGER ||
                            reply->element[k]->integer != 1)
                                ok = 0;
                freeReplyObject(reply);
        }
        return ok;
}

int sk__node_noeviction(sk_redis_t *r, int n, char *policy, size_t policy_size)
{
        const char *argv[3] = { "CONFIG", "GET", "maxmemory-policy" };
        redisReply *reply = NULL;
        int ret = -1;

        if (sk__node_cmd(r, n, 3, argv, NULL, &reply, NULL, 0) != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
            reply->element[1]->type == REDIS_REPLY_STRING) {
                ret = strcmp(reply->element[1]->str, "noeviction") == 0;
                snprintf(policy, policy_size, "%s", reply->element[1]->str);
        }
        freeReplyObject(reply);
        return ret;
}

int sk_redis_noeviction(sk_redis_t *r)
{
        int m[SK_RNODES_MAX], nm = sk__masters(r, m), ok = 1;
        char policy[64];

        if (nm == 0)
                return -1;
        for (int i = 0; i < nm; i++) {
                int v = sk__node_noeviction(r, m[i], policy, sizeof(policy));
                if (v < 0)
                        return -1;
                ok &= v;
        }
        return ok;
}
