/* 0300_kafka_roundtrip.c: sk/kafka.h against the real broker. Creates a unique topic
 * (and its DLQ) with sk_kafka_ensure_topics (twice: TOPIC_ALREADY_EXISTS is success),
 * produces one order message with the idempotent producer, waits for PERSISTED,
 * consumes it in a fresh group, stores and commits its offset by hand, and reads the
 * committed offset back with sk_kafka_committed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/kafka.h"
#include "sk/msg.h"

static sk_conf_t g_conf;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        int *status = rd_kafka_opaque(rk);

        (void)opaque;
        *status = rkm->err ? -1 : (int)rd_kafka_message_status(rkm);
}

START_TEST(roundtrip)
{
        sk_conf_t *conf = &g_conf;
        char errstr[512] = "";
        rd_kafka_conf_t *kconf;
        rd_kafka_t *prod = NULL, *cons = NULL;
        rd_kafka_topic_partition_list_t *sub;
        sk_order_msg_t in = {
                .trace_id = 1990653204235288577LL, .order_id = 1990653204235288578LL,
                .user_id = 7, .voucher_id = 1990653204235288579LL,
                .before_qty = 3, .deduct_qty = 1, .after_qty = 2, .ts_ms = sk_now_ms(),
        }, out;
        char val[SK_MSG_MAX], key[24];
        size_t len = sk_msg_format(&in, val, sizeof(val));
        int status = -2, got = 0;
        int32_t part = -1;
        int64_t off = -1, committed = -1;
        int64_t deadline;
        rd_kafka_resp_err_t e;

        ck_assert_int_eq(sk_kafka_ensure_topics(conf, 10000, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_kafka_ensure_topics(conf, 10000, errstr, sizeof(errstr)), SK_OK);

        /* Producer. */
        kconf = sk_kafka_conf_new(conf, SK_KAFKA_PRODUCER, errstr, sizeof(errstr));
        ck_assert_msg(kconf != NULL, "%s", errstr);
        rd_kafka_conf_set_dr_msg_cb(kconf, on_delivery);
        rd_kafka_conf_set_opaque(kconf, &status);
        prod = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(prod != NULL, "%s", errstr);
        snprintf(key, sizeof(key), "%" PRId64, in.voucher_id);
        e = rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(conf->topic),
                              RD_KAFKA_V_KEY(key, strlen(key)),
                              RD_KAFKA_V_VALUE(val, len),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        ck_assert_msg(e == RD_KAFKA_RESP_ERR_NO_ERROR, "producev: %s", rd_kafka_err2str(e));
        deadline = sk_mono_ms() + 30000;
        while (status == -2 && sk_mono_ms() < deadline)
                rd_kafka_poll(prod, 100 /* ms */);
        ck_assert_int_eq(status, RD_KAFKA_MSG_STATUS_PERSISTED);
        rd_kafka_destroy(prod);

        /* Consumer in the test's group. */
        kconf = sk_kafka_conf_new(conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr));
        ck_assert_msg(kconf != NULL, "%s", errstr);
        ck_assert_int_eq(sk_kafka_conf_set(kconf, "session.timeout.ms", "6000", errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_kafka_conf_set(kconf, "definitely.not.a.property", "1", errstr, sizeof(errstr)), SK_EINVAL);
        cons = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(cons != NULL, "%s", errstr);
        rd_kafka_poll_set_consumer(cons);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, conf->topic, RD_KAFKA_PARTITION_UA);
        ck_assert_int_eq(rd_kafka_subscribe(cons, sub), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(sub);

        deadline = sk_mono_ms() + 60000;
        while (!got && sk_mono_ms() < deadline) {
                rd_kafka_message_t *rkm = rd_kafka_consumer_poll(cons, 200 /* ms */);
                if (!rkm)
                        continue;
                if (!rkm->err) {
                        ck_assert_int_eq(sk_msg_parse(rkm->payload, rkm->len, &out, errstr, sizeof(errstr)), SK_OK);
                        ck_assert(memcmp(&in, &out, sizeof(in)) == 0);
                        part = rkm->partition;
                        off = rkm->offset;
                        /* offset_store stores offset+1: the next message to read. */
                        ck_assert_int_eq(rd_kafka_offset_store(rkm->rkt, rkm->partition, rkm->offset),
                                         RD_KAFKA_RESP_ERR_NO_ERROR);
                        got = 1;
                }
                rd_kafka_message_destroy(rkm);
        }
        ck_assert_msg(got, "message not consumed within 60 s");
        ck_assert_int_eq(rd_kafka_commit(cons, NULL, 0 /* sync */), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_consumer_close(cons);
        rd_kafka_destroy(cons);

        ck_assert_int_eq(sk_kafka_committed(conf, conf->topic, part, &committed, 10000,
                                            errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(committed, off + 1);

        /* A partition nobody committed: -1. */
        if (conf->topic_partitions > 1) {
                int other = (part + 1) % conf->topic_partitions;
                ck_assert_int_eq(sk_kafka_committed(conf, conf->topic, other, &committed, 10000,
                                                    errstr, sizeof(errstr)), SK_OK);
                ck_assert_int_eq(committed, -1);
        }
}
END_TEST

START_TEST(unreachable_broker_is_transient)
{
        sk_conf_t conf = g_conf;
        char errstr[512] = "";
        sk_err_t err;

        snprintf(conf.kafka_brokers, sizeof(conf.kafka_brokers), "127.0.0.1:1");
        err = sk_kafka_create_topic(&conf, "skt.never", 1, 1500, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN || err == SK_EKAFKA, "err %d: %s", err, errstr);
        ck_assert(errstr[0] != '\0');
}
END_TEST

int main(void)
{
        Suite *s = suite_create("kafka");
        TCase *tc = tcase_create("roundtrip");
        int rc;

        sk_test_conf(&g_conf, "kafka_rt");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, roundtrip);
        tcase_add_test(tc, unreachable_broker_is_transient);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_cleanup(&g_conf);
        return rc;
}
