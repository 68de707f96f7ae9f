/* 0399_consumer_support.h: helpers for the seckill-consumer integration tests (03NN),
 * header-only (static functions; not a test itself). Real Kafka, MariaDB and Redis;
 * every run has its own database, topic, group and key prefix (sk_test_conf).
 *
 * What a test gets: a migrated database, the topic and its DLQ, a DB connection, a
 * Redis connection, an idempotent producer, voucher set-up in DB and Redis, admission
 * through the real deduct.lua (so DEDUCT trace entries exist), the consumer binary as a
 * child process (${SK_BIN}/seckill-consumer with SECKILL_* pointing at this run), bounded
 * waits on SQL figures, and a DLQ reader. Tests run without fork (CK_NOFORK) so the
 * handles here stay valid; every wait has a timeout in seconds. */
#pragma once
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <hiredis/hiredis.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/migrate.h"
#include "sk/msg.h"
#include "sk/outcome.h"
#include "sk/redis.h"
#include "sk/scripts.h"

#define CT_FN static __attribute__((unused))

typedef struct ct {
        sk_conf_t conf;
        sk_db_t *db;
        sk_redis_t *r;
        rd_kafka_t *prod;
        volatile int inflight;
        volatile int failed_deliveries;
        int64_t extra_ms;
} ct_t;

static ct_t CT;

CT_FN void ct_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        (void)rk;
        (void)opaque;
        if (rkm->err || rd_kafka_message_status(rkm) != RD_KAFKA_MSG_STATUS_PERSISTED)
                CT.failed_deliveries++;
        CT.inflight--;
}

CT_FN void ct_die(const char *what, const char *errstr)
{
        fprintf(stderr, "test setup failed: %s: %s\n", what, errstr);
        exit(2);
}

/* Everything a test needs, or exit 2. */
CT_FN void ct_setup(const char *name, int partitions)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf;

        sk_db_library_init();
        sk_test_conf(&CT.conf, name);
        if (partitions > 0)
                CT.conf.topic_partitions = partitions;
        if (sk_migrate(&CT.conf.mysql, NULL, errstr, sizeof(errstr)))
                ct_die("migrate", errstr);
        if (sk_kafka_ensure_topics(&CT.conf, 15000, errstr, sizeof(errstr)))
                ct_die("ensure topics", errstr);
        if (!(CT.db = sk_db_connect(&CT.conf.mysql, 0, 0, errstr, sizeof(errstr))))
                ct_die("db connect", errstr);
        if (!(CT.r = sk_redis_connect(&CT.conf.redis, 5000, errstr, sizeof(errstr))))
                ct_die("redis connect", errstr);
        if (!(kconf = sk_kafka_conf_new(&CT.conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr))))
                ct_die("producer conf", errstr);
        rd_kafka_conf_set_dr_msg_cb(kconf, ct_on_delivery);
        if (!(CT.prod = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr))))
                ct_die("producer", errstr);
        CT.extra_ms = sk_expire_extra_ms(CT.conf.reconcile_window_hours);
}

CT_FN void ct_teardown(void)
{
        if (CT.prod)
                rd_kafka_destroy(CT.prod);
        sk_db_close(CT.db);
        sk_redis_close(CT.r);
        if (!getenv("SK_TEST_KEEP"))
                sk_test_cleanup(&CT.conf);
}

/* ---------------------------------------------------------------- SQL */

CT_FN void ct_exec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
CT_FN void ct_exec(const char *fmt, ...)
{
        char sql[2048], errstr[512] = "";
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        va_end(ap);
        ck_assert_msg(sk_db_exec(CT.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s: %s", sql, errstr);
}

/* An integer from SQL; -1 for no row / NULL. */
CT_FN int64_t ct_i64(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
CT_FN int64_t ct_i64(const char *fmt, ...)
{
        char sql[2048], errstr[512] = "";
        int64_t v = -1;
        int is_null = 0;
        sk_err_t err;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        va_end(ap);
        err = sk_db_query_i64(CT.db, sql, &v, &is_null, errstr, sizeof(errstr));
        if (err == SK_ENOTFOUND || is_null)
                return -1;
        ck_assert_msg(err == SK_OK, "%s: %s", sql, errstr);
        return v;
}

/* Wait until SQL @p sql (an integer) equals @p want; @returns the last value. */
CT_FN int64_t ct_wait_i64(int timeout_s, int64_t want, const char *sql)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000, v;

        for (;;) {
                v = ct_i64("%s", sql);
                if (v == want || sk_mono_ms() > deadline)
                        return v;
                sk_sleep_ms(100, NULL);
        }
}

/* A second connection that holds a row lock on voucher @p vid (SELECT ... FOR UPDATE in
 * an open transaction) until ct_unlock(). */
CT_FN sk_db_t *ct_lock_voucher(int64_t vid)
{
        char errstr[512] = "", sql[256];
        sk_db_t *db = sk_db_connect(&CT.conf.mysql, 0, 0, errstr, sizeof(errstr));
        int64_t stock = 0;

        ck_assert_msg(db != NULL, "%s", errstr);
        ck_assert_int_eq(sk_db_begin(db, errstr, sizeof(errstr)), SK_OK);
        snprintf(sql, sizeof(sql), "SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64 " FOR UPDATE", vid);
        ck_assert_int_eq(sk_db_query_i64(db, sql, &stock, NULL, errstr, sizeof(errstr)), SK_OK);
        return db;
}

CT_FN void ct_unlock(sk_db_t *db)
{
        sk_db_rollback(db);
        sk_db_close(db);
}

/* ---------------------------------------------------------------- Redis */

CT_FN redisReply *ct_redis(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;

        va_start(ap, fmt);
        reply = sk_test_vcmd(CT.r, fmt, ap); /* routed: any topology (DESIGN.md 4b) */
        va_end(ap);
        ck_assert_msg(reply != NULL, "redis: %s: no reply", fmt);
        return reply;
}

/* GET @p key until it holds a string or @p timeout_s passed (polled every 100 ms); the
 * last reply, owned by the caller (freeReplyObject). For what the consumer writes after
 * its commit, such as the order cache (consumer/ordercache.c). */
CT_FN redisReply *ct_wait_get(int timeout_s, const char *key)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        redisReply *reply;

        for (;;) {
                reply = ct_redis("GET %s", key);
                if (reply->type == REDIS_REPLY_STRING || sk_mono_ms() > deadline)
                        return reply;
                freeReplyObject(reply);
                sk_sleep_ms(100, NULL);
        }
}

/* GET/HGET as an integer; -1 if missing. */
CT_FN int64_t ct_redis_i64(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;
        int64_t v = -1;

        va_start(ap, fmt);
        reply = sk_test_vcmd(CT.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply != NULL, "redis: %s: no reply", fmt);
        if (reply->type == REDIS_REPLY_STRING)
                v = strtoll(reply->str, NULL, 10);
        else if (reply->type == REDIS_REPLY_INTEGER)
                v = reply->integer;
        freeReplyObject(reply);
        return v;
}

CT_FN int ct_redis_exists_field(const char *key, const char *field)
{
        redisReply *reply = ct_redis("HEXISTS %s %s", key, field);
        int v = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
        return v;
}

/* Voucher on sale now for an hour, in the DB (init_stock, db_stock) and Redis. */
CT_FN void ct_voucher(int64_t vid, int init_stock, int db_stock, int redis_stock)
{
        char k[SK_KEY_MAX];
        int64_t now = sk_now_ms();
        redisReply *reply;

        ct_exec("INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time, end_time, status) "
                "VALUES (%" PRId64 ", %d, UTC_TIMESTAMP(3) - INTERVAL 1 HOUR, "
                "UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, 1)", vid, init_stock);
        ct_exec("INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock) VALUES (%" PRId64
                ", 0, %d, %d)", vid, init_stock, db_stock);
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_META);
        reply = ct_redis("HSET %s begin_ms %lld end_ms %lld status 1", k, (long long)(now - 3600000),
                         (long long)(now + 3600000));
        freeReplyObject(reply);
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        reply = ct_redis("SET %s %d", k, redis_stock);
        freeReplyObject(reply);
        /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        freeReplyObject(ct_redis("HSET %s _ _", k));
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        freeReplyObject(ct_redis("HSET %s _ _", k));
}

CT_FN int64_t ct_redis_stock(int64_t vid)
{
        char k[SK_KEY_MAX];
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        return ct_redis_i64("GET %s", k);
}

/* users[uid] == trace? (1), other/missing (0) */
CT_FN int ct_redis_user_is(int64_t vid, int64_t uid, int64_t trace)
{
        char k[SK_KEY_MAX];
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        return ct_redis_i64("HGET %s %lld", k, (long long)uid) == trace;
}

CT_FN int ct_fenced(int64_t vid, int64_t trace)
{
        char k[SK_KEY_MAX], f[48];
        sk_key_voucher(k, CT.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(f, trace, 'r');
        return ct_redis_exists_field(k, f);
}

/* Admit one purchase through deduct.lua (fresh trace and order ids) into *msg and its
 * JSON into @p json (SK_MSG_MAX). @returns 0, or the REJECT code / -1. */
CT_FN int ct_deduct_ids(int64_t vid, int64_t uid, int64_t trace, int64_t order, sk_order_msg_t *msg,
                         char *json)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char s_t[SK_ID_STRLEN], s_o[SK_ID_STRLEN], s_u[SK_ID_STRLEN], s_v[SK_ID_STRLEN], extra[24];
        const char *keys[4] = { k_meta, k_stock, k_users, k_trace };
        const char *args[6] = { s_t, s_o, s_u, s_v, "1", extra };
        char errstr[512] = "";
        redisReply *reply = NULL;
        int rc = -1;

        sk_key_voucher(k_meta, CT.conf.redis_prefix, vid, 0, SK_KEY_META);
        sk_key_voucher(k_stock, CT.conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        sk_key_voucher(k_users, CT.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        sk_key_voucher(k_trace, CT.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_id_format(trace, s_t);
        sk_id_format(order, s_o);
        sk_id_format(uid, s_u);
        sk_id_format(vid, s_v);
        snprintf(extra, sizeof(extra), "%" PRId64, CT.extra_ms);
        ck_assert_msg(sk_redis_evalsha(CT.r, SK_SCRIPT_DEDUCT, 4, keys, 6, args, &reply, errstr,
                                       sizeof(errstr)) == SK_OK, "deduct: %s", errstr);
        ck_assert(reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1);
        if (strcmp(reply->element[0]->str, "OK") == 0 || strcmp(reply->element[0]->str, "REPLAY") == 0) {
                snprintf(json, SK_MSG_MAX, "%s", reply->element[1]->str);
                ck_assert_msg(sk_msg_parse(json, strlen(json), msg, errstr, sizeof(errstr)) == SK_OK,
                              "deduct json %s: %s", json, errstr);
                rc = 0;
        } else if (strcmp(reply->element[0]->str, "REJECT") == 0) {
                rc = (int)reply->element[1]->integer;
        }
        freeReplyObject(reply);
        return rc;
}

CT_FN int ct_deduct(int64_t vid, int64_t uid, sk_order_msg_t *msg, char *json)
{
        return ct_deduct_ids(vid, uid, sk_test_rand_id(), sk_test_rand_id(), msg, json);
}

/* ---------------------------------------------------------------- Kafka */

/* The group's committed offset of partition 0 of the run's topic (-1: none). */
CT_FN int64_t ct_committed0(void)
{
        char errstr[512] = "";
        int64_t off = -1;

        ck_assert_int_eq(sk_kafka_committed(&CT.conf, CT.conf.topic, 0, &off, 10000, errstr, sizeof(errstr)), SK_OK);
        return off;
}

/* Queue one message (key = voucher id) without waiting. */
CT_FN void ct_produce_async(int64_t vid, const char *payload, size_t len)
{
        char key[SK_ID_STRLEN];
        rd_kafka_resp_err_t e;

        sk_id_format(vid, key);
        CT.inflight++;
        e = rd_kafka_producev(CT.prod, RD_KAFKA_V_TOPIC(CT.conf.topic), RD_KAFKA_V_KEY(key, strlen(key)),
                              RD_KAFKA_V_VALUE((void *)payload, len),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "producev: %s", rd_kafka_err2str(e));
}

/* Wait until every queued message is PERSISTED. */
CT_FN void ct_produce_wait(void)
{
        int64_t deadline = sk_mono_ms() + 30000;

        while (CT.inflight > 0 && sk_mono_ms() < deadline)
                rd_kafka_poll(CT.prod, 50 /* ms */);
        ck_assert_int_eq(CT.inflight, 0);
        ck_assert_int_eq(CT.failed_deliveries, 0);
}

CT_FN void ct_produce(int64_t vid, const char *payload)
{
        ct_produce_async(vid, payload, strlen(payload));
        ct_produce_wait();
}

typedef struct ct_dlq_msg {
        char kind[32];
        char error[512];
        char trace[SK_ID_STRLEN];
        char payload[SK_MSG_MAX];
} ct_dlq_msg_t;

/* Read the DLQ topic from the start until @p want messages or @p timeout_s. */
CT_FN int ct_read_dlq(ct_dlq_msg_t *out, int want, int timeout_s)
{
        char errstr[512] = "";
        sk_conf_t conf = CT.conf;
        rd_kafka_conf_t *kconf;
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *parts;
        int got = 0, p;
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;

        snprintf(conf.group_id, sizeof(conf.group_id), "dlqreader-%lld", (long long)sk_test_rand_id());
        kconf = sk_kafka_conf_new(&conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr));
        ck_assert_msg(kconf != NULL, "%s", errstr);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        parts = rd_kafka_topic_partition_list_new(CT.conf.topic_partitions);
        for (p = 0; p < CT.conf.topic_partitions; p++)
                rd_kafka_topic_partition_list_add(parts, CT.conf.dlq_topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        ck_assert_int_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(parts);
        while (got < want && sk_mono_ms() < deadline) {
                rd_kafka_message_t *rkm = rd_kafka_consumer_poll(rk, 200);
                rd_kafka_headers_t *hdrs = NULL;
                const void *val;
                size_t vlen;

                if (!rkm)
                        continue;
                if (rkm->err) {
                        rd_kafka_message_destroy(rkm);
                        continue;
                }
                memset(&out[got], 0, sizeof(out[got]));
                snprintf(out[got].payload, sizeof(out[got].payload), "%.*s", (int)rkm->len,
                         (const char *)rkm->payload);
                if (rd_kafka_message_headers(rkm, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                        if (rd_kafka_header_get_last(hdrs, "x-seckill-kind", &val, &vlen) == 0)
                                snprintf(out[got].kind, sizeof(out[got].kind), "%.*s", (int)vlen, (const char *)val);
                        if (rd_kafka_header_get_last(hdrs, "x-seckill-error", &val, &vlen) == 0)
                                snprintf(out[got].error, sizeof(out[got].error), "%.*s", (int)vlen, (const char *)val);
                        if (rd_kafka_header_get_last(hdrs, "traceId", &val, &vlen) == 0)
                                snprintf(out[got].trace, sizeof(out[got].trace), "%.*s", (int)vlen, (const char *)val);
                }
                got++;
                rd_kafka_message_destroy(rkm);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return got;
}

/* ---------------------------------------------------------------- the consumer */

/* Start ${SK_BIN}/seckill-consumer for this run with extra flags (NULL-terminated) and
 * optional SECKILL_FAILPOINTS. @returns its pid. */
CT_FN pid_t ct_start_consumer(const char *group, const char *failpoints, const char *const *flags)
{
        const char *bin = getenv("SK_BIN");
        char path[1024], parts_s[16];
        const char *argv[32];
        int argc = 0;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/seckill-consumer", bin ? bin : "build/bin");
        argv[argc++] = path;
        argv[argc++] = "-X";
        argv[argc++] = "session.timeout.ms=6000";
        argv[argc++] = "-X";
        argv[argc++] = "heartbeat.interval.ms=500";
        argv[argc++] = "--lock-wait-timeout-s";
        argv[argc++] = "2";
        argv[argc++] = "--backoff-cap-ms";
        argv[argc++] = "500";
        for (int i = 0; flags && flags[i] && argc < 30; i++)
                argv[argc++] = flags[i];
        argv[argc] = NULL;
        snprintf(parts_s, sizeof(parts_s), "%d", CT.conf.topic_partitions);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0)
                ct_die("fork", strerror(errno)); /* no ck_assert: also called outside tests */
        if (pid == 0) {
                setenv("SECKILL_MYSQL_URL", CT.conf.mysql_url, 1);
                setenv("SECKILL_REDIS_URL", CT.conf.redis_url, 1);
                setenv("SECKILL_KAFKA_BROKERS", CT.conf.kafka_brokers, 1);
                setenv("SECKILL_TOPIC", CT.conf.topic, 1);
                setenv("SECKILL_GROUP_ID", group ? group : CT.conf.group_id, 1);
                setenv("SECKILL_REDIS_PREFIX", CT.conf.redis_prefix, 1);
                setenv("SECKILL_TOPIC_PARTITIONS", parts_s, 1);
                setenv("SECKILL_METRICS_ADDR", "off", 1);
                if (failpoints)
                        setenv("SECKILL_FAILPOINTS", failpoints, 1);
                else
                        unsetenv("SECKILL_FAILPOINTS");
                execv(path, (char *const *)argv);
                fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
                _exit(127);
        }
        return pid;
}

/* Wait for @p pid up to @p timeout_s; @returns the wait status, or -1 on timeout. */
CT_FN int ct_wait_pid(pid_t pid, int timeout_s)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        int status = 0;

        for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid)
                        return status;
                if (r < 0)
                        return -1;
                if (sk_mono_ms() > deadline)
                        return -1;
                sk_sleep_ms(50, NULL);
        }
}

/* SIGTERM, wait for a clean exit (exit status 0 expected by the caller); SIGKILL on
 * timeout. @returns the wait status. */
CT_FN int ct_stop_consumer(pid_t pid)
{
        int status;

        if (pid <= 0)
                return -1;
        kill(pid, SIGTERM);
        status = ct_wait_pid(pid, 30);
        if (status == -1) {
                kill(pid, SIGKILL);
                status = ct_wait_pid(pid, 10);
        }
        return status;
}

/* Run @p s without forking (shared handles) and return EXIT_SUCCESS iff all passed. */
CT_FN int ct_run(Suite *s)
{
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
