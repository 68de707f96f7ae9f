/* 0499_front_util.h: helpers for the seckill-front integration tests (04NN_*.c):
 * spawn ${SK_BIN}/seckill-front as a child with this run's unique SECKILL_* names and
 * a free port, a tiny raw-socket HTTP/1.1 client (libcurl is not a dependency), Redis
 * and DB seeding of a voucher (meta + stock in Redis, the row in tb_seckill_voucher),
 * and a snapshot of every key under the run's prefix (DUMP) to prove "no Redis write".
 * Header-only (static functions): each test binary is one .c file. */
#pragma once
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <mysql.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/redis.h"

#define FT_BODY_MAX 65536

/* Fronts spawned by this test binary, so a teardown can kill those a failed check left
 * running (CK_FORK=no: a failed assertion skips the test's own ft_stop). */
static pid_t ft_children[64];
static int ft_nchildren;

static __attribute__((unused)) void ft_child_forget(pid_t pid)
{
        int i;

        for (i = 0; i < ft_nchildren; i++)
                if (ft_children[i] == pid) {
                        ft_children[i] = ft_children[--ft_nchildren];
                        return;
                }
}

/* SIGKILL every spawned front that is still our unreaped child (waitpid says so: a pid
 * already reaped elsewhere is never signalled, even if the number was reused). */
static __attribute__((unused)) void ft_reap_all(void)
{
        while (ft_nchildren > 0) {
                pid_t pid = ft_children[--ft_nchildren];
                pid_t w = waitpid(pid, NULL, WNOHANG);

                if (w == 0) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                }
        }
}

static __attribute__((unused)) int ft_free_port(void)
{
        struct sockaddr_in sin;
        socklen_t len = sizeof(sin);
        int fd = socket(AF_INET, SOCK_STREAM, 0), port;

        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
        port = ntohs(sin.sin_port);
        close(fd);
        return port;
}

/* Start seckill-front for @p conf on @p port; @p extra_env: NULL-terminated "K=V" list
 * (may be NULL). stderr goes to @p log_path. @returns the child's pid. */
static __attribute__((unused)) pid_t ft_spawn(const sk_conf_t *conf, int port, const char *const *extra_env,
                      const char *log_path)
{
        const char *bin = getenv("SK_BIN");
        char path[1024];
        pid_t pid;

        ck_assert_msg(bin != NULL, "SK_BIN not set");
        snprintf(path, sizeof(path), "%s/seckill-front", bin);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char v[600];
                int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);

                if (fd >= 0) {
                        dup2(fd, 2);
                        dup2(fd, 1);
                        close(fd);
                }
                snprintf(v, sizeof(v), "127.0.0.1:%d", port);
                setenv("SECKILL_HTTP_ADDR", v, 1);
                setenv("SECKILL_REDIS_PREFIX", conf->redis_prefix, 1);
                setenv("SECKILL_TOPIC", conf->topic, 1);
                setenv("SECKILL_MYSQL_URL", conf->mysql_url, 1);
                setenv("SECKILL_GROUP_ID", conf->group_id, 1);
                setenv("SECKILL_TOPIC_PARTITIONS", "2", 1);
                setenv("SECKILL_WORKER_LEASE_MS", "900", 1);
                setenv("SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", "3000", 1);
                setenv("SECKILL_LOG_LEVEL", "info", 1);
                unsetenv("SECKILL_WORKER_ID");
                unsetenv("SECKILL_FAILPOINTS");
                for (; extra_env && *extra_env; extra_env++) {
                        const char *eq = strchr(*extra_env, '=');
                        char k[128];

                        if (!eq || (size_t)(eq - *extra_env) >= sizeof(k))
                                continue;
                        memcpy(k, *extra_env, (size_t)(eq - *extra_env));
                        k[eq - *extra_env] = '\0';
                        setenv(k, eq + 1, 1);
                }
                execl(path, path, (char *)NULL);
                _exit(127);
        }
        if (ft_nchildren < (int)(sizeof(ft_children) / sizeof(ft_children[0])))
                ft_children[ft_nchildren++] = pid;
        return pid;
}

/* One HTTP/1.1 request on a fresh connection (Connection: close). @p user: X-User-Id
 * value or NULL (header left out). @p extra: more raw header lines ("K: V\r\n") or NULL.
 * @returns the status code (body in @p body, NUL-terminated), or -1 on socket error. */
static __attribute__((unused)) int ft_http(int port, const char *method, const char *path, const char *user,
                   const char *extra, char *body, size_t body_cap)
{
        struct sockaddr_in sin;
        struct timeval tv = { 30, 0 };
        size_t req_cap = strlen(method) + strlen(path) + (user ? strlen(user) : 0) +
                         (extra ? strlen(extra) : 0) + 256;
        char *req = malloc(req_cap);
        char *buf = malloc(FT_BODY_MAX);
        size_t got = 0;
        int fd, n, status = -1;
        char *sep;

        if (!buf || !req) {
                free(buf);
                free(req);
                return -1;
        }
        if (body && body_cap)
                body[0] = '\0';
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) {
                free(buf);
                free(req);
                return -1;
        }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_port = htons((uint16_t)port);
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
                goto done;
        n = snprintf(req, req_cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "%s%s%s%s\r\n", method, path, user ? "X-User-Id: " : "", user ? user : "",
                     user ? "\r\n" : "", extra ? extra : "");
        if (write(fd, req, (size_t)n) != n)
                goto done;
        while (got + 1 < FT_BODY_MAX) {
                ssize_t r = read(fd, buf + got, FT_BODY_MAX - 1 - got);

                if (r <= 0)
                        break;
                got += (size_t)r;
        }
        buf[got] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
                status = -1;
        if (body && (sep = strstr(buf, "\r\n\r\n")) != NULL)
                snprintf(body, body_cap, "%s", sep + 4);
done:
        close(fd);
        free(buf);
        free(req);
        return status;
}

/* Wait until /readyz answers 200 (or the child exits). @returns 0 or -1. */
static __attribute__((unused)) int ft_wait_ready(int port, pid_t pid, int timeout_s)
{
        int64_t until = sk_mono_ms() + timeout_s * 1000LL;
        char body[1024];

        while (sk_mono_ms() < until) {
                int st;

                if (ft_http(port, "GET", "/readyz", NULL, NULL, body, sizeof(body)) == 200)
                        return 0;
                if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid)
                        return -1;
                usleep(100 * 1000);
        }
        return -1;
}

/* SIGTERM and wait up to @p timeout_s. @returns the exit status, 128+sig if killed by a
 * signal, or -1 on timeout (then SIGKILLed). */
static __attribute__((unused)) int ft_stop(pid_t pid, int timeout_s)
{
        int64_t until = sk_mono_ms() + timeout_s * 1000LL;
        int st;

        kill(pid, SIGTERM);
        while (sk_mono_ms() < until) {
                if (waitpid(pid, &st, WNOHANG) == pid) {
                        ft_child_forget(pid);
                        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                }
                usleep(50 * 1000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        ft_child_forget(pid);
        return -1;
}

/* The test's own Redis connection, through sk_redis so it follows every topology of
 * SECKILL_REDIS_URL (DESIGN.md 4b); sk_redis_close() it. */
static __attribute__((unused)) sk_redis_t *ft_redis(const sk_conf_t *conf)
{
        return sk_test_redis(conf);
}

/* GET as a long long; LLONG_MIN when the key is missing. */
static __attribute__((unused)) long long ft_get_ll(sk_redis_t *rc, const char *key)
{
        redisReply *r = sk_test_cmd(rc, "GET %s", key);
        long long v = LLONG_MIN;

        ck_assert(r != NULL);
        if (r->type == REDIS_REPLY_STRING)
                v = strtoll(r->str, NULL, 10);
        freeReplyObject(r);
        return v;
}

static __attribute__((unused)) long long ft_stock(const sk_conf_t *conf, sk_redis_t *rc, int64_t vid)
{
        char k[SK_KEY_MAX];

        sk_key_voucher(k, conf->redis_prefix, vid, 0, SK_KEY_STOCK);
        return ft_get_ll(rc, k);
}

/* HGET as a malloc'd string or NULL. */
static __attribute__((unused)) char *ft_hget(sk_redis_t *rc, const char *key, const char *field)
{
        redisReply *r = sk_test_cmd(rc, "HGET %s %s", key, field);
        char *s = NULL;

        ck_assert(r != NULL);
        if (r->type == REDIS_REPLY_STRING)
                s = strndup(r->str, r->len);
        freeReplyObject(r);
        return s;
}

static __attribute__((unused)) void ft_db_exec(const sk_conf_t *conf, const char *sql)
{
        MYSQL *my = mysql_init(NULL);

        ck_assert(my != NULL);
        ck_assert_msg(mysql_real_connect(my, conf->mysql.host, conf->mysql.user,
                                         conf->mysql.password[0] ? conf->mysql.password : NULL,
                                         conf->mysql.database, (unsigned)conf->mysql.port, NULL, 0),
                      "mysql connect: %s", mysql_error(my));
        ck_assert_msg(mysql_query(my, sql) == 0, "%s: %s", sql, mysql_error(my));
        mysql_close(my);
}

/* Seed voucher @p vid: Redis meta (begin/end ms, status) and stock, and with both the
 * users and trace hashes holding the placeholder `_` (as preheat writes them); with
 * @p db_status > 0 also the tb_seckill_voucher row. @p stock < 0: no stock key. @p status
 * 0: no meta. */
static __attribute__((unused)) void ft_seed(const sk_conf_t *conf, sk_redis_t *rc, int64_t vid, long long stock,
                    int64_t begin_ms, int64_t end_ms, int status, int db_status)
{
        char k[SK_KEY_MAX], sql[512];
        redisReply *r;

        if (status > 0) {
                sk_key_voucher(k, conf->redis_prefix, vid, 0, SK_KEY_META);
                r = sk_test_cmd(rc, "HSET %s begin_ms %lld end_ms %lld status %d", k,
                                 (long long)begin_ms, (long long)end_ms, status);
                ck_assert(r && r->type == REDIS_REPLY_INTEGER);
                freeReplyObject(r);
        }
        if (stock >= 0) {
                sk_key_voucher(k, conf->redis_prefix, vid, 0, SK_KEY_STOCK);
                r = sk_test_cmd(rc, "SET %s %lld", k, stock);
                ck_assert(r && r->type == REDIS_REPLY_STATUS);
                freeReplyObject(r);
        }
        if (status > 0 && stock >= 0) {
                /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
                sk_key_voucher(k, conf->redis_prefix, vid, 0, SK_KEY_USERS);
                r = sk_test_cmd(rc, "HSET %s _ _", k);
                ck_assert(r && r->type == REDIS_REPLY_INTEGER);
                freeReplyObject(r);
                sk_key_voucher(k, conf->redis_prefix, vid, 0, SK_KEY_TRACE);
                r = sk_test_cmd(rc, "HSET %s _ _", k);
                ck_assert(r && r->type == REDIS_REPLY_INTEGER);
                freeReplyObject(r);
        }
        if (db_status > 0) {
                snprintf(sql, sizeof(sql),
                         "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time, "
                         "end_time, status) VALUES (%" PRId64 ", %lld, FROM_UNIXTIME(%lld), "
                         "FROM_UNIXTIME(%lld), %d)",
                         vid, stock < 0 ? 0 : stock,
                         (long long)(begin_ms / 1000), (long long)(end_ms / 1000), db_status);
                ft_db_exec(conf, sql);
                ft_db_exec(conf, "INSERT IGNORE INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)"
                 " SELECT voucher_id, 0, init_stock, init_stock FROM tb_seckill_voucher");
        }
}

/* Every voucher key under the prefix with its DUMP, sorted, as one string (malloc'd): equal
 * snapshots mean no Redis write happened under the prefix. */
static __attribute__((unused)) int ft_cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One key of the snapshot walk: "key|ttl-flag|hex(DUMP)" appended to the list. */
typedef struct { sk_redis_t *rc; char **items; size_t n, cap, total; } ft_snap_t;

static __attribute__((unused)) int ft_snap_key(const char *key, size_t keylen, void *arg)
{
        ft_snap_t *sn = arg;
        char name[SK_KEY_MAX + 64];
        redisReply *d, *t;
        size_t len, o, j;
        char *s;

        snprintf(name, sizeof(name), "%.*s", (int)keylen, key);
        d = sk_test_cmd(sn->rc, "DUMP %s", name);
        t = sk_test_cmd(sn->rc, "PTTL %s", name);
        ck_assert(d && t);
        len = strlen(name) + (d->type == REDIS_REPLY_STRING ? d->len * 2 : 0) + 64;
        s = malloc(len);
        ck_assert(s != NULL);
        o = (size_t)snprintf(s, len, "%s|%lld|", name, t->integer > 0 ? 1LL : t->integer);
        for (j = 0; d->type == REDIS_REPLY_STRING && j < d->len; j++)
                o += (size_t)snprintf(s + o, len - o, "%02x", (unsigned char)d->str[j]);
        for (j = 0; j < sn->n; j++)     /* SCAN may report a key twice */
                if (strcmp(sn->items[j], s) == 0)
                        break;
        if (j < sn->n) {
                free(s);
        } else {
                if (sn->n == sn->cap) {
                        sn->cap = sn->cap ? sn->cap * 2 : 64;
                        sn->items = realloc(sn->items, sn->cap * sizeof(*sn->items));
                        ck_assert(sn->items != NULL);
                }
                sn->items[sn->n++] = s;
                sn->total += strlen(s) + 1;
        }
        freeReplyObject(d);
        freeReplyObject(t);
        return 0;
}

static __attribute__((unused)) char *ft_snapshot(const sk_conf_t *conf, sk_redis_t *rc)
{
        ft_snap_t sn = { rc, NULL, 0, 0, 1 };
        char match[96], errstr[256];
        char *out;
        size_t i;

        /* Voucher keys only: the worker lease keys (<prefix>:worker:*) are renewed by the
         * front itself all the time. Every master of a Cluster is walked. */
        snprintf(match, sizeof(match), "%s:{v:*", conf->redis_prefix);
        ck_assert_msg(sk_redis_scan(rc, match, 1000, ft_snap_key, &sn, errstr, sizeof(errstr)) == SK_OK,
                      "scan %s: %s", match, errstr);
        if (sn.n)
                qsort(sn.items, sn.n, sizeof(*sn.items), ft_cmp_str);
        out = malloc(sn.total);
        ck_assert(out != NULL);
        out[0] = '\0';
        for (i = 0; i < sn.n; i++) {
                strcat(out, sn.items[i]);
                strcat(out, "\n");
                free(sn.items[i]);
        }
        free(sn.items);
        return out;
}

/* A JSON member as text: strings as is, numbers printed. @returns 0 or -1. */
static __attribute__((unused)) int ft_json_field(const char *json, const char *name, char *out, size_t out_size)
{
        cJSON *j = cJSON_Parse(json);
        const cJSON *it = j ? cJSON_GetObjectItemCaseSensitive(j, name) : NULL;
        int rc = -1;

        if (cJSON_IsString(it)) {
                snprintf(out, out_size, "%s", it->valuestring);
                rc = 0;
        } else if (cJSON_IsNumber(it)) {
                snprintf(out, out_size, "%.0f", it->valuedouble);
                rc = 0;
        } else if (cJSON_IsNull(it)) {
                snprintf(out, out_size, "null");
                rc = 0;
        }
        cJSON_Delete(j);
        return rc;
}

/* POST /api/v1/vouchers/@p vid/seckill as @p user (NULL: no X-User-Id) on the front
 * at 127.0.0.1:@p port; the body into @p body (@p cap bytes). @returns the HTTP status. */
static __attribute__((unused)) int ft_buy_once(int port, int64_t vid, const char *user, char *body,
                                               size_t cap)
{
        char path[128], v[SK_ID_STRLEN];

        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        return ft_http(port, "POST", path, user, NULL, body, cap);
}

/* The JSON answer's "code" (a status code, not an id), or -1 if it has none. */
static __attribute__((unused)) int ft_body_code(const char *body)
{
        char c[32];

        if (ft_json_field(body, "code", c, sizeof(c)) != 0)
                return -1;
        return atoi(c);
}

/* Stop the private redis-server *@p pid (ft_private_redis): SIGCONT (it may be frozen),
 * SIGTERM, reap; then *@p pid = 0. No-op when *@p pid <= 0. */
static __attribute__((unused)) void ft_private_redis_stop(pid_t *pid)
{
        if (*pid > 0) {
                kill(*pid, SIGCONT);
                kill(*pid, SIGTERM);
                waitpid(*pid, NULL, 0);
        }
        *pid = 0;
}

/* Start a PRIVATE redis-server on a free port (never the shared one: tests that need a
 * server configured differently, or one they may pause or kill), no persistence,
 * noeviction, plus @p extra_args (NULL-terminated, may be NULL; e.g. "--rename-command",
 * "DECRBY", "x"). Points @p conf's Redis at it. @returns the server's pid (the caller
 * SIGTERMs and reaps it). */
static __attribute__((unused)) pid_t ft_private_redis_on(sk_conf_t *conf, int port,
                                                          const char *const *extra_args);
static __attribute__((unused)) pid_t ft_private_redis(sk_conf_t *conf, const char *const *extra_args)
{
        return ft_private_redis_on(conf, 0, extra_args);
}

/* Same on @p port (0 = a free one): e.g. a restart, empty, on the port a killed one had. */
static __attribute__((unused)) pid_t ft_private_redis_on(sk_conf_t *conf, int port,
                                                          const char *const *extra_args)
{
        const char *argv[32];
        char port_s[16];
        int argc = 0, i;

        if (port == 0)
                port = ft_free_port();
        pid_t pid;

        snprintf(port_s, sizeof(port_s), "%d", port);
        argv[argc++] = "redis-server";
        argv[argc++] = "--port";
        argv[argc++] = port_s;
        argv[argc++] = "--bind";
        argv[argc++] = "127.0.0.1";
        argv[argc++] = "--save";
        argv[argc++] = "";
        argv[argc++] = "--appendonly";
        argv[argc++] = "no";
        argv[argc++] = "--maxmemory-policy";
        argv[argc++] = "noeviction";
        for (; extra_args && *extra_args && argc < 31; extra_args++)
                argv[argc++] = *extra_args;
        argv[argc] = NULL;
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);

                if (fd >= 0) {
                        dup2(fd, 1);
                        close(fd);
                }
                execvp("redis-server", (char *const *)argv);
                _exit(127);
        }
        /* The whole parsed URL, not only host and port: the suite may run with a
         * redis-cluster:// or redis-sentinel:// SECKILL_REDIS_URL (label cluster/sentinel),
         * whose kind and seeds would otherwise stay in conf->redis. */
        snprintf(conf->redis_url, sizeof(conf->redis_url), "redis://127.0.0.1:%d/0", port);
        {
                char err[256];

                ck_assert_msg(sk_redis_url_parse(conf->redis_url, &conf->redis, err,
                                                 sizeof(err)) == 0, "%s", err);
        }
        for (i = 0; i < 100; i++) {
                struct timeval tv = { 1, 0 };
                redisContext *rc = redisConnectWithTimeout("127.0.0.1", port, tv);
                int ok = rc && !rc->err;

                if (rc)
                        redisFree(rc);
                if (ok)
                        return pid;
                usleep(50 * 1000);
        }
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        ck_abort_msg("private redis-server did not start on %d", port);
        return -1;
}

/* The value of metric line @p name (exact name + labels, then a space) in @p text;
 * -1 when the line is missing. */
static __attribute__((unused)) long long ft_metric_value(const char *text, const char *name)
{
        size_t n = strlen(name);
        const char *p = text;

        while ((p = strstr(p, name)) != NULL) {
                if ((p == text || p[-1] == '\n') && p[n] == ' ')
                        return strtoll(p + n + 1, NULL, 10);
                p += n;
        }
        return -1;
}

/* GET /metrics on @p port and return metric line @p name's value (-1 if missing). */
static __attribute__((unused)) long long ft_scrape(int port, const char *name)
{
        char *body = malloc(FT_BODY_MAX);
        long long v;

        ck_assert(body != NULL);
        ck_assert_int_eq(ft_http(port, "GET", "/metrics", NULL, NULL, body, FT_BODY_MAX), 200);
        v = ft_metric_value(body, name);
        free(body);
        return v;
}
