/* conf.c: configuration shared by every binary (DESIGN.md 2, STYLE.md 6).
 *
 * Order, last one wins ("last config is the one that matters", redis):
 *   1. built-in defaults (sk_conf_defaults, the local stack of DESIGN.md 10);
 *   2. SECKILL_* environment variables (an empty variable counts as unset, kcat);
 *   3. command-line flags (getopt_long, GNU argument permutation, so flags may follow
 *      positional arguments: `seckill-admin db migrate --mysql-url ...`).
 * Passes 2 and 3 only record the raw text and where it came from; pass 4 parses and
 * validates the final value of every option once, so an invalid environment value that
 * a flag overrides is not an error, and the one error line names the source that won:
 *   seckill-front: SECKILL_WORKER_ID=5000 is out of range (0..1023)
 * Name, variable, bounds, help and users of each option live together in one table (redis
 * static_configs[]) in conf_table.c, with the defaults; URL parsing is in conf_url.c.
 * A binary sees only the common options it uses (sk_conf_load_bin): its --help and
 * --print-config list those, another binary's flag is refused, another binary's
 * variable is not read (one environment file serves them all).
 * The secret options (SECKILL_REDIS_URL, SECKILL_MYSQL_URL) may instead come from a file
 * named by VAR_FILE (DESIGN.md 2; both set is an error; read in pass 4 by
 * conf_secret.c). Passwords are never printed: --print-config and error lines show
 * them as ***, and a value read from a file is never shown at all. Not thread-safe: call once from main() before starting threads. */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/conf.h"
#include "sk/err.h"
#include "sk/failpoint.h"
#include "sk/log.h"
#include "conf_int.h"
#include "conf_url.h"

#ifndef SK_VERSION
#define SK_VERSION "0.0.0"
#endif

/* ------------------------------------------------------------------ table */

/* Where the final value of an option came from. */
typedef struct src {
        const char *val;        /* NULL = default; for a VAR_FILE, its path until read */
        const char *file;       /* the VAR_FILE path the value comes from, NULL = none */
        char origin[64];        /* "SECKILL_X", "SECKILL_X_FILE" or "--x" */
} src_t;

static void set_src(src_t *s, const char *val, const char *prefix, const char *name)
{
        s->val = val;
        s->file = NULL;
        sk__sfmt(s->origin, sizeof(s->origin), "%s%s", prefix, name);
}

/* One error line on stderr: "<prog>: <origin>=<value> <what>". URLs are masked; a value
 * read from a VAR_FILE is never shown, the line names the file instead. */
static void report(const char *prog, const src_t *s, int mask, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void report(const char *prog, const src_t *s, int mask, const char *fmt, ...)
{
        char shown[600], what[600];
        va_list ap;

        if (mask)
                sk__mask_url(s->val, shown, sizeof(shown));
        else
                sk__sfmt(shown, sizeof(shown), "%s", s->val);
        va_start(ap, fmt);
        if (vsnprintf(what, sizeof(what), fmt, ap) < 0)
                what[0] = '\0';
        va_end(ap);
        if (s->file)
                fprintf(stderr, "%s: %s=%s: the file's value %s\n", prog, s->origin, s->file, what);
        else
                fprintf(stderr, "%s: %s=%s %s\n", prog, s->origin, shown, what);
        fflush(stderr);
}

static int no_ctl(const char *v)
{
        for (; *v; v++)
                if (iscntrl((unsigned char)*v) || *v == ' ')
                        return 0;
        return 1;
}

static int charset_ok(const char *v, const char *extra)
{
        if (!*v)
                return 0;
        for (; *v; v++)
                if (!isalnum((unsigned char)*v) && !strchr(extra, *v))
                        return 0;
        return 1;
}

/* Validates and stores the final value of common option @p o. @returns 0 or 2. */
static int apply_copt(sk_conf_t *conf, const copt_t *o, const src_t *s, const char *prog)
{
        char *field = (char *)conf + o->off;
        char err[256] = "";
        size_t len = strlen(s->val);

        if (o->size && len >= o->size) {
                report(prog, s, sk__copt_secret(o),
                       "is too long (max %zu chars)", o->size - 1);
                return 2;
        }
        switch (o->kind) {
        case V_INT:
                if (sk_parse_int(s->val, o->min, o->max, (int *)(void *)field) != 0) {
                        report(prog, s, 0, "is out of range (%ld..%ld)", o->min, o->max);
                        return 2;
                }
                return 0;
        case V_LEVEL:
                if (sk_log_parse_level(s->val, (int *)(void *)field) != 0) {
                        report(prog, s, 0, "is invalid (debug|info|warn|error)");
                        return 2;
                }
                return 0;
        case V_REDIS_URL:
                if (sk_redis_url_parse(s->val, &conf->redis, err, sizeof(err)) != 0) {
                        report(prog, s, 1, "is invalid: %s (port 1..65535, db 0..15)", err);
                        return 2;
                }
                break;
        case V_MYSQL_URL:
                if (sk_mysql_url_parse(s->val, &conf->mysql, err, sizeof(err)) != 0) {
                        report(prog, s, 1, "is invalid: %s (port 1..65535)", err);
                        return 2;
                }
                if (sk_mysql_url_read_password_file(&conf->mysql, err, sizeof(err)) != 0) {
                        report(prog, s, 1, "%s", err);
                        return 2;
                }
                break;
        case V_TOPIC:
                if (!charset_ok(s->val, "._-") || len > 240) {
                        report(prog, s, 0, "is invalid (1..199 chars of [A-Za-z0-9._-])");
                        return 2;
                }
                break;
        case V_PREFIX:
                if (!charset_ok(s->val, "._-")) {
                        report(prog, s, 0, "is invalid (1..63 chars of [A-Za-z0-9_.-])");
                        return 2;
                }
                break;
        case V_LISTEN:
                if (!strncmp(s->val, "unix:", 5)) {
                        /* sizeof(sun_path) of Linux: 108 bytes with its NUL. */
                        if (s->val[5] != '/' || len - 5 >= 108 || !no_ctl(s->val)) {
                                report(prog, s, 0, "is invalid (unix:PATH: an absolute path of at most "
                                       "107 bytes, no spaces)");
                                return 2;
                        }
                        break;
                }
                /* host:port, checked as V_HOSTPORT */
                /* fall through */
        case V_HOSTPORT:
        case V_METRICS_ADDR: {
                char host[128];
                int port;
                if (o->kind == V_METRICS_ADDR && strcmp(s->val, "off") == 0)
                        break;
                if (sk__parse_host_port(s->val, s->val + len, host, sizeof(host), &port, 0, err, sizeof(err)) != 0) {
                        report(prog, s, 0, "is invalid: %s (host:port%s, port 1..65535)", err,
                               o->kind == V_METRICS_ADDR ? " or off" : "");
                        return 2;
                }
                break;
        }
        case V_KPROPS:
                if (sk__read_kafka_props(s->val, conf, err, sizeof(err)) != 0) {
                        report(prog, s, 0, "%s", err);
                        return 2;
                }
                break;
        case V_STR:
                if (!*s->val || !no_ctl(s->val)) {
                        report(prog, s, 0, "is invalid (non-empty, no spaces or control characters)");
                        return 2;
                }
                break;
        }
        memcpy(field, s->val, len + 1);
        return 0;
}

static int parse_bool(const char *v, int *out)
{
        static const char *const yes[] = { "1", "true", "yes", "on" };
        static const char *const no[] = { "0", "false", "no", "off" };

        for (size_t i = 0; i < 4; i++) {
                if (strcmp(v, yes[i]) == 0) {
                        *out = 1;
                        return 0;
                }
                if (strcmp(v, no[i]) == 0) {
                        *out = 0;
                        return 0;
                }
        }
        return -1;
}

/* Validates and stores the final value of a binary-specific option. @returns 0 or 2. */
static int apply_extra(const sk_opt_t *o, const src_t *s, const char *prog)
{
        switch (o->type) {
        case SK_OPT_INT:
                if (sk_parse_int(s->val, o->min, o->max, (int *)o->dst) != 0) {
                        report(prog, s, 0, "is out of range (%ld..%ld)", o->min, o->max);
                        return 2;
                }
                return 0;
        case SK_OPT_BOOL:
                if (parse_bool(s->val, (int *)o->dst) != 0) {
                        report(prog, s, 0, "is invalid (1|0|true|false|yes|no)");
                        return 2;
                }
                return 0;
        case SK_OPT_STR:
                if (strlen(s->val) >= o->dst_size) {
                        report(prog, s, 0, "is too long (max %zu chars)", o->dst_size - 1);
                        return 2;
                }
                memcpy(o->dst, s->val, strlen(s->val) + 1);
                return 0;
        }
        return 0;
}

/* ------------------------------------------------------------------ load */

/* Pass 1 for the binary's own options: each row's default into its destination. */
static void extra_defaults(const sk_opt_t *extra, size_t nextra)
{
        for (size_t i = 0; i < nextra; i++) {
                const sk_opt_t *o = &extra[i];
                if (o->type == SK_OPT_STR)
                        sk__sfmt(o->dst, o->dst_size, "%s", o->def_str ? o->def_str : "");
                else
                        *(int *)o->dst = (int)o->def;
        }
}

enum { OPT_HELP = 'h', OPT_X = 'X', OPT_VERSION = 1000, OPT_PRINT = 1001, OPT_MARKDOWN = 1002,
       OPT_COMMON = 1100, OPT_EXTRA = 1200 };

/* Pass 2: the SECKILL_* environment (an empty variable counts as unset); the variables
 * of options the binaries in @p bins do not use are not read. A secret option's VAR_FILE
 * (DESIGN.md 2) is recorded as a path here and read in pass 4, only if no flag overrides
 * it. @returns 0, or 2 after an error line (VAR and VAR_FILE both set). */
static int env_pass(unsigned bins, src_t *csrc, src_t *esrc, const sk_opt_t *extra, size_t nextra,
                    const char *prog)
{
        for (size_t i = 0; i < SK__NCOPTS; i++) {
                const copt_t *o = &sk__copts[i];
                const char *v = (o->bins & bins) ? getenv(o->env) : NULL;
                const char *fv = NULL;
                char fname[64];

                if (v && *v)
                        set_src(&csrc[i], v, "", o->env);
                if (!(o->bins & bins) || !sk__copt_secret(o))
                        continue;
                sk__sfmt(fname, sizeof(fname), "%s_FILE", o->env);
                fv = getenv(fname);
                if (!fv || !*fv)
                        continue;
                if (v && *v) {
                        fprintf(stderr, "%s: %s and %s are both set: give one\n", prog, o->env, fname);
                        fflush(stderr);
                        return 2;
                }
                set_src(&csrc[i], fv, "", fname);
                csrc[i].file = fv;
        }
        for (size_t i = 0; i < nextra; i++) {
                const char *v = extra[i].env ? getenv(extra[i].env) : NULL;
                if (v && *v)
                        set_src(&esrc[i], v, "", extra[i].env);
        }
        return 0;
}

/* Validates and stores the final value of common option @p o from @p s; a VAR_FILE's
 * value is read from its file first (one trailing newline dropped, errors naming the
 * variable and path, never the content) and wiped from the stack after use.
 * @returns 0 or 2 after an error line. */
static int apply_src(sk_conf_t *conf, const copt_t *o, const src_t *s, const char *prog)
{
        char buf[1024], err[600];
        src_t fs;
        int rc;

        if (!s->file)
                return apply_copt(conf, o, s, prog);
        if (sk__read_secret_file(s->file, "value", buf, o->size < sizeof(buf) ? o->size : sizeof(buf),
                                 err, sizeof(err)) != 0) {
                fprintf(stderr, "%s: %s=%s\n", prog, s->origin, err);
                fflush(stderr);
                return 2;
        }
        fs = *s;
        fs.val = buf;
        rc = apply_copt(conf, o, &fs, prog);
        memset(buf, 0, sizeof(buf));
        return rc;
}

/* Fills @p lopts (SK__NCOPTS + nextra + 5 entries) for getopt_long: the common options
 * of @p bins only, so another binary's flag is an unknown option. */
static void build_longopts(struct option *lopts, unsigned bins, const sk_opt_t *extra, size_t nextra)
{
        size_t nl = 0;

        for (size_t i = 0; i < SK__NCOPTS; i++)
                if (sk__copts[i].bins & bins)
                        lopts[nl++] = (struct option){ sk__copts[i].flag, required_argument, NULL, OPT_COMMON + (int)i };
        for (size_t i = 0; i < nextra; i++)
                lopts[nl++] = (struct option){ extra[i].name,
                                               extra[i].type == SK_OPT_BOOL ? no_argument : required_argument,
                                               NULL, OPT_EXTRA + (int)i };
        lopts[nl++] = (struct option){ "help", no_argument, NULL, OPT_HELP };
        lopts[nl++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
        lopts[nl++] = (struct option){ "print-config", no_argument, NULL, OPT_PRINT };
        lopts[nl++] = (struct option){ "help-markdown", no_argument, NULL, OPT_MARKDOWN };
        lopts[nl] = (struct option){ NULL, 0, NULL, 0 };
}

/* Appends "-X KEY=VALUE" @p arg to conf->kafka_props. @returns 0, or 2 with the error
 * line printed. */
static int add_kafka_prop(sk_conf_t *conf, const char *arg, const char *prog)
{
        const char *eq = strchr(arg, '=');
        size_t kl = eq ? (size_t)(eq - arg) : 0;

        if (!eq || kl == 0 || kl >= sizeof(conf->kafka_props[0][0]) ||
            strlen(eq + 1) >= sizeof(conf->kafka_props[0][1])) {
                fprintf(stderr, "%s: -X %s is invalid (KEY=VALUE, each under 256 chars)\n",
                        prog, eq ? "..." : arg);
                return 2;
        }
        if (conf->nkafka_props == SK_MAX_KAFKA_PROPS) {
                fprintf(stderr, "%s: -X given too many times (max %d)\n", prog,
                        SK_MAX_KAFKA_PROPS);
                return 2;
        }
        memcpy(conf->kafka_props[conf->nkafka_props][0], arg, kl);
        conf->kafka_props[conf->nkafka_props][0][kl] = '\0';
        memcpy(conf->kafka_props[conf->nkafka_props][1], eq + 1, strlen(eq + 1) + 1);
        conf->nkafka_props++;
        return 0;
}

/* @returns 1 if @p arg ("--name" or "--name=value") is a common option that the
 * binaries in @p bins do not use (another binary's flag), else 0. */
static int other_binarys_flag(const char *arg, unsigned bins)
{
        size_t n;

        if (strncmp(arg, "--", 2) != 0)
                return 0;
        arg += 2;
        n = strcspn(arg, "=");
        for (size_t i = 0; i < SK__NCOPTS; i++)
                if (strlen(sk__copts[i].flag) == n && strncmp(sk__copts[i].flag, arg, n) == 0)
                        return !(sk__copts[i].bins & bins);
        return 0;
}

/* Pass 3: command-line flags (raw text only; -X is stored at once). @returns 0 (then
 * optind is the first positional argument), 1 after --help, --help-markdown or --version, or 2 after
 * an error line. */
static int flags_pass(sk_conf_t *conf, unsigned bins, int argc, char **argv, const char *prog,
                      const char *usage_args, const sk_opt_t *extra, size_t nextra,
                      const struct option *lopts, src_t *csrc, src_t *esrc, int *print_cfg)
{
        int c;

        optind = 0;             /* 0 = full re-initialisation in glibc (tests call us twice) */
        opterr = 0;             /* we print our own single error line */
        while ((c = getopt_long(argc, argv, "hX:", lopts, NULL)) != -1) {
                if (c == OPT_HELP || c == OPT_MARKDOWN) {
                        if (c == OPT_HELP)
                                sk__print_help(stdout, bins, prog, usage_args, extra, nextra);
                        else
                                sk__print_markdown(stdout, prog, extra, nextra);
                        fflush(stdout);
                        return 1;
                } else if (c == OPT_VERSION) {
#ifdef SK_FAILPOINTS_ENABLED
                        printf("%s %s (failpoints compiled in: a testing build, DESIGN.md 11)\n",
                               prog, SK_VERSION);
#else
                        printf("%s %s\n", prog, SK_VERSION);
#endif
                        fflush(stdout);
                        return 1;
                } else if (c == OPT_PRINT) {
                        *print_cfg = 1;
                } else if (c == OPT_X) {
                        if (add_kafka_prop(conf, optarg, prog) != 0)
                                return 2;
                } else if (c >= OPT_COMMON && c < OPT_COMMON + (int)SK__NCOPTS) {
                        set_src(&csrc[c - OPT_COMMON], optarg, "--", sk__copts[c - OPT_COMMON].flag);
                } else if (c >= OPT_EXTRA && c < OPT_EXTRA + (int)nextra) {
                        const sk_opt_t *o = &extra[c - OPT_EXTRA];
                        set_src(&esrc[c - OPT_EXTRA], o->type == SK_OPT_BOOL ? "1" : optarg, "--", o->name);
                } else {
                        /* '?': unknown option (optopt 0 for a long one), or a known one
                         * without its value (optopt = its code). */
                        const char *bad = argv[optind - 1];
                        if (optopt == OPT_X || (optopt >= OPT_COMMON && optopt < OPT_EXTRA + (int)nextra))
                                fprintf(stderr, "%s: option %s needs a value (see --help)\n", prog, bad);
                        else if (optopt > 0 && optopt < 256)
                                fprintf(stderr, "%s: unknown option -%c (see --help)\n", prog, optopt);
                        else if (other_binarys_flag(bad, bins))
                                fprintf(stderr, "%s: option %s does not apply to %s (see --help)\n",
                                        prog, bad, prog);
                        else
                                fprintf(stderr, "%s: unknown option %s (see --help)\n", prog, bad);
                        return 2;
                }
        }
        return 0;
}

/* Pass 4: validates and stores the final values, in table order (the first error
 * wins), derives dlq_topic and the log level, and reads SECKILL_FAILPOINTS.
 * @returns 0, or 2 after an error line. */
static int validate_pass(sk_conf_t *conf, const src_t *csrc, const src_t *esrc,
                         const sk_opt_t *extra, size_t nextra, const char *prog)
{
        char err[256];

        for (size_t i = 0; i < SK__NCOPTS; i++)
                if (csrc[i].val && apply_src(conf, &sk__copts[i], &csrc[i], prog) != 0)
                        return 2;
        for (size_t i = 0; i < nextra; i++)
                if (esrc[i].val && apply_extra(&extra[i], &esrc[i], prog) != 0)
                        return 2;
        if (strlen(conf->redis_prefix) >= sizeof(conf->redis_prefix) ||
            strlen(conf->topic) + 4 >= sizeof(conf->dlq_topic)) {
                fprintf(stderr, "%s: topic is too long\n", prog);   /* unreachable: sizes checked */
                return 2;
        }
        sk__sfmt(conf->dlq_topic, sizeof(conf->dlq_topic), "%s.dlq", conf->topic);
        sk_log_level = conf->log_level;

#ifdef SK_FAILPOINTS_ENABLED
        if (sk_failpoint_setup_env(err, sizeof(err)) != 0) {
                fprintf(stderr, "%s: SECKILL_FAILPOINTS is invalid: %s\n", prog, err);
                return 2;
        }
#else
        /* Without failpoints a spec would silently inject nothing: a test that relies on
         * one must fail loudly, never pass without its fault. */
        (void)err;
        if (getenv("SECKILL_FAILPOINTS") && *getenv("SECKILL_FAILPOINTS")) {
                fprintf(stderr, "%s: SECKILL_FAILPOINTS is set but this build has no failpoints "
                        "(configure with -DSK_FAILPOINTS=ON; DESIGN.md 11, 15)\n", prog);
                return 2;
        }
#endif
        return 0;
}

int sk_conf_load(sk_conf_t *conf, int argc, char **argv, const char *prog,
                 const char *usage_args, const sk_opt_t *extra, size_t nextra, int *argi)
{
        return sk_conf_load_bin(conf, SK_BIN_ALL, argc, argv, prog, usage_args, extra, nextra, argi);
}

int sk_conf_load_bin(sk_conf_t *conf, unsigned bins, int argc, char **argv, const char *prog,
                     const char *usage_args, const sk_opt_t *extra, size_t nextra, int *argi)
{
        src_t csrc[SK__NCOPTS];
        src_t *esrc = NULL;
        struct option *lopts = NULL;
        int print_cfg = 0, rc = 2;

        memset(csrc, 0, sizeof(csrc));
        if (argi)
                *argi = argc;
        sk_conf_defaults(conf);                         /* pass 1 */
        extra_defaults(extra, nextra);
        esrc = calloc(nextra + 1, sizeof(*esrc));
        lopts = calloc(SK__NCOPTS + nextra + 5, sizeof(*lopts));
        if (!esrc || !lopts) {
                fprintf(stderr, "%s: out of memory\n", prog);
                goto done;
        }
        if ((rc = env_pass(bins, csrc, esrc, extra, nextra, prog)) != 0)
                goto done;
        build_longopts(lopts, bins, extra, nextra);
        if ((rc = flags_pass(conf, bins, argc, argv, prog, usage_args, extra, nextra, lopts, csrc, esrc,
                             &print_cfg)) != 0)
                goto done;
        if (argi)
                *argi = optind;
        if ((rc = validate_pass(conf, csrc, esrc, extra, nextra, prog)) != 0)
                goto done;
        if (print_cfg) {
                sk__print_config(stdout, bins, conf, extra, nextra);
                rc = 1;
        }
done:
        free(esrc);
        free(lopts);
        return rc;
}
