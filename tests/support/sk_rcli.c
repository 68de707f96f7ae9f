/* sk_rcli.c: sk-rcli, a tiny redis-cli for the shell tests that works for every topology
 * of SECKILL_REDIS_URL (one server, Sentinel, Cluster; DESIGN.md 4b: "no redis-cli call
 * in a test may assume one server"). Commands go through sk_redis, so a keyed command
 * is routed to the master of its slot (MOVED/ASK followed) and a Sentinel master is
 * resolved first.
 *
 *   sk-rcli CMD [ARG...]               one command; the reply as redis-cli prints it when
 *                                      stdout is not a terminal (strings/status raw,
 *                                      integers as digits, nil as an empty line, arrays
 *                                      one element per line); an error reply is printed
 *                                      and exits 1
 *   sk-rcli --scan [--pattern GLOB]    every key matching GLOB on every master, one a line
 *   sk-rcli --script NAME NKEYS KEY... ARG...
 *                                      one of the sale's scripts (deduct, rollback, claim,
 *                                      release, take, settle, home: lua/NAME.lua as the
 *                                      binaries embed it) by EVALSHA, loaded first when
 *                                      missing; the reply printed as above. The fault
 *                                      cases send a delayed copy of a purchase's script
 *                                      with it (DESIGN.md 4 "Give-up fence")
 *
 * SECKILL_REDIS_URL (default redis://127.0.0.1:6379/0). Exit 0, 1 (error reply or Redis
 * unreachable), 2 (usage or a malformed URL). Test tool: not installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/conf.h"
#include "sk/redis.h"
#include "sk/scripts.h"

/* lua/NAME.lua -> its index in the sale's table of scripts (sk/scripts.h). */
static const char *const script_names[SK_SCRIPT__N] = {
        [SK_SCRIPT_DEDUCT] = "deduct", [SK_SCRIPT_ROLLBACK] = "rollback",
        [SK_SCRIPT_CLAIM] = "claim", [SK_SCRIPT_RELEASE] = "release",
        [SK_SCRIPT_TAKE] = "take", [SK_SCRIPT_SETTLE] = "settle", [SK_SCRIPT_HOME] = "home",
};

static void print_reply(const redisReply *r)
{
        switch (r->type) {
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
        case REDIS_REPLY_ERROR:
                fwrite(r->str, 1, r->len, stdout);
                putchar('\n');
                break;
        case REDIS_REPLY_INTEGER:
                printf("%lld\n", (long long)r->integer);
                break;
        case REDIS_REPLY_ARRAY:
                for (size_t i = 0; i < r->elements; i++)
                        print_reply(r->element[i]);
                break;
        default: /* nil */
                putchar('\n');
        }
}

static int print_key(const char *key, size_t keylen, void *arg)
{
        (void)arg;
        fwrite(key, 1, keylen, stdout);
        putchar('\n');
        return 0;
}

/* --script NAME NKEYS KEY... ARG...: @returns the exit status (0, 1 error reply, 2 usage). */
static int run_script(sk_redis_t *r, int argc, char **argv)
{
        char errstr[512] = "", *end = NULL;
        redisReply *reply = NULL;
        long nkeys;
        int s;

        for (s = 0; s < SK_SCRIPT__N; s++)
                if (argc >= 1 && strcmp(argv[0], script_names[s]) == 0)
                        break;
        if (s == SK_SCRIPT__N || argc < 2) {
                fprintf(stderr, "sk-rcli: --script NAME NKEYS KEY... ARG... (NAME: deduct, "
                        "rollback, claim, release, take, settle, home)\n");
                return 2;
        }
        nkeys = strtol(argv[1], &end, 10);
        if (!end || *end || nkeys < 0 || nkeys > argc - 2) {
                fprintf(stderr, "sk-rcli: --script: NKEYS '%s' out of range\n", argv[1]);
                return 2;
        }
        if (sk_script_eval(r, (sk_script_t)s, (int)nkeys, (const char **)argv + 2,
                           argc - 2 - (int)nkeys, (const char **)argv + 2 + nkeys, &reply,
                           errstr, sizeof(errstr)) != SK_OK) {
                puts(strncmp(errstr, "redis: ", 7) == 0 ? errstr + 7 : errstr);
                return 1;
        }
        print_reply(reply);
        freeReplyObject(reply);
        return 0;
}

int main(int argc, char **argv)
{
        const char *u = getenv("SECKILL_REDIS_URL");
        char errstr[512] = "";
        sk_redis_url_t url;
        redisReply *reply = NULL;
        sk_redis_t *r;
        sk_err_t err;
        int rc = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: sk-rcli CMD [ARG...] | sk-rcli --scan [--pattern GLOB] | "
                        "sk-rcli --script NAME NKEYS KEY... ARG...\n");
                return 2;
        }
        if (!u || !*u)
                u = "redis://127.0.0.1:6379/0";
        if (sk_redis_url_parse(u, &url, errstr, sizeof(errstr)) != 0) {
                fprintf(stderr, "sk-rcli: SECKILL_REDIS_URL: %s\n", errstr);
                return 2;
        }
        if (!(r = sk_redis_connect(&url, 5000, errstr, sizeof(errstr)))) {
                fprintf(stderr, "sk-rcli: %s\n", errstr);
                return 1;
        }
        if (strcmp(argv[1], "--scan") == 0) {
                const char *match = argc >= 4 && strcmp(argv[2], "--pattern") == 0 ? argv[3] : "*";
                if (sk_redis_scan(r, match, 1000, print_key, NULL, errstr, sizeof(errstr)) != SK_OK) {
                        fprintf(stderr, "sk-rcli: scan: %s\n", errstr);
                        rc = 1;
                }
        } else if (strcmp(argv[1], "--script") == 0) {
                rc = run_script(r, argc - 2, argv + 2);
        } else if ((err = sk_redis_cmd(r, &reply, argc - 1, (const char **)argv + 1, NULL,
                                       errstr, sizeof(errstr))) == SK_OK) {
                print_reply(reply);
                freeReplyObject(reply);
        } else {
                /* An error reply comes as "redis: TEXT": print TEXT as redis-cli does. */
                puts(strncmp(errstr, "redis: ", 7) == 0 ? errstr + 7 : errstr);
                rc = 1;
        }
        fflush(stdout);
        sk_redis_close(r);
        return rc;
}
