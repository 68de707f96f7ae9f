/* bench/evalsha_load.c: a closed-loop load of one Redis command line, like
 * `redis-benchmark -c CONNS`, with the placeholders the admission scripts need and
 * redis-benchmark lacks (its __rand_int__ draws every occurrence independently, so a
 * traceId in ARGV and in the give-up fence key name KEYS[5] could never match, and it
 * has no clock placeholder for deduct.lua's `ts`, DESIGN.md 4 "Cost of an admission"):
 *   __id1__ __id2__ __id3__  a fresh random 18-digit canonical id per call (the size
 *                            of a snowflake id until 2031), the same value at every occurrence within one call
 *   __ts__                   this host's clock in ms when the call is sent
 *   build/bench/evalsha_load [-h HOST] [-p PORT] [-c CONNS] [-d SECONDS | -n CALLS] -- ARG...
 * One thread; every round sends one command on each connection, then reads the CONNS
 * replies (CONNS commands in flight, as redis-benchmark -c CONNS -P 1). Prints one line:
 *   calls=N seconds=S rate=R errors=E [first_error="..."]
 * The Redis-side cost is read from INFO commandstats by the caller. Never asserted. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <hiredis/hiredis.h>

#define MAX_ARGS 64
#define MAX_CONNS 1024

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng_next(void)                  /* xorshift64 */
{
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static double mono_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* @p tmpl with every placeholder replaced, into @p out (size @p size). */
static void expand(const char *tmpl, char *out, size_t size, char ids[3][24], const char *ts)
{
        size_t o = 0;

        while (*tmpl && o + 1 < size) {
                const char *v = NULL;
                size_t skip = 0;

                if (!strncmp(tmpl, "__id1__", 7) || !strncmp(tmpl, "__id2__", 7) ||
                    !strncmp(tmpl, "__id3__", 7)) {
                        v = ids[tmpl[4] - '1'];
                        skip = 7;
                } else if (!strncmp(tmpl, "__ts__", 6)) {
                        v = ts;
                        skip = 6;
                }
                if (v) {
                        size_t n = strlen(v);

                        if (o + n >= size)
                                break;
                        memcpy(out + o, v, n);
                        o += n;
                        tmpl += skip;
                } else {
                        out[o++] = *tmpl++;
                }
        }
        out[o] = '\0';
}

int main(int argc, char **argv)
{
        const char *host = "127.0.0.1";
        int port = 6379, conns = 32, opt, nargs, i, c;
        double secs = 0, t0, t1;
        long long calls = 0, max_calls = 0, errors = 0;
        char first_error[256] = "";
        static redisContext *ctx[MAX_CONNS];
        static char buf[MAX_ARGS][512];
        const char *av[MAX_ARGS];
        size_t avlen[MAX_ARGS];

        while ((opt = getopt(argc, argv, "h:p:c:d:n:")) != -1) {
                switch (opt) {
                case 'h': host = optarg; break;
                case 'p': port = atoi(optarg); break;
                case 'c': conns = atoi(optarg); break;
                case 'd': secs = atof(optarg); break;
                case 'n': max_calls = atoll(optarg); break;
                default: goto usage;
                }
        }
        nargs = argc - optind;
        if (nargs < 1 || nargs > MAX_ARGS || conns < 1 || conns > MAX_CONNS ||
            (secs <= 0 && max_calls <= 0))
                goto usage;
        rng_state ^= (uint64_t)wall_ms() * 2654435761ULL ^ (uint64_t)getpid();
        for (c = 0; c < conns; c++) {
                ctx[c] = redisConnect(host, port);
                if (!ctx[c] || ctx[c]->err) {
                        fprintf(stderr, "evalsha_load: connect %s:%d: %s\n", host, port,
                                ctx[c] ? ctx[c]->errstr : "out of memory");
                        return 1;
                }
        }
        t0 = mono_s();
        for (;;) {
                char ts[24];

                if (max_calls > 0 && calls >= max_calls)
                        break;
                if (secs > 0 && mono_s() - t0 >= secs)
                        break;
                snprintf(ts, sizeof(ts), "%" PRId64, wall_ms());
                for (c = 0; c < conns; c++) {
                        char ids[3][24];

                        for (i = 0; i < 3; i++)
                                snprintf(ids[i], sizeof(ids[i]), "%" PRIu64,
                                         (uint64_t)(100000000000000000ULL + rng_next() % 800000000000000000ULL));
                        for (i = 0; i < nargs; i++) {
                                expand(argv[optind + i], buf[i], sizeof(buf[i]), ids, ts);
                                av[i] = buf[i];
                                avlen[i] = strlen(buf[i]);
                        }
                        if (redisAppendCommandArgv(ctx[c], nargs, av, avlen) != REDIS_OK) {
                                fprintf(stderr, "evalsha_load: append: %s\n", ctx[c]->errstr);
                                return 1;
                        }
                }
                for (c = 0; c < conns; c++) {
                        void *rv = NULL;
                        redisReply *reply;

                        if (redisGetReply(ctx[c], &rv) != REDIS_OK || !rv) {
                                fprintf(stderr, "evalsha_load: reply: %s\n", ctx[c]->errstr);
                                return 1;
                        }
                        reply = rv;
                        if (reply->type == REDIS_REPLY_ERROR) {
                                if (!errors++)
                                        snprintf(first_error, sizeof(first_error), "%s", reply->str);
                        }
                        freeReplyObject(reply);
                        calls++;
                }
        }
        t1 = mono_s();
        printf("calls=%lld seconds=%.2f rate=%.0f errors=%lld", calls, t1 - t0,
               (double)calls / (t1 - t0), errors);
        if (errors)
                printf(" first_error=\"%s\"", first_error);
        printf("\n");
        for (c = 0; c < conns; c++)
                redisFree(ctx[c]);
        return 0;
usage:
        fprintf(stderr, "usage: evalsha_load [-h HOST] [-p PORT] [-c CONNS] [-d SECONDS | -n CALLS] "
                "-- ARG... (placeholders __id1__ __id2__ __id3__ __ts__)\n");
        return 2;
}
