/* 0203_rebuild_kafka.c: the rebuild of DESIGN.md 8 (sk/rebuild.h) against the real
 * broker, MariaDB and Redis. A unique topic (2 partitions), group, database and prefix.
 * Checks: a message the group has not consumed keeps the rebuild waiting (SK_EAGAIN,
 * lag reported, meta status put back); once the group's committed offsets reach the
 * high watermarks the rebuild copies the DB state; the voucher's advisory lock held by
 * another session makes the rebuild and the meta reset give up (SK_EAGAIN) without
 * writing; the meta reset rewrites a stuck status 4 from the DB. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <hiredis/hiredis.h>
#include "sk_test.h"
#include "sk/db.h"
#include "sk/kafka.h"
#include "sk/keys.h"
#include "sk/rebuild.h"
#include "sk/redis.h"

static sk_conf_t g_conf;
static int64_t g_voucher;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        int *status = rd_kafka_opaque(rk);
        (void)opaque;
        *status = rkm->err ? -1 : 1;
}

/* Produce one message keyed by the voucher and wait for its delivery report. */
static void produce_one(void)
{
        char errstr[512] = "", key[24];
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&g_conf, SK_KAFKA_PRODUCER, errstr,
                                                   sizeof(errstr));
        rd_kafka_t *rk;
        int status = 0;
        rd_kafka_resp_err_t e;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rd_kafka_conf_set_dr_msg_cb(kconf, on_delivery);
        rd_kafka_conf_set_opaque(kconf, &status);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        snprintf(key, sizeof(key), "%" PRId64, g_voucher);
        e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(g_conf.topic), RD_KAFKA_V_KEY(key, strlen(key)),
                              RD_KAFKA_V_VALUE("{}", 2), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_END);
        ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "%s", rd_kafka_err2str(e));
        for (int i = 0; i < 300 && status == 0; i++)
                rd_kafka_poll(rk, 100 /* ms */);
        ck_assert_int_eq(status, 1);
        rd_kafka_destroy(rk);
}

/* Commit the high watermark of every partition for the group (as a consumer would). */
static void commit_all(void)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&g_conf, SK_KAFKA_CONSUMER, errstr,
                                                   sizeof(errstr));
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(2);
        rd_kafka_resp_err_t e;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        for (int p = 0; p < 2; p++) {
                int64_t lo = 0, hi = 0;
                e = rd_kafka_query_watermark_offsets(rk, g_conf.topic, p, &lo, &hi, 10000);
                ck_assert_msg(e == 0, "watermarks: %s", rd_kafka_err2str(e));
                rd_kafka_topic_partition_list_add(parts, g_conf.topic, p)->offset = hi;
        }
        e = rd_kafka_commit(rk, parts, 0 /* sync */);
        ck_assert_msg(e == 0, "commit: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
}

static void hget(sk_redis_t *r, const char *key, const char *field, char *out, size_t size)
{
        redisReply *reply = NULL;
        char errstr[256];
        ck_assert_int_eq(sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "HGET %s %s", key,
                                       field), SK_OK);
        snprintf(out, size, "%s", reply->type == REDIS_REPLY_STRING ? reply->str : "(nil)");
        freeReplyObject(reply);
}

START_TEST(rebuild_waits_for_the_group)
{
        char errstr[512] = "", meta[SK_KEY_MAX], stock[SK_KEY_MAX], val[64], lock[256];
        sk_rebuild_report_t rep;
        sk_redis_t *r;
        sk_db_t *db, *other;
        redisReply *reply = NULL;
        int written = -1;
        sk_err_t err;

        r = sk_redis_connect(&g_conf.redis, 5000, errstr, sizeof(errstr));
        ck_assert_msg(r != NULL, "%s", errstr);
        db = sk_db_connect(&g_conf.mysql, 0, 1, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "%s", errstr);
        other = sk_db_connect(&g_conf.mysql, 0, 1, errstr, sizeof(errstr));
        ck_assert_msg(other != NULL, "%s", errstr);
        sk_key_voucher(meta, g_conf.redis_prefix, g_voucher, SK_KEY_META);
        sk_key_voucher(stock, g_conf.redis_prefix, g_voucher, SK_KEY_STOCK);

        err = sk_voucher_preheat(&g_conf, g_voucher, 0, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);
        ck_assert_int_eq(rep.rebuilt, 0);
        ck_assert_int_eq(rep.stock, 10);

        /* One message the group has not consumed: the rebuild waits, then gives up. */
        produce_one();
        err = sk_rebuild_voucher(&g_conf, g_voucher, 1500, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN, "rebuild with lag: %d %s", err, errstr);
        ck_assert_int_eq(rep.lag, 1);
        ck_assert_ptr_nonnull(strstr(rep.detail, "left to consume"));
        ck_assert_int_eq(rep.prev_status, 1);
        hget(r, meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "1");

        /* The DB moved on meanwhile (a consumer sold 3); once the group caught up, the
         * rebuild copies it. */
        ck_assert_int_eq(sk_db_exec(db, "UPDATE tb_seckill_voucher SET stock = 7", errstr,
                                    sizeof(errstr)), SK_OK);
        commit_all();
        err = sk_rebuild_voucher(&g_conf, g_voucher, 10000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "rebuild: %d %s", err, errstr);
        ck_assert_int_eq(rep.lag, 0);
        ck_assert_int_eq(rep.stock, 7);
        ck_assert_int_eq(sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "GET %s", stock), SK_OK);
        ck_assert_str_eq(reply->str, "7");
        freeReplyObject(reply);

        /* Someone holds the voucher's lock: rebuild and meta reset leave it alone. */
        sk_voucher_lock_name(lock, sizeof(lock), &g_conf, g_voucher);
        ck_assert_int_eq(sk_db_lock(other, lock, 0, errstr, sizeof(errstr)), SK_OK);
        err = sk_rebuild_voucher(&g_conf, g_voucher, 1000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN && strstr(errstr, "busy"), "%d %s", err, errstr);
        ck_assert_int_eq(sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "HSET %s status 4",
                                       meta), SK_OK);
        freeReplyObject(reply);
        ck_assert_int_eq(sk_voucher_reset_meta_with(&g_conf, db, r, g_voucher, &written, errstr,
                                                    sizeof(errstr)), SK_EAGAIN);
        hget(r, meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "4");
        ck_assert_int_eq(sk_db_unlock(other, lock, errstr, sizeof(errstr)), SK_OK);
        /* Status 4 with nobody holding the lock: reset from the DB. */
        ck_assert_int_eq(sk_voucher_reset_meta_with(&g_conf, db, r, g_voucher, &written, errstr,
                                                    sizeof(errstr)), SK_OK);
        ck_assert_int_eq(written, 1);
        hget(r, meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "1");

        sk_db_close(other);
        sk_db_close(db);
        sk_redis_close(r);
}
END_TEST

static void setup(void)
{
        char errstr[512] = "", sql[512];
        sk_db_t *db;
        int64_t now_s = (int64_t)time(NULL);

        sk_test_migrate(&g_conf);
        ck_assert_msg(sk_kafka_ensure_topics(&g_conf, 15000, errstr, sizeof(errstr)) == SK_OK,
                      "%s", errstr);
        db = sk_db_connect(&g_conf.mysql, 0, 1, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "%s", errstr);
        g_voucher = sk_test_rand_id();
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, stock,"
                 " begin_time, end_time, status) VALUES (%" PRId64 ", 10, 10,"
                 " TIMESTAMPADD(SECOND, %" PRId64 ", '1970-01-01'),"
                 " TIMESTAMPADD(SECOND, %" PRId64 ", '1970-01-01'), 1)",
                 g_voucher, now_s - 60, now_s + 3600);
        ck_assert_msg(sk_db_exec(db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        sk_db_close(db);
}

int main(void)
{
        Suite *s = suite_create("rebuild_kafka");
        TCase *tc = tcase_create("rebuild");
        int rc;

        sk_db_library_init();
        sk_test_conf(&g_conf, "rebuild_kafka");
        g_conf.topic_partitions = 2;
        g_conf.kafka_delivery_timeout_ms = 5000;
        tcase_add_unchecked_fixture(tc, setup, NULL);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, rebuild_waits_for_the_group);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_cleanup(&g_conf);
        return rc;
}
