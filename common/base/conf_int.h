/* conf_int.h: the inside of the configuration module (sk/conf.h): the table of common
 * options, used by conf.c (passes 2-4, --help, --print-config) and defined in
 * conf_table.c, each row with its default (DESIGN.md 10) and the binaries that use it.
 * Internal to common/base. */
#pragma once
#include <stddef.h>
#include <stdio.h>

#include "sk/conf.h"

typedef enum {
        V_STR,          /* plain string, non-empty, no control characters */
        V_INT,          /* int within [min, max] */
        V_REDIS_URL, V_MYSQL_URL,
        V_TOPIC,        /* [A-Za-z0-9._-]+ */
        V_PREFIX,       /* [A-Za-z0-9_.-]+ */
        V_HOSTPORT,     /* host:port */
        V_LISTEN,       /* host:port or unix:PATH (PATH absolute, < 108 bytes) */
        V_METRICS_ADDR, /* host:port or off */
        V_LEVEL,        /* debug|info|warn|error */
        V_KPROPS,       /* path of a librdkafka properties file, "" = none */
} vkind_t;

typedef struct copt {
        const char *flag;
        const char *env;
        vkind_t kind;
        size_t off;             /* offset of the field in sk_conf_t */
        size_t size;            /* STR-like: buffer size */
        long min, max;
        const char *arg;        /* metavariable in --help */
        const char *def;        /* the built-in default, as text (V_INT: a number, V_LEVEL:
                                   a level name); the only place it is written */
        const char *unset;      /* V_INT whose default is out of range, or a text whose
                                   default is "" (not given): what that means, for
                                   --help; else NULL */
        const char *help;
        unsigned bins;          /* SK_BIN_* of the binaries that use it (sk/conf.h) */
} copt_t;

/* Number of common options (checked against the table at compile time). */
#define SK__NCOPTS 27
/* One row per common option, in --help / --print-config order. */
extern const copt_t sk__copts[SK__NCOPTS];

/* 1 if option @p o holds a secret (a URL with a password): it may come from a VAR_FILE
 * variable (DESIGN.md 2) and is masked wherever it is shown. */
static inline int sk__copt_secret(const copt_t *o)
{
        return o->kind == V_REDIS_URL || o->kind == V_MYSQL_URL;
}

/* conf_help.c, the output of sk_conf_load, all rendered from the option tables (the
 * common one above, the binary's @p extra): --help (the common options of @p bins, then
 * @p extra); --help-markdown (the option tables of docs/OPERATIONS.md: every common
 * option with the binaries that use it, then @p extra, the rows of @p prog); and
 * --print-config (the values in @p conf and @p extra's destinations, secrets masked).
 * @p f, @p extra, @p conf borrowed. Not thread-safe (sk_conf_load's thread). */
void sk__print_help(FILE *f, unsigned bins, const char *prog, const char *usage_args,
                    const sk_opt_t *extra, size_t nextra);
void sk__print_markdown(FILE *f, const char *prog, const sk_opt_t *extra, size_t nextra);
void sk__print_config(FILE *f, unsigned bins, const sk_conf_t *conf, const sk_opt_t *extra,
                      size_t nextra);

/* snprintf that tolerates truncation on purpose (callers check lengths first). */
void sk__sfmt(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads a secret from the file @p path into @p dst (DESIGN.md 2: ?password-file= and the
 * *_FILE variables): the whole content less one trailing "\n" or "\r\n", 1..dst_size-1
 * bytes (dst_size 2..1024), no NUL, CR or LF inside; @p what ("password", "value")
 * names it in errors. Blocking file I/O; thread-safe on distinct @p dst. The scratch
 * copy is wiped. @returns 0, or -1 with a reason in errstr that starts with the path
 * and never holds the content (unreadable, empty, too long, bad bytes: permanent). */
int sk__read_secret_file(const char *path, const char *what, char *dst, size_t dst_size,
                         char *errstr, size_t errstr_size);

/* Reads the librdkafka properties file @p path (DESIGN.md 15 "Hardening rules": Kafka
 * client secrets never only on a command line) into @p conf's kafka_props, before the
 * -X properties already there (so a -X of the same key wins): "key=value" lines, blank
 * lines and lines starting with '#' or '!' skipped, white space around the key and the
 * value dropped. The file must be a regular file that others can neither read nor write
 * and its group cannot write (like the other secret files: 0640 root:seckill or
 * tighter). Blocking file I/O; not thread-safe (sk_conf_load's thread). @returns 0, or -1
 * with a reason in errstr that names the path and a line number, never a line's text
 * (permanent). */
int sk__read_kafka_props(const char *path, sk_conf_t *conf, char *errstr, size_t errstr_size);

/* Copies @p url into @p dst with the password of its userinfo replaced by *** (a bare
 * userinfo masked whole); a string without "://" or '@' is copied as is. Pure,
 * thread-safe (conf_secret.c). */
void sk__mask_url(const char *url, char *dst, size_t dst_size);
