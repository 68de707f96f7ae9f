/* sk/url.h: the URLs of the configuration (DESIGN.md 4b, 16): SECKILL_REDIS_URL of any
 * Redis topology and SECKILL_MYSQL_URL, as types and pure parsers (common/base/redis_url.c,
 * common/base/conf_url.c). sk/conf.h holds them parsed in sk_conf_t. */
#pragma once
#include <stddef.h>

/* SECKILL_REDIS_URL, one of the topologies of DESIGN.md 4b:
 *   redis://[user:pass@]host[:port][/db]                      one server
 *   redis-sentinel://[user:pass@]h1:p1[,h2:p2...]/MASTER[?db=N] Sentinels, master name
 *   redis-cluster://[user:pass@]h1:p1[,h2:p2...]               Cluster seed nodes (db 0)
 * host/port are the server (redis://) or the first seed; seeds[] lists them all. */
typedef enum {
        SK_REDIS_STANDALONE = 0,
        SK_REDIS_SENTINEL = 1,
        SK_REDIS_CLUSTER = 2,
} sk_redis_kind_t;

#define SK_REDIS_MAX_SEEDS 16

typedef struct sk_redis_seed {
        char host[256];
        int port;               /* 1..65535 */
} sk_redis_seed_t;

typedef struct sk_redis_url {
        sk_redis_kind_t kind;
        char host[256];         /* the server, or seeds[0] */
        int port;               /* 1..65535 */
        int db;                 /* 0..15 (always 0 for a cluster) */
        char user[128];         /* "" = the default user (AUTH password) */
        char password[128];     /* "" = none */
        char master[128];       /* Sentinel: the master's name */
        int nseeds;             /* 1..SK_REDIS_MAX_SEEDS */
        sk_redis_seed_t seeds[SK_REDIS_MAX_SEEDS];
} sk_redis_url_t;

/* SECKILL_MYSQL_URL (DESIGN.md 2, 16):
 *   mysql://user[:pass]@h1[:p1][,h2[:p2]...]/database[?password-file=PATH]
 *   mysql-galera://...   the same, and a server without wsrep is refused
 * The hosts are tried in order; a connection goes to the first one that answers and is
 * writable (common/db, sk/db.h). host/port are hosts[0] (the only one of a one-host URL). */
#define SK_MYSQL_MAX_HOSTS 8

typedef struct sk_mysql_host {
        char host[256];
        int port;               /* 1..65535, default 3306 */
} sk_mysql_host_t;

typedef struct sk_mysql_url {
        char user[128];
        char password[128];     /* "" = none; from the URL or from password_file */
        char host[256];         /* hosts[0] */
        int port;               /* hosts[0] */
        char database[64];      /* [A-Za-z0-9_]+ */
        int nhosts;             /* 1..SK_MYSQL_MAX_HOSTS */
        sk_mysql_host_t hosts[SK_MYSQL_MAX_HOSTS];
        int galera_only;        /* 1 for mysql-galera://: refuse a server without wsrep */
        char password_file[256]; /* ?password-file=PATH (percent-decoded), "" = none; the
                                  * parser only records it: sk_mysql_url_read_password_file
                                  * (sk/conf.h) reads the password */
} sk_mysql_url_t;

/** @brief Parse a SECKILL_REDIS_URL of any topology (see sk_redis_url_t, DESIGN.md 4b):
 *  redis://, redis-sentinel:// (master name required, ?db=N optional) or
 *  redis-cluster:// (db must be 0; no path). Ports 1..65535 (default 6379 for redis://
 *  and cluster seeds, 26379 for Sentinels), 1..16 seeds, user and password
 *  percent-decoded. Pure function (no I/O); thread-safe.
 *  @returns 0 with *out filled, or -1 with the reason in errstr (*out untouched). */
int sk_redis_url_parse(const char *url, sk_redis_url_t *out, char *errstr, size_t errstr_size);
/** @brief Parse a SECKILL_MYSQL_URL (see sk_mysql_url_t): scheme mysql:// or
 *  mysql-galera://, 1..SK_MYSQL_MAX_HOSTS comma-separated host[:port] (default port 3306,
 *  bracketed IPv6 allowed), user and password percent-decoded, database [A-Za-z0-9_]+,
 *  the one option password-file=PATH (not together with a password in the URL; the file
 *  is not read here). Pure function (no I/O); thread-safe.
 *  @returns 0 with *out filled, or -1 with the reason in errstr (*out untouched; the
 *  reason never holds the password). */
int sk_mysql_url_parse(const char *url, sk_mysql_url_t *out, char *errstr, size_t errstr_size);
/** @brief Split "host:port" into @p host (size @p host_size) and *port. @returns 0 or -1. */
int sk_hostport_parse(const char *s, char *host, size_t host_size, int *port);
