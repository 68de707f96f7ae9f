/* db_writer.c: which node of SECKILL_MYSQL_URL's list a new connection goes to
 * (DESIGN.md 16; db_writer.h). The first node of the list that answers and is writable:
 * standalone @@read_only = 0; when @@wsrep_on = 1 also wsrep_ready = ON and
 * wsrep_local_state = 4 (Synced, never a Donor or Joiner). A process-wide cache holds,
 * per host list, the node found and when the list was last walked from its first node;
 * it is walked again about once a second, so a rejoined first node is used again within
 * about a second. A connection that found its node unresponsive may instead step to the
 * nodes after it (sk__db_writer_open_after) and record the node it found as the writer,
 * so the process's other connections do not walk back to a silent node. The SHOW
 * statements are the ones MariaDB and MySQL both accept. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sk/clock.h"
#include "sk/db_writer.h"

#define CACHE_SLOTS 16

typedef struct entry {
        uint64_t key;           /* hash of the host list; 0 = free slot */
        int writer;             /* index of the node last found writable, -1 = none yet */
        int64_t walked_ms;      /* sk_mono_ms of the last walk from the first node */
        char name[272];         /* "host:port" of writer */
} entry_t;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static entry_t cache[CACHE_SLOTS];
static unsigned cache_next;     /* the slot to reuse when all are taken */

/* FNV-1a over the hosts and ports (never 0). */
static uint64_t list_key(const sk_mysql_url_t *url)
{
        uint64_t h = 1469598103934665603ull;

        for (int i = 0; i < url->nhosts; i++) {
                for (const char *p = url->hosts[i].host; *p; p++)
                        h = (h ^ (unsigned char)*p) * 1099511628211ull;
                h = (h ^ (uint64_t)(unsigned)url->hosts[i].port) * 1099511628211ull;
                h = (h ^ 0xffu) * 1099511628211ull;
        }
        return h ? h : 1;
}

/* The cache entry of @p url (cache_mu held); created when @p create. */
static entry_t *entry_get(const sk_mysql_url_t *url, int create)
{
        uint64_t key = list_key(url);
        entry_t *e;

        for (int i = 0; i < CACHE_SLOTS; i++)
                if (cache[i].key == key)
                        return &cache[i];
        if (!create)
                return NULL;
        e = &cache[cache_next++ % CACHE_SLOTS];
        memset(e, 0, sizeof(*e));
        e->key = key;
        e->writer = -1;
        return e;
}

/* Records node @p i as the writer of @p url; @p walked: the list was walked now. */
static void entry_set(const sk_mysql_url_t *url, int i, int walked, int64_t now_ms)
{
        entry_t *e;

        pthread_mutex_lock(&cache_mu);
        e = entry_get(url, 1);
        if (i >= 0) {
                e->writer = i;
                const char *h = url->hosts[i].host;
                if (strchr(h, ':'))     /* an IPv6 literal */
                        snprintf(e->name, sizeof(e->name), "[%.255s]:%d", h, url->hosts[i].port);
                else
                        snprintf(e->name, sizeof(e->name), "%.255s:%d", h, url->hosts[i].port);
        }
        if (walked)
                e->walked_ms = now_ms;
        pthread_mutex_unlock(&cache_mu);
}

/* Appends "; " (not at the start) and a formatted piece to errstr. */
static void add_reason(char *errstr, size_t errstr_size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void add_reason(char *errstr, size_t errstr_size, const char *fmt, ...)
{
        size_t len;
        va_list ap;

        if (!errstr || errstr_size == 0)
                return;
        len = strnlen(errstr, errstr_size);
        if (len > 0 && len + 2 < errstr_size) {
                memcpy(errstr + len, "; ", 3);
                len += 2;
        }
        if (len + 1 >= errstr_size)
                return;
        va_start(ap, fmt);
        if (vsnprintf(errstr + len, errstr_size - len, fmt, ap) < 0)
                errstr[len] = '\0';
        va_end(ap);
}

/* Reads the (name, value) rows of @p sql: the value of @p names[k] into vals[k] ("" when
 * absent). @returns 0, or -1 with the reason in why. */
static int read_pairs(MYSQL *conn, const char *sql, const char *const *names, int nnames,
                      char vals[][16], char *why, size_t why_size)
{
        MYSQL_RES *res;
        MYSQL_ROW row;

        for (int k = 0; k < nnames; k++)
                vals[k][0] = '\0';
        if (mysql_real_query(conn, sql, (unsigned long)strlen(sql)) != 0 ||
            !(res = mysql_store_result(conn))) {
                sk_seterr(why, why_size, "writer check: mysql error %u: %s", mysql_errno(conn),
                          mysql_error(conn));
                return -1;
        }
        while ((row = mysql_fetch_row(res)) != NULL) {
                if (mysql_num_fields(res) < 2 || !row[0] || !row[1])
                        continue;
                for (int k = 0; k < nnames; k++)
                        if (strcasecmp(row[0], names[k]) == 0)
                                snprintf(vals[k], sizeof(vals[k]), "%s", row[1]);
        }
        mysql_free_result(res);
        return 0;
}

/* 1 if the node behind @p conn takes writes now, *wsrep_on = its @@wsrep_on (1 ON, 0 OFF
 * or absent); 0 not now (why says what); -1 the check failed (why); -2 never under this
 * URL (mysql-galera:// and no wsrep). */
static int node_writable(MYSQL *conn, int galera_only, int *wsrep_on, char *why, size_t why_size)
{
        static const char *const vars[] = { "read_only", "wsrep_on" };
        static const char *const stats[] = { "wsrep_ready", "wsrep_local_state" };
        char v[2][16], s[2][16];

        if (read_pairs(conn, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'wsrep_on')",
                       vars, 2, v, why, why_size) != 0)
                return -1;
        if (strcasecmp(v[0], "OFF") != 0 && strcmp(v[0], "0") != 0) {
                sk_seterr(why, why_size, "not writable: @@read_only = %s", v[0][0] ? v[0] : "?");
                return 0;
        }
        *wsrep_on = strcasecmp(v[1], "ON") == 0 || strcmp(v[1], "1") == 0;
        if (!*wsrep_on) {
                if (galera_only) {
                        sk_seterr(why, why_size, "refused: mysql-galera:// and the server has no wsrep "
                                  "(@@wsrep_on = %s)", v[1][0] ? v[1] : "absent");
                        return -2;
                }
                return 1;
        }
        if (read_pairs(conn, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state')",
                       stats, 2, s, why, why_size) != 0)
                return -1;
        if (strcasecmp(s[0], "ON") != 0 || strcmp(s[1], "4") != 0) {
                sk_seterr(why, why_size, "not writable: wsrep_ready = %s, wsrep_local_state = %s "
                          "(4 = Synced)", s[0][0] ? s[0] : "?", s[1][0] ? s[1] : "?");
                return 0;
        }
        return 1;
}

/* Tries the nodes order[0..n-1] of @p url in turn; the first that answers and is
 * writable wins. @p cache: record the winner in the process-wide cache (@p walked: and
 * the time of a walk, @p now_ms). @returns the connection, or NULL with *all_permanent
 * (every node refused for good) and one "host:port: why" per node in errstr. */
static MYSQL *try_nodes(const sk_mysql_url_t *url, sk__db_connect_fn connect, void *arg,
                        const int *order, int n, int cache, int walked, int64_t now_ms, int *node,
                        int *wsrep_on, int *all_permanent, char *errstr, size_t errstr_size)
{
        char why[384];

        *all_permanent = 1;
        for (int k = 0; k < n; k++) {
                int i = order[k], w;
                sk_err_t cerr = SK_EAGAIN;
                MYSQL *conn = connect(arg, url, i, &cerr, why, sizeof(why));
                if (conn) {
                        w = node_writable(conn, url->galera_only, wsrep_on, why, sizeof(why));
                        if (w == 1) {
                                /* A walk from the first node (or a re-check) refreshes the time;
                                 * the cached writer answering does not. */
                                if (cache)
                                        entry_set(url, i, walked || k > 0, now_ms);
                                *node = i;
                                return conn;
                        }
                        mysql_close(conn);
                        cerr = w == -2 ? SK_EDB : SK_EAGAIN;
                }
                if (cerr != SK_EDB)
                        *all_permanent = 0;
                if (url->nhosts == 1)
                        add_reason(errstr, errstr_size, "%s", why);
                else
                        add_reason(errstr, errstr_size, "%s:%d: %s", url->hosts[i].host,
                                   url->hosts[i].port, why);
        }
        return NULL;
}

/* "no writable node among N: ..." around the per-node reasons of a multi-host list. */
static void wrap_reasons(const sk_mysql_url_t *url, char *errstr, size_t errstr_size)
{
        char tail[768];

        if (url->nhosts < 2)
                return;
        snprintf(tail, sizeof(tail), "%s", errstr ? errstr : "");
        sk_seterr(errstr, errstr_size, "no writable node among %d: %s", url->nhosts, tail);
}

/* The start of a writer open: errstr emptied, *err = SK_EAGAIN (what a walk that finds no
 * node reports). @returns 0 with *err = SK_EINVAL when @p url has no host (or more than
 * SK_MYSQL_MAX_HOSTS), 1 otherwise. */
static int open_begin(const sk_mysql_url_t *url, sk_err_t *err, char *errstr, size_t errstr_size)
{
        if (errstr && errstr_size)
                errstr[0] = '\0';
        *err = SK_EAGAIN;
        if (url->nhosts < 1 || url->nhosts > SK_MYSQL_MAX_HOSTS) {
                sk_seterr(errstr, errstr_size, "connect: no host in the URL");
                *err = SK_EINVAL;
                return 0;
        }
        return 1;
}

MYSQL *sk__db_writer_open(const sk_mysql_url_t *url, sk__db_connect_fn connect, void *arg,
                          int below, int *node, int *wsrep_on, sk_err_t *err, char *errstr,
                          size_t errstr_size)
{
        int order[SK_MYSQL_MAX_HOSTS], n = 0, start = -1, all_permanent = 1;
        int64_t now_ms = sk_mono_ms();
        MYSQL *conn;

        if (!open_begin(url, err, errstr, errstr_size))
                return NULL;
        if (below > 0) {
                for (int i = 0; i < below && i < url->nhosts; i++)
                        order[n++] = i;
        } else {
                entry_t *e;
                pthread_mutex_lock(&cache_mu);
                e = entry_get(url, 1);
                if (e->writer >= 0 && e->writer < url->nhosts &&
                    now_ms - e->walked_ms < SK__DB_WRITER_RECHECK_MS)
                        start = e->writer;
                pthread_mutex_unlock(&cache_mu);
                if (start >= 0)
                        order[n++] = start;
                for (int i = 0; i < url->nhosts; i++)
                        if (i != start)
                                order[n++] = i;
        }
        conn = try_nodes(url, connect, arg, order, n, 1, below > 0 || start < 0, now_ms, node,
                         wsrep_on, &all_permanent, errstr, errstr_size);
        if (conn)
                return conn;
        if (below > 0) {
                entry_set(url, -1, 1, now_ms);
                return NULL;
        }
        *err = all_permanent ? SK_EDB : SK_EAGAIN;
        wrap_reasons(url, errstr, errstr_size);
        return NULL;
}

MYSQL *sk__db_writer_open_after(const sk_mysql_url_t *url, sk__db_connect_fn connect, void *arg,
                                int after, int *node, int *wsrep_on, sk_err_t *err, char *errstr,
                                size_t errstr_size)
{
        int order[SK_MYSQL_MAX_HOSTS], n = 0, all_permanent = 1;
        MYSQL *conn;

        if (!open_begin(url, err, errstr, errstr_size))
                return NULL;
        if (after < 0 || after >= url->nhosts)
                after = url->nhosts - 1;   /* unknown: plain list order */
        for (int k = 1; k <= url->nhosts; k++)
                order[n++] = (after + k) % url->nhosts;
        /* The node found is the process's writer from now on (the one stepped from did
         * not answer): the other connections follow at their next transaction instead
         * of walking back to it; the once-a-second re-check returns them to an earlier
         * node that answers again. */
        conn = try_nodes(url, connect, arg, order, n, 1, 1, sk_mono_ms(), node, wsrep_on,
                         &all_permanent, errstr, errstr_size);
        if (conn)
                return conn;
        *err = all_permanent ? SK_EDB : SK_EAGAIN;
        wrap_reasons(url, errstr, errstr_size);
        return NULL;
}

sk__db_advice_t sk__db_writer_advice(const sk_mysql_url_t *url, int node)
{
        sk__db_advice_t a = SK__DB_STAY;
        int64_t now_ms;
        entry_t *e;

        if (url->nhosts < 2)
                return SK__DB_STAY;
        now_ms = sk_mono_ms();
        pthread_mutex_lock(&cache_mu);
        if ((e = entry_get(url, 0)) != NULL) {
                if (e->writer >= 0 && e->writer != node) {
                        a = SK__DB_MOVE;
                } else if (node > 0 && now_ms - e->walked_ms >= SK__DB_WRITER_RECHECK_MS) {
                        e->walked_ms = now_ms;  /* this thread re-checks; the others stay */
                        a = SK__DB_PROBE;
                }
        }
        pthread_mutex_unlock(&cache_mu);
        return a;
}

int sk_db_writer_name(const sk_mysql_url_t *url, char *buf, size_t buf_size)
{
        entry_t *e;
        int found = 0;

        if (!buf || buf_size == 0)
                return 0;
        buf[0] = '\0';
        if (!url)
                return 0;
        pthread_mutex_lock(&cache_mu);
        if ((e = entry_get(url, 0)) != NULL && e->writer >= 0) {
                snprintf(buf, buf_size, "%s", e->name);
                found = 1;
        }
        pthread_mutex_unlock(&cache_mu);
        return found;
}
