/* 0506_recon_deleted_records.c: messages lost in Kafka (DESIGN.md 10: "messages lost in
 * Kafka" is rd_kafka_DeleteRecords on the scratch topic with the group stopped). Two
 * purchases were admitted and published, then their records were deleted before any
 * consumer read them; a consumer starts (it finds nothing), and one reconciler pass
 * re-drives both from the trace hash: both orders exist, exactly once each. */
#include "sk_test.h"

/* Delete every record of every partition of the topic (up to the high watermark). */
static void delete_all_records(void)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_ADMIN, errstr, sizeof(errstr));
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(sk_test_fx.conf.topic_partitions);
        rd_kafka_DeleteRecords_t *del;
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        rd_kafka_t *rk;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        for (int p = 0; p < sk_test_fx.conf.topic_partitions; p++)
                rd_kafka_topic_partition_list_add(parts, sk_test_fx.conf.topic, p)->offset = RD_KAFKA_OFFSET_END;
        del = rd_kafka_DeleteRecords_new(parts);
        q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteRecords(rk, &del, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 30000);
        ck_assert_msg(ev != NULL, "DeleteRecords: no answer");
        ck_assert_msg(rd_kafka_event_error(ev) == 0, "DeleteRecords: %s", rd_kafka_event_error_string(ev));
        {
                const rd_kafka_topic_partition_list_t *res =
                        rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(ev));
                for (int i = 0; res && i < res->cnt; i++)
                        ck_assert_msg(res->elems[i].err == 0, "DeleteRecords[%d]: %s", i,
                                      rd_kafka_err2str(res->elems[i].err));
        }
        rd_kafka_event_destroy(ev);
        rd_kafka_DeleteRecords_destroy(del);
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

START_TEST(deleted_records_are_redriven)
{
        char out[65536], vs[SK_ID_STRLEN], json[2][SK_MSG_MAX];
        char *msgs[2] = { json[0], json[1] };
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }), t[2],
                                                            o[2];
        pid_t cons;
        int rc, i;

        sk_id_format(vid, vs);
        for (i = 0; i < 2; i++)
                t[i] = sk_test_admit(vid, sk_test_rand_id(), &o[i], NULL, json[i]);
        sk_test_publish(vid, msgs, 2);
        delete_all_records();
        cons = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 0);
        sk_sleep_ms(3000, NULL); /* the consumer joins and finds nothing to read */
        ck_assert_int_eq(sk_test_outcome(t[0]), 0);
        ck_assert_int_eq(sk_test_outcome(t[1]), 0);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 2);
        for (i = 0; i < 2; i++) {
                ck_assert_int_eq(sk_test_wait_outcome(t[i], 60), SK_OUTCOME_CREATED);
                ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, t[i]), 1);
                ck_assert_int_eq(sk_test_i64("SELECT id FROM tb_voucher_order WHERE trace_id = %" PRId64, t[i]), o[i]);
        }
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 2);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), 2);
        sk_test_stop(cons, 30);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0506_recon_deleted_records");
        TCase *tc = tcase_create("deleted");
        int rc;

        sk_test_fix_setup("recon_deleted", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                  .delivery_timeout_ms = 500,
                                                                  .lock_wait_s = 5 });
        tcase_set_timeout(tc, 180);
        tcase_add_test(tc, deleted_records_are_redriven);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
