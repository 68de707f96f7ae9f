/* sk/conf.h: configuration shared by every binary.
 * Order (last one wins): built-in defaults < SECKILL_* environment (empty = unset)
 * < command-line flags. Validated once after all three passes; an invalid value is
 * reported as one line naming the variable/flag and the accepted range, exit status 2.
 * A binary adds its own options through a file-scope sk_opt_t table (each row with its
 * default, written nowhere else), and names itself (SK_BIN_*):
 * it then lists, accepts and reads only the common options it uses, so one shared
 * environment file serves every binary (an unused variable is ignored, not validated)
 * while an unused flag is an unknown option.
 * Not thread-safe: parse once in main() before starting threads. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sk/num.h"
#include "sk/url.h"

#define SK_MAX_KAFKA_PROPS 32

typedef struct sk_conf {
        char redis_url[512];            /* SECKILL_REDIS_URL, --redis-url */
        sk_redis_url_t redis;           /* parsed redis_url */
        char mysql_url[512];            /* SECKILL_MYSQL_URL, --mysql-url */
        sk_mysql_url_t mysql;           /* parsed mysql_url */
        char kafka_brokers[512];        /* SECKILL_KAFKA_BROKERS, --brokers */
        char topic[200];                /* SECKILL_TOPIC, --topic */
        char dlq_topic[210];            /* derived: <topic>.dlq */
        char group_id[200];             /* SECKILL_GROUP_ID, --group-id */
        int topic_partitions;           /* SECKILL_TOPIC_PARTITIONS, 1..1000 */
        char http_addr[128];            /* SECKILL_HTTP_ADDR host:port */
        char redis_prefix[64];          /* SECKILL_REDIS_PREFIX [A-Za-z0-9_.-]+ */
        int kafka_delivery_timeout_ms;  /* SECKILL_KAFKA_DELIVERY_TIMEOUT_MS, 100..600000 */
        int max_inflight;               /* SECKILL_MAX_INFLIGHT, 1..1000000 */
        int soldout_cache_ms;           /* SECKILL_SOLDOUT_CACHE_MS, 0..60000 (0 = off, DESIGN.md 4) */
        int worker_id;                  /* SECKILL_WORKER_ID 0..1023, -1 = lowest free */
        int worker_lease_ms;            /* SECKILL_WORKER_LEASE_MS, 300..3600000 */
        int reconcile_window_hours;     /* SECKILL_RECONCILE_WINDOW_HOURS, 1..8760 */
        char metrics_addr[128];         /* SECKILL_METRICS_ADDR host:port or "off" */
        int pay_timeout_s;              /* SECKILL_PAY_TIMEOUT_S, 0..31536000 (0 = created PAID) */
        int close_interval_ms;          /* SECKILL_CLOSE_INTERVAL_MS, 10..3600000 (closer scan) */
        int pay_grace_s;                /* SECKILL_PAY_GRACE_S, 0..86400 (DESIGN.md 13: past the
                                           deadline = pay_deadline + grace <= NOW(3)) */
        char currency[8];               /* SECKILL_CURRENCY: ISO 4217 default of a new voucher */
        int log_level;                  /* SECKILL_LOG_LEVEL debug|info|warn|error */
        int breaker_failures;           /* SECKILL_BREAKER_FAILURES, 1..1000 (DESIGN.md 12) */
        int breaker_slow_ms;            /* SECKILL_BREAKER_SLOW_MS, 1..60000 */
        int breaker_open_ms;            /* SECKILL_BREAKER_OPEN_MS, 100..3600000 */
        int breaker_healthy_ms;         /* SECKILL_BREAKER_HEALTHY_MS, 100..3600000 */
        int degrade_db_conns;           /* SECKILL_DEGRADE_DB_CONNS, 1..256 (DESIGN.md 12) */
        int switch_stale_ms;            /* SECKILL_SWITCH_STALE_MS, 500..600000 (DESIGN.md 12 a) */
        char kafka_properties_file[512]; /* SECKILL_KAFKA_PROPERTIES_FILE: "" = none */
        int nkafka_props;               /* the properties file's key=value lines, then -X
                                           key=value, passed to librdkafka as is, in order */
        char kafka_props[SK_MAX_KAFKA_PROPS][2][256];
} sk_conf_t;

typedef enum { SK_OPT_INT, SK_OPT_STR, SK_OPT_BOOL } sk_opt_type_t;

/** One binary-specific option: a row of the binary's file-scope table (SK_OPT_I,
 *  SK_OPT_S, SK_OPT_B below), its default written only there. The loader writes the
 *  default into *dst before reading the environment and the flags, and renders it in
 *  --help and --help-markdown; a help text never repeats it. */
typedef struct sk_opt {
        const char *name;       /* long flag without "--", e.g. "batch-max" */
        const char *env;        /* environment variable or NULL */
        sk_opt_type_t type;
        void *dst;              /* int * (INT, BOOL) or char * of dst_size bytes (STR) */
        size_t dst_size;        /* STR only */
        long min, max;          /* INT only, inclusive */
        long def;               /* INT, BOOL: the default; an INT outside [min, max] = not given */
        const char *def_str;    /* STR: the default, shorter than dst_size; NULL = "" */
        const char *unset;      /* what a default that is not given (INT out of range, STR
                                   "") means, shown as "default: <unset>"; may be NULL */
        const char *help;       /* one line, shown by --help */
} sk_opt_t;

/** A row of an option table: an INT option @p name (flag without "--"), read from the
 *  variable @p env (or NULL), stored in the int @p dst, accepted in [@p min, @p max],
 *  default @p def (outside the range = not given; @p unset says what that means). */
#define SK_OPT_I(name, env, dst, min, max, def, unset, help) \
        { (name), (env), SK_OPT_INT, (dst), 0, (min), (max), (def), NULL, (unset), (help) }
/** A STR option stored in the char array @p buf (its size is the limit), default @p def. */
#define SK_OPT_S(name, env, buf, def, unset, help) \
        { (name), (env), SK_OPT_STR, (buf), sizeof(buf), 0, 0, 0, (def), (unset), (help) }
/** A BOOL flag (no value; 1|0|true|false|yes|no|on|off in @p env), default off. */
#define SK_OPT_B(name, env, dst, help) \
        { (name), (env), SK_OPT_BOOL, (dst), 0, 0, 1, 0, NULL, NULL, (help) }
/** The number of rows of a file-scope option table. */
#define SK_NOPTS(table) (sizeof(table) / sizeof((table)[0]))

/** The binaries (DESIGN.md 2), as a bit set: which common options each one uses. */
typedef enum {
        SK_BIN_FRONT = 1,
        SK_BIN_CONSUMER = 2,
        SK_BIN_RECONCILER = 4,
        SK_BIN_ADMIN = 8,
        SK_BIN_ALL = 15,
} sk_bin_t;

/** @brief Fill @p conf with the built-in defaults of DESIGN.md 2 (local stack), taken
 *  from the table of common options (conf_table.c). Thread-safe on distinct @p conf. */
void sk_conf_defaults(sk_conf_t *conf);

/** @brief 1 if the librdkafka property name @p k holds a secret (a password, a private
 *  key or its PEM, an OAuth/SASL config), else 0: its value is shown as *** by
 *  --print-config and in every error line (DESIGN.md 15). Pure, thread-safe. */
int sk_conf_secret_key(const char *k);

/** @brief If @p m names a password-file (?password-file=PATH, DESIGN.md 2 and 16), read the
 *  password from that file into m->password: its whole content, less one trailing "\n"
 *  or "\r\n"; 1..127 bytes, no NUL, CR or LF inside. Nothing happens without a
 *  password-file. sk_conf_load calls it for SECKILL_MYSQL_URL. Blocking file I/O;
 *  thread-safe on distinct @p m.
 *  @returns 0, or -1 with a reason in errstr that names the path, never the content
 *  (unreadable, empty, too long, bad bytes: a permanent configuration error). */
int sk_mysql_url_read_password_file(sk_mysql_url_t *m, char *errstr, size_t errstr_size);

/** @brief Defaults, then environment, then flags, then validation.
 *  @p prog is the binary name; @p usage_args describes positional arguments
 *  (e.g. "db migrate | voucher ..."), may be NULL. @p extra (may be NULL) lists the
 *  binary's own options: each destination first receives the row's default. Handles
 *  --help, --version, --print-config (secrets masked), --log-level, -X key=value, and
 *  --help-markdown (not listed by --help): the option tables of docs/OPERATIONS.md, every
 *  common option then this binary's, as Markdown on stdout (tests/unit/ops_options_doc.sh). A secret option (SECKILL_REDIS_URL, SECKILL_MYSQL_URL) may
 *  come from VAR_FILE=PATH instead of VAR (the file's content, one trailing newline
 *  dropped; VAR and VAR_FILE both set, or an unreadable or empty file, is an error
 *  naming the variable and path, never the content; DESIGN.md 2). On return *argi is the
 *  index of the first positional argument in argv.
 *  @returns 0 to continue; 1 if it already printed help/version/config (exit 0);
 *           2 on an invalid value, after printing one line on stderr (exit 2). */
int sk_conf_load(sk_conf_t *conf, int argc, char **argv, const char *prog,
                 const char *usage_args, const sk_opt_t *extra, size_t nextra, int *argi);

/** @brief sk_conf_load() for the binaries in @p bins (SK_BIN_* bits; SK_BIN_ALL is
 *  sk_conf_load()): only the common options those use are listed by --help and
 *  --print-config, accepted as flags (any other is "unknown option") and read from the
 *  environment (any other SECKILL_* variable is ignored, even if invalid). Same
 *  arguments, returns and thread-safety as sk_conf_load(). */
int sk_conf_load_bin(sk_conf_t *conf, unsigned bins, int argc, char **argv, const char *prog,
                     const char *usage_args, const sk_opt_t *extra, size_t nextra, int *argi);

/** @brief Print the option lines of --help to @p f: the common options of @p bins
 *  (SK_BIN_* bits), then @p extra (may be NULL), then the shared ones (-X,
 *  --print-config, --version, --help). For a binary that writes its own usage text
 *  (seckill-admin). Each default is rendered from its table row ("default N").
 *  @p f, @p extra borrowed. Thread-safe if @p f is not shared. */
void sk_conf_print_options(FILE *f, unsigned bins, const sk_opt_t *extra, size_t nextra);

/** @brief Print the --help lines of @p extra only (each with its env and its default
 *  rendered from the row), for a binary that lists a subset (a command's own flags).
 *  @p f, @p extra borrowed. Thread-safe if @p f is not shared. */
void sk_conf_print_extra(FILE *f, const sk_opt_t *extra, size_t nextra);


