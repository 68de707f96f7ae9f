/* 0203_rebuild_support.h: helpers of the rebuild/preheat integration tests (0203_*,
 * 0204_*): one configuration per run (sk_test_conf: its own database, topic, group and
 * key prefix), a voucher row, deduct.lua for a purchase, keyed messages produced through
 * the project's producer configuration (the delivery report tells the partition) and
 * offsets committed for the group as a consumer would. Real Redis, MariaDB and Kafka;
 * nothing is mocked. Single-threaded (the test's main thread). */
#pragma once
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "sk_test.h"
#include "sk/db.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/msg.h"
#include "sk/outcome.h"
#include "sk/rebuild.h"
#include "sk/redis.h"

static sk_conf_t rb_conf;
static sk_db_t *rb_db;
static sk_redis_t *rb_r;

/* Migrate, create the topics with @p partitions partitions, open rb_db and rb_r. */
static __attribute__((unused)) void rb_setup(const char *name, int partitions)
{
        char errstr[512] = "";

        sk_test_conf(&rb_conf, name);
        rb_conf.topic_partitions = partitions;
        rb_conf.kafka_delivery_timeout_ms = 2000;
        sk_test_migrate(&rb_conf);
        ck_assert_msg(sk_kafka_ensure_topics(&rb_conf, 15000, errstr, sizeof(errstr)) == SK_OK,
                      "%s", errstr);
        rb_db = sk_db_connect(&rb_conf.mysql, 0, 5, errstr, sizeof(errstr));
        ck_assert_msg(rb_db != NULL, "%s", errstr);
        rb_r = sk_redis_connect(&rb_conf.redis, 5000, errstr, sizeof(errstr));
        ck_assert_msg(rb_r != NULL, "%s", errstr);
}

static __attribute__((unused)) void rb_teardown(void)
{
        sk_redis_close(rb_r);
        sk_db_close(rb_db);
        sk_test_cleanup(&rb_conf);
}

static __attribute__((unused)) void rb_sql(const char *sql)
{
        char errstr[512] = "";
        ck_assert_msg(sk_db_exec(rb_db, sql, errstr, sizeof(errstr)) == SK_OK, "%s: %s", sql,
                      errstr);
}

static __attribute__((unused)) int64_t rb_sql_i64(const char *sql)
{
        char errstr[512] = "";
        int64_t v = -1;
        ck_assert_msg(sk_db_query_i64(rb_db, sql, &v, NULL, errstr, sizeof(errstr)) == SK_OK,
                      "%s: %s", sql, errstr);
        return v;
}

/* A voucher row on sale for the next hour: a new random id. */
static __attribute__((unused)) int64_t rb_voucher(int64_t init_stock, int64_t stock)
{
        char sql[512];
        int64_t vid = sk_test_rand_id();

        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time,"
                 " end_time, status) VALUES (%" PRId64 ", %" PRId64 ","
                 " UTC_TIMESTAMP(3) - INTERVAL 1 HOUR, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, 1)",
                 vid, init_stock);
        rb_sql(sql);
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock,"
                 " stock) VALUES (%" PRId64 ", 0, %" PRId64 ", %" PRId64 ")", vid, init_stock, stock);
        rb_sql(sql);
        return vid;
}

static __attribute__((unused)) void rb_key(char *buf, int64_t vid, sk_key_kind_t kind)
{
        sk_key_voucher(buf, rb_conf.redis_prefix, vid, 0, kind);
}

/* The string value of GET key / HGET key field ("(nil)" when missing). */
static __attribute__((unused)) void rb_get(const char *key, const char *field, char *out,
                                           size_t size)
{
        redisReply *reply = NULL;
        char errstr[256];

        if (field)
                ck_assert_int_eq(sk_redis_cmdf(rb_r, &reply, errstr, sizeof(errstr),
                                               "HGET %s %s", key, field), SK_OK);
        else
                ck_assert_int_eq(sk_redis_cmdf(rb_r, &reply, errstr, sizeof(errstr), "GET %s",
                                               key), SK_OK);
        snprintf(out, size, "%s", reply->type == REDIS_REPLY_STRING ? reply->str : "(nil)");
        freeReplyObject(reply);
}

static __attribute__((unused)) long long rb_int_cmd(const char *cmd, const char *key)
{
        redisReply *reply = NULL;
        char errstr[256];
        long long v;

        ck_assert_int_eq(sk_redis_cmdf(rb_r, &reply, errstr, sizeof(errstr), "%s %s", cmd, key),
                         SK_OK);
        ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
        v = reply->integer;
        freeReplyObject(reply);
        return v;
}

/* deduct.lua for a new purchase of @p user: the trace id; @p msg receives the message. */
static __attribute__((unused)) int64_t rb_deduct(int64_t vid, int64_t user, sk_order_msg_t *msg,
                                                 char *json)
{
        char k[4][SK_KEY_MAX], tid[SK_ID_STRLEN], oid[SK_ID_STRLEN], uid[SK_ID_STRLEN];
        char vs[SK_ID_STRLEN], extra[32], errstr[512] = "";
        const char *keys[4] = { k[0], k[1], k[2], k[3] };
        const char *args[6] = { tid, oid, uid, vs, "1", extra };
        int64_t trace = sk_test_rand_id();
        redisReply *reply = NULL;
        sk_err_t err;

        rb_key(k[0], vid, SK_KEY_META);
        rb_key(k[1], vid, SK_KEY_STOCK);
        rb_key(k[2], vid, SK_KEY_USERS);
        rb_key(k[3], vid, SK_KEY_TRACE);
        /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
        for (int i = 2; i < 4; i++) {
                ck_assert_int_eq(sk_redis_cmdf(rb_r, &reply, errstr, sizeof(errstr),
                                               "HSET %s _ _", k[i]), SK_OK);
                freeReplyObject(reply);
                reply = NULL;
        }
        sk_id_format(trace, tid);
        sk_id_format(sk_test_rand_id(), oid);
        sk_id_format(user, uid);
        sk_id_format(vid, vs);
        snprintf(extra, sizeof(extra), "%" PRId64,
                 sk_expire_extra_ms(rb_conf.reconcile_window_hours));
        err = sk_redis_evalsha(rb_r, SK_SCRIPT_DEDUCT, 4, keys, 6, args, &reply, errstr,
                               sizeof(errstr));
        ck_assert_msg(err == SK_OK, "deduct: %s", errstr);
        ck_assert_msg(reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
                      strcmp(reply->element[0]->str, "OK") == 0, "deduct not admitted");
        if (json)
                snprintf(json, SK_MSG_MAX, "%s", reply->element[1]->str);
        if (msg)
                ck_assert_int_eq(sk_msg_parse(reply->element[1]->str, reply->element[1]->len,
                                              msg, errstr, sizeof(errstr)), SK_OK);
        freeReplyObject(reply);
        return trace;
}

static void rb_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        int32_t *partition = rd_kafka_opaque(rk);
        (void)opaque;
        *partition = rkm->err ? -2 : rkm->partition;
}

/* Produce @p value keyed @p key with the project's producer settings and wait for its
 * delivery report. @returns the partition it landed on. */
static __attribute__((unused)) int32_t rb_produce(const char *key, const char *value)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&rb_conf, SK_KAFKA_PRODUCER, errstr,
                                                   sizeof(errstr));
        rd_kafka_t *rk;
        int32_t partition = -1;
        rd_kafka_resp_err_t e;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rd_kafka_conf_set_dr_msg_cb(kconf, rb_on_delivery);
        rd_kafka_conf_set_opaque(kconf, &partition);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(rb_conf.topic),
                              RD_KAFKA_V_KEY(key, strlen(key)),
                              RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "%s", rd_kafka_err2str(e));
        for (int i = 0; i < 300 && partition == -1; i++)
                rd_kafka_poll(rk, 100 /* ms */);
        ck_assert_msg(partition >= 0, "delivery failed");
        rd_kafka_destroy(rk);
        return partition;
}

/* Commit the high watermark of @p partition for the group (as a consumer would once it
 * has decided everything there). */
static __attribute__((unused)) void rb_commit(int32_t partition)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&rb_conf, SK_KAFKA_CONSUMER, errstr,
                                                   sizeof(errstr));
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t e;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        e = rd_kafka_query_watermark_offsets(rk, rb_conf.topic, partition, &lo, &hi, 10000);
        ck_assert_msg(e == 0, "watermarks: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_add(parts, rb_conf.topic, partition)->offset = hi;
        e = rd_kafka_commit(rk, parts, 0 /* sync */);
        ck_assert_msg(e == 0, "commit: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
}
