/* redis_url.c: SECKILL_REDIS_URL, the three topologies of DESIGN.md 4b.
 *
 *   redis://[user:pass@]host[:port][/db]
 *   redis-sentinel://[user:pass@]h1[:p1][,h2[:p2]...]/MASTER[?db=N]
 *   redis-cluster://[user:pass@]h1[:p1][,h2[:p2]...][/0]
 *
 * The user and password are the data nodes' (AUTH [user] pass); Sentinels are asked
 * without AUTH. Default ports: 6379 (server, cluster seeds), 26379 (Sentinels).
 * Errors name what is wrong in one short phrase that never quotes a piece of the URL
 * (a piece cut in the wrong place could be part of a password); conf.c prefixes the
 * variable name and the URL with its password masked, and the binaries exit 2 on it.
 * Pure functions, thread-safe. */
#include <ctype.h>
#include <string.h>

#include "sk/num.h"
#include "sk/url.h"
#include "sk/err.h"
#include "conf_url.h"

/* "[user:]pass@" of [b, at): user "" or "default" means the default user. */
static int parse_userinfo(const char *b, const char *at, sk_redis_url_t *r,
                          char *errstr, size_t errstr_size)
{
        const char *colon = memchr(b, ':', (size_t)(at - b));

        if (!colon) {
                sk_seterr(errstr, errstr_size, "userinfo must be [user]:password");
                return -1;
        }
        if (sk__pct_decode(b, (size_t)(colon - b), r->user, sizeof(r->user)) != 0) {
                sk_seterr(errstr, errstr_size, "bad or too long user");
                return -1;
        }
        if (strcmp(r->user, "default") == 0)
                r->user[0] = '\0';
        if (sk__pct_decode(colon + 1, (size_t)(at - colon - 1), r->password,
                           sizeof(r->password)) != 0) {
                sk_seterr(errstr, errstr_size, "bad or too long password");
                return -1;
        }
        return 0;
}

/* Comma-separated host[:port] list of [b, e) into r->seeds. */
static int parse_seeds(const char *b, const char *e, int default_port, sk_redis_url_t *r,
                       char *errstr, size_t errstr_size)
{
        r->nseeds = 0;
        if (b == e) {
                sk_seterr(errstr, errstr_size, "empty host list");
                return -1;
        }
        for (;;) {
                const char *comma = memchr(b, ',', (size_t)(e - b));
                const char *end = comma ? comma : e;
                sk_redis_seed_t *s;

                if (r->nseeds == SK_REDIS_MAX_SEEDS) {
                        sk_seterr(errstr, errstr_size, "more than %d hosts",
                                  SK_REDIS_MAX_SEEDS);
                        return -1;
                }
                if (end == b) {
                        sk_seterr(errstr, errstr_size, "empty host in the list");
                        return -1;
                }
                s = &r->seeds[r->nseeds++];
                if (sk__parse_host_port(b, end, s->host, sizeof(s->host), &s->port,
                                        default_port, errstr, errstr_size) != 0)
                        return -1;
                if (!comma)
                        break;
                b = comma + 1;
        }
        memcpy(r->host, r->seeds[0].host, sizeof(r->host));
        r->port = r->seeds[0].port;
        return 0;
}

static int parse_db(const char *s, size_t n, int *db, char *errstr, size_t errstr_size)
{
        char num[8];

        if (n == 0 || n >= sizeof(num) || !isdigit((unsigned char)s[0])) {
                sk_seterr(errstr, errstr_size, "the database is out of range (0..15)");
                return -1;
        }
        memcpy(num, s, n);
        num[n] = '\0';
        if (sk_parse_int(num, 0, 15, db) != 0) {
                sk_seterr(errstr, errstr_size, "the database is out of range (0..15)");
                return -1;
        }
        return 0;
}

/* "/MASTER[?db=N]" of a Sentinel URL (p points at the '/' or the end). */
static int parse_sentinel_path(const char *p, sk_redis_url_t *r, char *errstr,
                               size_t errstr_size)
{
        const char *q, *name_end;
        size_t n;

        if (*p != '/' || !p[1] || p[1] == '?') {
                sk_seterr(errstr, errstr_size,
                          "missing master name (redis-sentinel://h1:p1,h2:p2/MASTER)");
                return -1;
        }
        p++;
        q = strchr(p, '?');
        name_end = q ? q : p + strlen(p);
        n = (size_t)(name_end - p);
        if (n >= sizeof(r->master)) {
                sk_seterr(errstr, errstr_size, "master name too long");
                return -1;
        }
        for (const char *c = p; c < name_end; c++)
                if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') {
                        sk_seterr(errstr, errstr_size, "master name must be [A-Za-z0-9_.-]+");
                        return -1;
                }
        memcpy(r->master, p, n);
        r->master[n] = '\0';
        if (!q)
                return 0;
        if (strncmp(q, "?db=", 4) != 0) {
                sk_seterr(errstr, errstr_size, "unknown query (only ?db=N)");
                return -1;
        }
        return parse_db(q + 4, strlen(q + 4), &r->db, errstr, errstr_size);
}

int sk_redis_url_parse(const char *url, sk_redis_url_t *out, char *errstr, size_t errstr_size)
{
        sk_redis_url_t r;
        const char *p, *path, *at = NULL;
        int default_port = 6379;

        memset(&r, 0, sizeof(r));
        if ((p = sk__strip_scheme(url, "redis"))) {
                r.kind = SK_REDIS_STANDALONE;
        } else if ((p = sk__strip_scheme(url, "redis-sentinel"))) {
                r.kind = SK_REDIS_SENTINEL;
                default_port = 26379;
        } else if ((p = sk__strip_scheme(url, "redis-cluster"))) {
                r.kind = SK_REDIS_CLUSTER;
        } else {
                sk_seterr(errstr, errstr_size, "expected redis://[user:password@]host[:port][/db], "
                          "redis-sentinel://h1:p1[,h2:p2...]/MASTER[?db=N] or "
                          "redis-cluster://h1:p1[,h2:p2...]");
                return -1;
        }
        /* The last '@' ends the userinfo (DESIGN.md 15 "Hardening rules"): no host list,
         * database or master name holds one, while a password may hold '/', '?' or '#'
         * unencoded; the masked echo of the URL cuts at the same '@' (conf_secret.c). */
        if ((at = strrchr(p, '@'))) {
                if (parse_userinfo(p, at, &r, errstr, errstr_size) != 0)
                        return -1;
                p = at + 1;
        }
        path = p + strcspn(p, "/?");
        if (r.kind == SK_REDIS_STANDALONE && memchr(p, ',', (size_t)(path - p))) {
                sk_seterr(errstr, errstr_size, "redis:// takes one host (a list needs "
                          "redis-sentinel:// or redis-cluster://)");
                return -1;
        }
        if (parse_seeds(p, path, default_port, &r, errstr, errstr_size) != 0)
                return -1;
        if (r.kind == SK_REDIS_SENTINEL) {
                if (parse_sentinel_path(path, &r, errstr, errstr_size) != 0)
                        return -1;
        } else if (*path == '?') {
                sk_seterr(errstr, errstr_size, "unexpected query (none is taken)");
                return -1;
        } else if (*path == '/' && path[1]) {
                if (parse_db(path + 1, strlen(path + 1), &r.db, errstr, errstr_size) != 0)
                        return -1;
                if (r.kind == SK_REDIS_CLUSTER && r.db != 0) {
                        sk_seterr(errstr, errstr_size,
                                  "a Redis Cluster has only database 0 (got /%d)", r.db);
                        return -1;
                }
        }
        *out = r;
        return 0;
}
