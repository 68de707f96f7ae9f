/* sk_test_kafka.c: Kafka in a test (sk_test_kafka.h). The fixture's producer is
 * opened on first use with the project's producer settings (sk_kafka_conf_new) and a
 * 30 s message timeout: it stands in for a front whose publish succeeded, so its own
 * delivery is not under test (a short timeout timed the first message to a new topic
 * out on a loaded CI host). */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/kafka.h"

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        (void)rk;
        (void)opaque;
        if (rkm->err || rd_kafka_message_status(rkm) != RD_KAFKA_MSG_STATUS_PERSISTED)
                sk_test_fx.failed++;
        sk_test_fx.last_partition = rkm->err ? -2 : rkm->partition;
        sk_test_fx.inflight--;
}

static rd_kafka_t *producer(void)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf;

        if (sk_test_fx.prod)
                return sk_test_fx.prod;
        kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr));
        ck_assert_msg(kconf != NULL, "producer conf: %s", errstr);
        ck_assert_int_eq(rd_kafka_conf_set(kconf, "message.timeout.ms", "30000", errstr, sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        rd_kafka_conf_set_dr_msg_cb(kconf, on_delivery);
        sk_test_fx.prod = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(sk_test_fx.prod != NULL, "producer: %s", errstr);
        return sk_test_fx.prod;
}

static void produce(const char *key, const char *payload, size_t len)
{
        rd_kafka_resp_err_t e;

        sk_test_fx.inflight++;
        e = rd_kafka_producev(producer(), RD_KAFKA_V_TOPIC(sk_test_fx.conf.topic),
                              RD_KAFKA_V_KEY(key, strlen(key)),
                              RD_KAFKA_V_VALUE((void *)payload, len),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "producev: %s", rd_kafka_err2str(e));
}

void sk_test_produce_async(int64_t vid, const char *payload, size_t len)
{
        char key[SK_ID_STRLEN];

        sk_id_format(vid, key);
        produce(key, payload, len);
}

void sk_test_produce_wait(void)
{
        int64_t deadline = sk_mono_ms() + 30000;

        while (sk_test_fx.inflight > 0 && sk_mono_ms() < deadline)
                rd_kafka_poll(producer(), 50 /* ms */);
        ck_assert_int_eq(sk_test_fx.inflight, 0);
        ck_assert_int_eq(sk_test_fx.failed, 0);
}

void sk_test_produce(int64_t vid, const char *payload)
{
        sk_test_produce_async(vid, payload, strlen(payload));
        sk_test_produce_wait();
}

void sk_test_publish(int64_t vid, char **msgs, size_t n)
{
        for (size_t i = 0; i < n; i++)
                sk_test_produce_async(vid, msgs[i], strlen(msgs[i]));
        sk_test_produce_wait();
}

int32_t sk_test_produce_key(const char *key, const char *value)
{
        sk_test_fx.last_partition = -1;
        produce(key, value, strlen(value));
        sk_test_produce_wait();
        ck_assert_msg(sk_test_fx.last_partition >= 0, "delivery failed");
        return sk_test_fx.last_partition;
}

/* A consumer handle of the fixture's group (not subscribed). */
static rd_kafka_t *group_handle(const sk_conf_t *conf)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr));
        rd_kafka_t *rk;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        return rk;
}

void sk_test_commit_hwm(int32_t partition)
{
        rd_kafka_t *rk = group_handle(&sk_test_fx.conf);
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t e;

        e = rd_kafka_query_watermark_offsets(rk, sk_test_fx.conf.topic, partition, &lo, &hi, 10000);
        ck_assert_msg(e == 0, "watermarks: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_add(parts, sk_test_fx.conf.topic, partition)->offset = hi;
        e = rd_kafka_commit(rk, parts, 0 /* sync */);
        ck_assert_msg(e == 0, "commit: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
}

int64_t sk_test_committed(int32_t partition)
{
        char errstr[512] = "";
        int64_t off = -1;

        ck_assert_int_eq(sk_kafka_committed(&sk_test_fx.conf, sk_test_fx.conf.topic, partition, &off,
                                            10000, errstr, sizeof(errstr)), SK_OK);
        return off;
}

int64_t sk_test_hwm_total(void)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_ADMIN, errstr, sizeof(errstr));
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        int64_t total = 0;

        ck_assert_msg(rk != NULL, "%s", errstr);
        for (int p = 0; p < sk_test_fx.conf.topic_partitions; p++) {
                int64_t lo = 0, hi = 0;
                ck_assert_int_eq(rd_kafka_query_watermark_offsets(rk, sk_test_fx.conf.topic, p, &lo, &hi, 10000), 0);
                total += hi;
        }
        rd_kafka_destroy(rk);
        return total;
}

int64_t sk_test_committed_total(void)
{
        int64_t total = 0;

        for (int p = 0; p < sk_test_fx.conf.topic_partitions; p++) {
                int64_t off = sk_test_committed(p);
                total += off < 0 ? 0 : off;
        }
        return total;
}

/* Header @p name of @p hdrs into @p out, if present. */
static void header(rd_kafka_headers_t *hdrs, const char *name, char *out, size_t size)
{
        const void *val;
        size_t vlen;

        if (rd_kafka_header_get_last(hdrs, name, &val, &vlen) == 0)
                snprintf(out, size, "%.*s", (int)vlen, (const char *)val);
}

int sk_test_read_dlq(sk_test_dlq_msg_t *out, int want, int timeout_s)
{
        sk_conf_t conf = sk_test_fx.conf;
        rd_kafka_topic_partition_list_t *parts;
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        rd_kafka_t *rk;
        int got = 0;

        snprintf(conf.group_id, sizeof(conf.group_id), "dlqreader-%lld", (long long)sk_test_rand_id());
        rk = group_handle(&conf);
        parts = rd_kafka_topic_partition_list_new(conf.topic_partitions);
        for (int p = 0; p < conf.topic_partitions; p++)
                rd_kafka_topic_partition_list_add(parts, conf.dlq_topic, p)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
        ck_assert_int_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(parts);
        while (got < want && sk_mono_ms() < deadline) {
                rd_kafka_message_t *rkm = rd_kafka_consumer_poll(rk, 200 /* ms */);
                rd_kafka_headers_t *hdrs = NULL;

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
                        header(hdrs, "x-seckill-kind", out[got].kind, sizeof(out[got].kind));
                        header(hdrs, "x-seckill-error", out[got].error, sizeof(out[got].error));
                        header(hdrs, "traceId", out[got].trace, sizeof(out[got].trace));
                }
                got++;
                rd_kafka_message_destroy(rkm);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return got;
}
