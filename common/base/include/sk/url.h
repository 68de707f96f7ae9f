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

/* SECKILL_MYSQL_URL (DESIGN.md 2, 15 "Transport", 16):
 *   mysql://user[:pass]@h1[:p1][,h2[:p2]...]/database[?opt=v&opt=v...]
 *   options: password-file=PATH; ssl-ca=PATH, ssl-cert=PATH, ssl-key=PATH,
 *   ssl-mode=REQUIRED|VERIFY_IDENTITY (TLS to the server, sk_mysql_ssl_mode_t)
 *   mysql-galera://...   the same, and a server without wsrep is refused
 * The hosts are tried in order; a connection goes to the first one that answers and is
 * writable (common/db, sk/db.h). host/port are hosts[0] (the only one of a one-host URL). */
#define SK_MYSQL_MAX_HOSTS 8

typedef struct sk_mysql_host {
        char host[256];
        int port;               /* 1..65535, default 3306 */
} sk_mysql_host_t;

/* ssl-mode of a MySQL URL (DESIGN.md 15 "Transport"). */
typedef enum {
        SK_MYSQL_SSL_OFF = 0,           /* no ssl-* option: plain TCP, as the server allows */
        SK_MYSQL_SSL_REQUIRED,          /* TLS or no connection; the certificate is not checked */
        SK_MYSQL_SSL_VERIFY_IDENTITY,   /* TLS, the chain checked against ssl-ca and the host
                                           name (or IP) against the certificate */
} sk_mysql_ssl_mode_t;

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
        sk_mysql_ssl_mode_t ssl_mode;   /* from ssl-mode; ssl-ca alone = VERIFY_IDENTITY */
        char ssl_ca[256];       /* ?ssl-ca=PATH: the CA file (PEM) the server's chain must end in */
        char ssl_cert[256];     /* ?ssl-cert=PATH and ?ssl-key=PATH: a client certificate */
        char ssl_key[256];
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
 *  the options password-file=PATH (not together with a password in the URL; the file
 *  is not read here) and ssl-ca, ssl-cert, ssl-key (paths, percent-decoded), ssl-mode
 *  (REQUIRED or VERIFY_IDENTITY; VERIFY_IDENTITY needs ssl-ca; ssl-ca without ssl-mode
 *  means VERIFY_IDENTITY; ssl-cert and ssl-key go together), each at most once.
 *  Pure function (no I/O); thread-safe.
 *  @returns 0 with *out filled, or -1 with the reason in errstr (*out untouched; the
 *  reason never holds the password). */
int sk_mysql_url_parse(const char *url, sk_mysql_url_t *out, char *errstr, size_t errstr_size);
/** @brief Split "host:port" into @p host (size @p host_size) and *port. @returns 0 or -1. */
int sk_hostport_parse(const char *s, char *host, size_t host_size, int *port);
