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

typedef struct sk_mysql_url {   /* mysql://user[:pass]@host:port/database */
        char user[128];
        char password[128];
        char host[256];
        int port;
        char database[64];      /* [A-Za-z0-9_]+ */
} sk_mysql_url_t;

/** @brief Parse a SECKILL_REDIS_URL of any topology (see sk_redis_url_t, DESIGN.md 4b):
 *  redis://, redis-sentinel:// (master name required, ?db=N optional) or
 *  redis-cluster:// (db must be 0; no path). Ports 1..65535 (default 6379 for redis://
 *  and cluster seeds, 26379 for Sentinels), 1..16 seeds, user and password
 *  percent-decoded. Pure function (no I/O); thread-safe.
 *  @returns 0 with *out filled, or -1 with the reason in errstr (*out untouched). */
int sk_redis_url_parse(const char *url, sk_redis_url_t *out, char *errstr, size_t errstr_size);
/** @brief Parse mysql://user[:password]@host[:port]/database. @returns 0 or -1. */
int sk_mysql_url_parse(const char *url, sk_mysql_url_t *out, char *errstr, size_t errstr_size);
/** @brief Split "host:port" into @p host (size @p host_size) and *port. @returns 0 or -1. */
int sk_hostport_parse(const char *s, char *host, size_t host_size, int *port);
