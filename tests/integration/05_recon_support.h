/* 05_recon_support.h: helpers shared by the reconciler's integration tests
 * (tests/integration/05NN_*.c). Header-only (static functions) so each test stays one
 * executable. Every run has its own prefix, database, topic (2 partitions) and group
 * (sk_test_conf); the binaries under test are run as children from $SK_BIN with the
 * test's configuration in SECKILL_* variables, and a delivery timeout of 500 ms so
 * `--grace-seconds 1` passes the reconciler's validation (grace >= 2 x timeout). */
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/outcome.h"
#include "sk/rebuild.h"
#include "sk/redis.h"
#include "sk/scripts.h"
#include "sk/verify.h"

#define RT_PARTITIONS 2
#define RT_DELIVERY_TIMEOUT_MS 500

static sk_conf_t rt_conf;
static sk_db_t *rt_db;
static sk_redis_t *rt_r;

/* ---- set-up ---- */

static __attribute__((unused)) void rt_setup(const char *name)
{
        char errstr[512] = "";
        sk_err_t err;

        sk_test_conf(&rt_conf, name);
        rt_conf.kafka_delivery_timeout_ms = RT_DELIVERY_TIMEOUT_MS;
        rt_conf.topic_partitions = RT_PARTITIONS;
        sk_db_library_init();
        sk_test_migrate(&rt_conf);
        err = sk_kafka_ensure_topics(&rt_conf, 15000, errstr, sizeof(errstr));
        if (err != SK_OK) {
                fprintf(stderr, "ensure topics: %s\n", errstr);
                exit(2);
        }
        rt_db = sk_db_connect(&rt_conf.mysql, 0, 5, errstr, sizeof(errstr));
        rt_r = sk_redis_connect(&rt_conf.redis, 5000, errstr, sizeof(errstr));
        if (!rt_db || !rt_r) {
                fprintf(stderr, "connect: %s\n", errstr);
                exit(2);
        }
}

static __attribute__((unused)) void rt_teardown(void)
{
        sk_redis_close(rt_r);
        sk_db_close(rt_db);
        rt_r = NULL;
        rt_db = NULL;
        if (!getenv("SK_TEST_KEEP"))
                sk_test_cleanup(&rt_conf);
}

/* The child's environment: the test's configuration. */
static __attribute__((unused)) void rt_child_env(void)
{
        char num[32];

        setenv("SECKILL_REDIS_URL", rt_conf.redis_url, 1);
        setenv("SECKILL_MYSQL_URL", rt_conf.mysql_url, 1);
        setenv("SECKILL_KAFKA_BROKERS", rt_conf.kafka_brokers, 1);
        setenv("SECKILL_TOPIC", rt_conf.topic, 1);
        setenv("SECKILL_GROUP_ID", rt_conf.group_id, 1);
        setenv("SECKILL_REDIS_PREFIX", rt_conf.redis_prefix, 1);
        snprintf(num, sizeof(num), "%d", RT_PARTITIONS);
        setenv("SECKILL_TOPIC_PARTITIONS", num, 1);
        snprintf(num, sizeof(num), "%d", RT_DELIVERY_TIMEOUT_MS);
        setenv("SECKILL_KAFKA_DELIVERY_TIMEOUT_MS", num, 1);
        setenv("SECKILL_METRICS_ADDR", "off", 1);
        snprintf(num, sizeof(num), "%d", rt_conf.reconcile_window_hours);
        setenv("SECKILL_RECONCILE_WINDOW_HOURS", num, 1);
}

static __attribute__((unused)) const char *rt_bin_dir(void)
{
        const char *d = getenv("SK_BIN");
        return d && *d ? d : "build/bin";
}

/* ---- children ---- */

/* Start $SK_BIN/<bin> with @p args (NULL-terminated, without argv[0]); stdout to a
 * pipe (*out_fd, may be NULL: then to stderr), stderr inherited. @p failpoints may be
 * NULL. */
static __attribute__((unused)) pid_t rt_spawn(const char *bin, const char *const *args, int *out_fd, const char *failpoints)
{
        char path[1024];
        const char *argv[32];
        int fds[2] = { -1, -1 };
        pid_t pid;
        int n = 0;

        snprintf(path, sizeof(path), "%s/%s", rt_bin_dir(), bin);
        argv[n++] = path;
        while (args && args[n - 1] && n < 31) {
                argv[n] = args[n - 1];
                n++;
        }
        argv[n] = NULL;
        if (out_fd && pipe(fds) != 0)
                ck_abort_msg("pipe: %s", strerror(errno));
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
                rt_child_env();
                if (failpoints)
                        setenv("SECKILL_FAILPOINTS", failpoints, 1);
                else
                        unsetenv("SECKILL_FAILPOINTS");
                if (out_fd) {
                        dup2(fds[1], 1);
                        close(fds[0]);
                        close(fds[1]);
                } else {
                        dup2(2, 1);
                }
                execv(path, (char *const *)argv);
                fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
                _exit(127);
        }
        if (out_fd) {
                close(fds[1]);
                *out_fd = fds[0];
        }
        return pid;
}

/* Wait for @p pid up to @p timeout_s (then SIGKILL); returns its exit status, or
 * 128 + signal. */
static __attribute__((unused)) int rt_wait(pid_t pid, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        int status = 0;

        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                if (w == pid)
                        break;
                if (sk_mono_ms() > deadline) {
                        kill(pid, SIGKILL);
                        waitpid(pid, &status, 0);
                        break;
                }
                sk_sleep_ms(50, NULL);
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Read all of @p fd into @p buf (NUL-terminated) until EOF or @p timeout_s. */
static __attribute__((unused)) void rt_read_all(int fd, char *buf, size_t size, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        size_t len = 0;

        for (;;) {
                struct pollfd pfd = { fd, POLLIN, 0 };
                int left = (int)(deadline - sk_mono_ms());
                ssize_t got;
                if (left <= 0)
                        break;
                if (poll(&pfd, 1, left) <= 0)
                        continue;
                got = read(fd, buf + len, size - 1 - len > 0 ? size - 1 - len : 0);
                if (got <= 0) {
                        if (got == 0 || size - 1 - len == 0)
                                break;
                        if (errno == EINTR)
                                continue;
                        break;
                }
                len += (size_t)got;
        }
        buf[len] = '\0';
        close(fd);
}

/* Run seckill-reconciler with @p args; its stdout in @p out. Returns the exit status. */
static __attribute__((unused)) int rt_reconcile(const char *const *args, const char *failpoints, char *out, size_t size)
{
        int fd = -1;
        pid_t pid = rt_spawn("seckill-reconciler", args, &fd, failpoints);
        int rc;

        rt_read_all(fd, out, size, 240);
        rc = rt_wait(pid, 10);
        fprintf(stderr, "---- reconciler %s exit %d:\n%s", args && args[0] ? args[0] : "", rc, out);
        return rc;
}

static __attribute__((unused)) pid_t rt_consumer_start(void)
{
        static const char *const args[] = { "-X", "session.timeout.ms=6000",
                                            "-X", "heartbeat.interval.ms=500", NULL };
        return rt_spawn("seckill-consumer", args, NULL, NULL);
}

static __attribute__((unused)) void rt_consumer_stop(pid_t pid)
{
        if (pid <= 0)
                return;
        kill(pid, SIGTERM);
        (void)rt_wait(pid, 30);
}

/* ---- data ---- */

/* A voucher on sale for the next hour with @p stock units, preheated into Redis. */
static __attribute__((unused)) int64_t rt_voucher(int64_t stock)
{
        char sql[512], errstr[512] = "";
        sk_rebuild_report_t rep;
        int64_t vid = sk_test_rand_id();
        sk_err_t err;

        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time,"
                 " end_time, status) VALUES (%" PRId64 ", %" PRId64 ","
                 " UTC_TIMESTAMP(3) - INTERVAL 1 HOUR, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, 1)",
                 vid, stock);
        err = sk_db_exec(rt_db, sql, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "insert voucher: %s", errstr);
        err = sk_db_exec(rt_db, "INSERT IGNORE INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)"
                 " SELECT voucher_id, 0, init_stock, init_stock FROM tb_seckill_voucher", errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "insert bucket row: %s", errstr);
        err = sk_voucher_preheat(&rt_conf, vid, 5000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);
        /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
        for (int kind = 0; kind < 2; kind++) {
                char k[SK_KEY_MAX];
                redisReply *reply = NULL;
                sk_key_voucher(k, rt_conf.redis_prefix, vid, 0, kind ? SK_KEY_TRACE : SK_KEY_USERS);
                ck_assert_int_eq(sk_redis_cmdf(rt_r, &reply, errstr, sizeof(errstr), "HSET %s _ _",
                                               k), SK_OK);
                freeReplyObject(reply);
        }
        return vid;
}

/* deduct.lua for a new purchase of @p user; returns the trace id; *order (may be
 * NULL) receives the order id; @p msg_json (may be NULL, SK_MSG_MAX) the message. */
static __attribute__((unused)) int64_t rt_deduct(int64_t vid, int64_t user, int64_t *order, char *msg_json)
{
        char k[4][SK_KEY_MAX], tid[SK_ID_STRLEN], oid[SK_ID_STRLEN], uid[SK_ID_STRLEN];
        char vs[SK_ID_STRLEN], extra[32], errstr[512] = "";
        const char *keys[4] = { k[0], k[1], k[2], k[3] };
        const char *args[6] = { tid, oid, uid, vs, "1", extra };
        int64_t trace = sk_test_rand_id(), ord = sk_test_rand_id();
        redisReply *reply = NULL;
        sk_err_t err;

        sk_key_voucher(k[0], rt_conf.redis_prefix, vid, 0, SK_KEY_META);
        sk_key_voucher(k[1], rt_conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        sk_key_voucher(k[2], rt_conf.redis_prefix, vid, 0, SK_KEY_USERS);
        sk_key_voucher(k[3], rt_conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_id_format(trace, tid);
        sk_id_format(ord, oid);
        sk_id_format(user, uid);
        sk_id_format(vid, vs);
        snprintf(extra, sizeof(extra), "%" PRId64, sk_expire_extra_ms(rt_conf.reconcile_window_hours));
        err = sk_redis_evalsha(rt_r, SK_SCRIPT_DEDUCT, 4, keys, 6, args, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "deduct: %s", errstr);
        ck_assert_msg(reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
                      strcmp(reply->element[0]->str, "OK") == 0, "deduct not admitted");
        if (msg_json)
                snprintf(msg_json, SK_MSG_MAX, "%s", reply->element[1]->str);
        freeReplyObject(reply);
        if (order)
                *order = ord;
        return trace;
}

static __attribute__((unused)) void rt_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        int *left = rd_kafka_opaque(rk);
        (void)opaque;
        ck_assert_msg(rkm->err == 0, "delivery: %s", rd_kafka_err2str(rkm->err));
        (*left)--;
}

/* Publish @p n messages (as the front would: key = voucher id) and wait for them. */
static __attribute__((unused)) void rt_publish(int64_t vid, char **msgs, size_t n)
{
        char errstr[512] = "", key[SK_ID_STRLEN];
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&rt_conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr));
        rd_kafka_t *rk;
        int left = (int)n;
        size_t i;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        /* This producer stands in for a front whose publish succeeded; its own delivery is
         * not under test. rt_conf's 500 ms delivery timeout (the reconciler's waits) timed
         * the first message to a new topic out on a loaded CI host ("Local: Message timed
         * out" in 0501/0504/0506 on the topology pass), so it gets the poll loop's 30 s. */
        ck_assert_int_eq(rd_kafka_conf_set(kconf, "message.timeout.ms", "30000", errstr, sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        rd_kafka_conf_set_dr_msg_cb(kconf, rt_on_delivery);
        rd_kafka_conf_set_opaque(kconf, &left);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        sk_id_format(vid, key);
        for (i = 0; i < n; i++) {
                rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(rt_conf.topic),
                        RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(msgs[i], strlen(msgs[i])),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                ck_assert_msg(e == 0, "produce: %s", rd_kafka_err2str(e));
        }
        for (i = 0; i < 300 && left > 0; i++)
                rd_kafka_poll(rk, 100 /* ms */);
        ck_assert_int_eq(left, 0);
        rd_kafka_destroy(rk);
}

static __attribute__((unused)) int64_t rt_q(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static __attribute__((unused)) int64_t rt_q(const char *fmt, ...)
{
        char sql[1024], errstr[512] = "";
        va_list ap;
        int64_t v = -1;
        sk_err_t err;

        va_start(ap, fmt);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        va_end(ap);
        err = sk_db_query_i64(rt_db, sql, &v, NULL, errstr, sizeof(errstr));
        if (err == SK_ENOTFOUND)
                return -1;
        ck_assert_msg(err == SK_OK, "%s: %s", sql, errstr);
        return v;
}

/* Outcome of @p trace: 0 none, 1 CREATED, 2 FAILED. */
static __attribute__((unused)) int rt_outcome(int64_t trace)
{
        int64_t v = rt_q("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64, trace);
        return v < 0 ? 0 : (int)v;
}

/* Wait up to @p timeout_s for an outcome of @p trace. */
static __attribute__((unused)) int rt_wait_outcome(int64_t trace, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        int o;

        while ((o = rt_outcome(trace)) == 0 && sk_mono_ms() < deadline)
                sk_sleep_ms(200, NULL);
        return o;
}

static __attribute__((unused)) int rt_hexists(int64_t vid, sk_key_kind_t kind, const char *field)
{
        char key[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int v;

        sk_key_voucher(key, rt_conf.redis_prefix, vid, 0, kind);
        ck_assert_int_eq(sk_redis_cmdf(rt_r, &reply, errstr, sizeof(errstr), "HEXISTS %s %s", key,
                                       field), SK_OK);
        v = (int)reply->integer;
        freeReplyObject(reply);
        return v;
}

static __attribute__((unused)) int rt_has_fence(int64_t vid, int64_t trace)
{
        char f[SK_KEY_MAX];
        sk_field_trace(f, trace, 'r');
        return rt_hexists(vid, SK_KEY_TRACE, f);
}

static __attribute__((unused)) int rt_has_user(int64_t vid, int64_t user)
{
        char f[SK_ID_STRLEN];
        sk_id_format(user, f);
        return rt_hexists(vid, SK_KEY_USERS, f);
}

static __attribute__((unused)) int64_t rt_redis_stock(int64_t vid)
{
        char key[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int64_t v = -1;

        sk_key_voucher(key, rt_conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        ck_assert_int_eq(sk_redis_cmdf(rt_r, &reply, errstr, sizeof(errstr), "GET %s", key), SK_OK);
        if (reply->type == REDIS_REPLY_STRING)
                v = strtoll(reply->str, NULL, 10);
        freeReplyObject(reply);
        return v;
}

/* Value of "key":N in the reconciler's --json output for voucher @p vid (first match
 * after its voucherId), or -1. */
static __attribute__((unused)) int64_t rt_json_field(const char *out, int64_t vid, const char *key)
{
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\"voucherId\":\"%" PRId64 "\"", vid);
        if (!(p = strstr(out, pat)))
                return -1;
        snprintf(pat, sizeof(pat), "\"%s\":", key);
        if (!(p = strstr(p, pat)))
                return -1;
        p += strlen(pat);
        if (strncmp(p, "true", 4) == 0)
                return 1;
        if (strncmp(p, "false", 5) == 0)
                return 0;
        return strtoll(p, NULL, 10);
}

/* sk_msg_parse of a DEDUCT entry the test wrote (asserted valid). */
static __attribute__((unused)) void rt_parse_msg(const char *json, sk_order_msg_t *msg)
{
        char errstr[256] = "";
        ck_assert_msg(sk_msg_parse(json, strlen(json), msg, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
}

/* The reconciler's run lock name (main.c) and the name GET_LOCK really gets
 * (sk_db_lock maps names over 64 chars; db.h). */
static __attribute__((unused)) void rt_lock_name(char *buf, size_t size)
{
        snprintf(buf, size, "seckill:reconcile:%s:%s", rt_conf.mysql.database, rt_conf.redis_prefix);
}

static __attribute__((unused)) void rt_lock_name_fitted(char *out, size_t size)
{
        char name[256];
        size_t len, i;
        uint64_t h = UINT64_C(14695981039346656037);

        rt_lock_name(name, sizeof(name));
        len = strlen(name);
        if (len <= 64) {
                snprintf(out, size, "%s", name);
                return;
        }
        for (i = 0; i < len; i++) {
                h ^= (unsigned char)name[i];
                h *= UINT64_C(1099511628211);
        }
        snprintf(out, size, "%.47s:%016" PRIx64, name, h);
}
