/* bench/evalsha_load.c: a load of one Redis command line that saturates Redis, with the
 * placeholders the admission scripts need and redis-benchmark lacks (its __rand_int__
 * draws every occurrence independently, so a traceId in ARGV and in the give-up fence
 * key name KEYS[5] could never match, and it has no clock placeholder for deduct.lua's
 * `ts`, DESIGN.md 4 "Cost of an admission"):
 *   __id1__ __id2__ __id3__  a fresh random 18-digit canonical id per call (the size
 *                            of a snowflake id until 2031), the same value at every occurrence within one call
 *   __ts__                   this host's clock in ms when the round is sent
 *   build/bench/evalsha_load [-h HOST] [-p PORT] [-c CONNS] [-t THREADS] [-P PIPELINE]
 *                            [-d SECONDS | -n CALLS] -- ARG...
 * THREADS threads (default 1) share the CONNS connections (default 32); each round a
 * thread writes PIPELINE commands (default 1) on every one of its connections, flushes
 * them all, then reads every reply: CONNS x PIPELINE commands in flight, and with two
 * threads one keeps Redis working while the other builds its next round (bench/lib.sh
 * bench_deduct_evalsha: -t 2 -P 8, Redis busy ~1.0 on 2 cores). Before, one thread
 * sent a connection's command only when it asked for that connection's reply: one call
 * in flight at a time, and the client's round trips, not Redis, set the rate.
 * Redis's own CPU over the run comes from INFO cpu (used_cpu_sys + used_cpu_user, read
 * on a separate connection before the first round and after the last reply): its busy
 * fraction = that CPU / the run's wall time, ~1.0 when Redis is the limit. Prints one line:
 *   calls=N seconds=S rate=R errors=E threads=T conns=C pipeline=P redis_cpu_s=X
 *   redis_busy=F [first_error="..."]
 * Never asserted. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <hiredis/hiredis.h>

#define MAX_ARGS 64
#define MAX_CONNS 1024
#define MAX_THREADS 16
#define MAX_PIPELINE 64

typedef struct loader {
        pthread_t tid;
        redisContext **ctx;             /* this thread's connections */
        int nctx;
        uint64_t rng;
        long long max_calls;            /* 0: until the deadline */
        long long calls, errors;
        char first_error[256];
        int failed;                     /* 1: a connection broke (reason on stderr) */
} loader_t;

static const char *g_host = "127.0.0.1";
static int g_port = 6379, g_pipeline = 1, g_nargs;
static char **g_argv;
static double g_deadline;               /* monotonic s; 0: none */

static uint64_t rng_next(uint64_t *s)   /* xorshift64 */
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
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

/* An argument cut at its placeholders once, at start-up: the client's work per call is
 * then a few copies (it shares the cores with Redis). */
#define MAX_PARTS 8
typedef struct arg_part {
        const char *lit;                /* a literal's bytes (not terminated) */
        size_t len;
        int ph;                         /* -1 literal, 0..2 __idN__, 3 __ts__ */
} arg_part_t;

typedef struct arg_tmpl {
        int nparts;
        arg_part_t part[MAX_PARTS];
        int fixed;                      /* 1: no placeholder (sent as is) */
} arg_tmpl_t;

static arg_tmpl_t g_tmpl[MAX_ARGS];

/* Cut @p s into @p t. @returns 0, or -1 if it has more than MAX_PARTS parts. */
static int compile(const char *s, arg_tmpl_t *t)
{
        const char *lit = s;

        t->nparts = 0;
        while (*s) {
                int ph = -1, skip = 0;

                if (!strncmp(s, "__id", 4) && s[4] >= '1' && s[4] <= '3' && !strncmp(s + 5, "__", 2)) {
                        ph = s[4] - '1';
                        skip = 7;
                } else if (!strncmp(s, "__ts__", 6)) {
                        ph = 3;
                        skip = 6;
                }
                if (ph < 0) {
                        s++;
                        continue;
                }
                if (t->nparts + 2 > MAX_PARTS)
                        return -1;
                if (s > lit)
                        t->part[t->nparts++] = (arg_part_t){ lit, (size_t)(s - lit), -1 };
                t->part[t->nparts++] = (arg_part_t){ NULL, 0, ph };
                s += skip;
                lit = s;
        }
        if (s > lit) {
                if (t->nparts + 1 > MAX_PARTS)
                        return -1;
                t->part[t->nparts++] = (arg_part_t){ lit, (size_t)(s - lit), -1 };
        }
        t->fixed = t->nparts == 1 && t->part[0].ph < 0;
        return 0;
}

/* @p t with its placeholders filled, into @p out (size @p size). @returns the length. */
static size_t expand(const arg_tmpl_t *t, char *out, size_t size, char vals[4][24], const size_t lens[4])
{
        size_t o = 0;

        for (int i = 0; i < t->nparts; i++) {
                const char *v = t->part[i].ph < 0 ? t->part[i].lit : vals[t->part[i].ph];
                size_t n = t->part[i].ph < 0 ? t->part[i].len : lens[t->part[i].ph];

                if (o + n >= size)
                        break;
                memcpy(out + o, v, n);
                o += n;
        }
        out[o] = '\0';
        return o;
}

/* @p v in decimal into @p buf. @returns its length. */
static size_t u64_dec(uint64_t v, char *buf)
{
        char tmp[24];
        size_t n = 0, i;

        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        for (i = 0; i < n; i++)
                buf[i] = tmp[n - 1 - i];
        buf[n] = '\0';
        return n;
}

/* Append one call (fresh ids; @p vals[3] holds the round's clock) to @p ctx's output
 * buffer. @returns 0 or -1. */
static int append_call(loader_t *l, redisContext *ctx, char vals[4][24], size_t lens[4])
{
        char buf[MAX_ARGS][512];
        const char *av[MAX_ARGS];
        size_t avlen[MAX_ARGS];
        int i;

        for (i = 0; i < 3; i++)
                lens[i] = u64_dec(100000000000000000ULL + rng_next(&l->rng) % 800000000000000000ULL,
                                  vals[i]);
        for (i = 0; i < g_nargs; i++) {
                if (g_tmpl[i].fixed) {
                        av[i] = g_tmpl[i].part[0].lit;
                        avlen[i] = g_tmpl[i].part[0].len;
                        continue;
                }
                avlen[i] = expand(&g_tmpl[i], buf[i], sizeof(buf[i]), vals, lens);
                av[i] = buf[i];
        }
        return redisAppendCommandArgv(ctx, g_nargs, av, avlen) == REDIS_OK ? 0 : -1;
}

/* Write all of @p ctx's output buffer. @returns 0 or -1. */
static int flush(redisContext *ctx)
{
        int done = 0;

        while (!done)
                if (redisBufferWrite(ctx, &done) != REDIS_OK)
                        return -1;
        return 0;
}

static void *loader_main(void *arg)
{
        loader_t *l = arg;
        int c, k;

        for (;;) {
                char vals[4][24];
                size_t lens[4];

                if (l->max_calls > 0 && l->calls >= l->max_calls)
                        break;
                if (g_deadline > 0 && mono_s() >= g_deadline)
                        break;
                lens[3] = u64_dec((uint64_t)wall_ms(), vals[3]);
                for (c = 0; c < l->nctx; c++)
                        for (k = 0; k < g_pipeline; k++)
                                if (append_call(l, l->ctx[c], vals, lens) != 0)
                                        goto broken;
                for (c = 0; c < l->nctx; c++)
                        if (flush(l->ctx[c]) != 0)
                                goto broken;
                for (c = 0; c < l->nctx; c++) {
                        for (k = 0; k < g_pipeline; k++) {
                                void *rv = NULL;
                                redisReply *reply;

                                if (redisGetReply(l->ctx[c], &rv) != REDIS_OK || !rv)
                                        goto broken;
                                reply = rv;
                                if (reply->type == REDIS_REPLY_ERROR && !l->errors++)
                                        snprintf(l->first_error, sizeof(l->first_error), "%s", reply->str);
                                freeReplyObject(reply);
                                l->calls++;
                        }
                }
        }
        return NULL;
broken:
        fprintf(stderr, "evalsha_load: connection: %s\n", l->ctx[c]->errstr);
        l->failed = 1;
        return NULL;
}

/* Redis's used_cpu_sys + used_cpu_user (s) from INFO cpu on @p ctx; -1 if unreadable. */
static double redis_cpu_s(redisContext *ctx)
{
        redisReply *reply = redisCommand(ctx, "INFO cpu");
        double sys = -1, user = -1;
        const char *p;

        if (!reply || reply->type != REDIS_REPLY_STRING) {
                if (reply)
                        freeReplyObject(reply);
                return -1;
        }
        if ((p = strstr(reply->str, "used_cpu_sys:")))
                sys = atof(p + strlen("used_cpu_sys:"));
        if ((p = strstr(reply->str, "used_cpu_user:")))
                user = atof(p + strlen("used_cpu_user:"));
        freeReplyObject(reply);
        return sys < 0 || user < 0 ? -1 : sys + user;
}

static redisContext *connect_or_die(void)
{
        redisContext *ctx = redisConnect(g_host, g_port);

        if (!ctx || ctx->err) {
                fprintf(stderr, "evalsha_load: connect %s:%d: %s\n", g_host, g_port,
                        ctx ? ctx->errstr : "out of memory");
                exit(1);
        }
        return ctx;
}

int main(int argc, char **argv)
{
        int conns = 32, threads = 1, opt, c, t;
        double secs = 0, t0, t1, cpu0, cpu1;
        long long max_calls = 0, calls = 0, errors = 0;
        const char *first_error = NULL;
        static redisContext *ctx[MAX_CONNS];
        static loader_t loaders[MAX_THREADS];
        redisContext *info;
        int failed = 0;

        while ((opt = getopt(argc, argv, "h:p:c:t:P:d:n:")) != -1) {
                switch (opt) {
                case 'h': g_host = optarg; break;
                case 'p': g_port = atoi(optarg); break;
                case 'c': conns = atoi(optarg); break;
                case 't': threads = atoi(optarg); break;
                case 'P': g_pipeline = atoi(optarg); break;
                case 'd': secs = atof(optarg); break;
                case 'n': max_calls = atoll(optarg); break;
                default: goto usage;
                }
        }
        g_nargs = argc - optind;
        g_argv = argv + optind;
        if (g_nargs < 1 || g_nargs > MAX_ARGS || conns < 1 || conns > MAX_CONNS || threads < 1 ||
            threads > MAX_THREADS || g_pipeline < 1 || g_pipeline > MAX_PIPELINE ||
            (secs <= 0 && max_calls <= 0))
                goto usage;
        if (threads > conns)
                threads = conns;
        for (c = 0; c < g_nargs; c++)
                if (compile(g_argv[c], &g_tmpl[c]) != 0) {
                        fprintf(stderr, "evalsha_load: argument %d has too many placeholders\n", c + 1);
                        return 2;
                }
        for (c = 0; c < conns; c++)
                ctx[c] = connect_or_die();
        info = connect_or_die();
        for (t = 0; t < threads; t++) {
                loader_t *l = &loaders[t];

                /* connections t, t + threads, ... */
                l->ctx = calloc((size_t)conns, sizeof(*l->ctx));
                if (!l->ctx)
                        return 1;
                for (c = t; c < conns; c += threads)
                        l->ctx[l->nctx++] = ctx[c];
                l->rng = 88172645463325252ULL ^ ((uint64_t)wall_ms() * 2654435761ULL) ^
                         ((uint64_t)getpid() << 16) ^ ((uint64_t)(t + 1) * 0x9e3779b97f4a7c15ULL);
                /* A call budget is split between the threads (rounds may overshoot it). */
                l->max_calls = max_calls > 0 ? (max_calls + threads - 1) / threads : 0;
        }
        cpu0 = redis_cpu_s(info);
        t0 = mono_s();
        g_deadline = secs > 0 ? t0 + secs : 0;
        for (t = 0; t < threads; t++)
                if (pthread_create(&loaders[t].tid, NULL, loader_main, &loaders[t]) != 0) {
                        fprintf(stderr, "evalsha_load: cannot start thread %d\n", t);
                        return 1;
                }
        for (t = 0; t < threads; t++) {
                pthread_join(loaders[t].tid, NULL);
                calls += loaders[t].calls;
                errors += loaders[t].errors;
                failed |= loaders[t].failed;
                if (!first_error && loaders[t].errors)
                        first_error = loaders[t].first_error;
        }
        t1 = mono_s();
        cpu1 = redis_cpu_s(info);
        if (failed)
                return 1;
        printf("calls=%lld seconds=%.2f rate=%.0f errors=%lld threads=%d conns=%d pipeline=%d", calls,
               t1 - t0, (double)calls / (t1 - t0), errors, threads, conns, g_pipeline);
        if (cpu0 >= 0 && cpu1 >= 0)
                printf(" redis_cpu_s=%.2f redis_busy=%.2f", cpu1 - cpu0, (cpu1 - cpu0) / (t1 - t0));
        else
                printf(" redis_cpu_s=? redis_busy=?");
        if (first_error)
                printf(" first_error=\"%s\"", first_error);
        printf("\n");
        for (c = 0; c < conns; c++)
                redisFree(ctx[c]);
        redisFree(info);
        for (t = 0; t < threads; t++)
                free(loaders[t].ctx);
        return 0;
usage:
        fprintf(stderr, "usage: evalsha_load [-h HOST] [-p PORT] [-c CONNS] [-t THREADS] [-P PIPELINE] "
                "[-d SECONDS | -n CALLS] -- ARG... (placeholders __id1__ __id2__ __id3__ __ts__)\n");
        return 2;
}
