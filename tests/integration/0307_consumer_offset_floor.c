/* 0307_consumer_offset_floor.c: committed offsets never move backwards across a
 * revoke/reassign (DESIGN.md 5). One-partition topic.
 * The consumer's first batch (purchase A at offset 0) retries against a row lock.
 * Meanwhile B1, B2 follow (offsets 1, 2; B's row is locked too), and another member of
 * the group (subscribed to another topic, so it takes no partition of ours) joins,
 * commits offset 3 for the partition, as a member that settled the partition would,
 * and leaves; each join and leave revokes and reassigns the partition. Then A's lock
 * is released: A is applied, and the group's committed offset must never drop below
 * 3 (the consumer used to store 0 or 1 for A's batch, and auto-commit sent it). */
#include "sk_test.h"

#define WAIT_S 60

/* The consumer of the running case, stopped by main if an assertion left it running. */

/* A member of the consumer's group, subscribed to the DLQ topic, that commits @p offset
 * for partition 0 of the order topic and leaves. */
static void other_member_commits(int64_t offset)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr));
        rd_kafka_topic_partition_list_t *sub, *assigned = NULL, *commit;
        int64_t deadline = sk_mono_ms() + 60000;
        rd_kafka_t *rk;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        ck_assert_ptr_nonnull(rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr)));
        rd_kafka_poll_set_consumer(rk);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, sk_test_fx.conf.dlq_topic, RD_KAFKA_PARTITION_UA);
        ck_assert_int_eq(rd_kafka_subscribe(rk, sub), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(sub);
        while (sk_mono_ms() < deadline) {
                rd_kafka_message_t *rkm = rd_kafka_consumer_poll(rk, 200);
                if (rkm)
                        rd_kafka_message_destroy(rkm);
                if (rd_kafka_assignment(rk, &assigned) == 0 && assigned && assigned->cnt > 0)
                        break;
                if (assigned)
                        rd_kafka_topic_partition_list_destroy(assigned);
                assigned = NULL;
        }
        ck_assert_msg(assigned != NULL, "the other member never joined the group");
        rd_kafka_topic_partition_list_destroy(assigned);
        commit = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(commit, sk_test_fx.conf.topic, 0)->offset = offset;
        ck_assert_int_eq(rd_kafka_commit(rk, commit, 0 /* sync */), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(commit);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
}

START_TEST(committed_offset_never_moves_back)
{
        int64_t va, vb, low = INT64_MAX, deadline;
        sk_order_msg_t a, b1, b2;
        char ja[SK_MSG_MAX], jb1[SK_MSG_MAX], jb2[SK_MSG_MAX], sql[256];
        sk_db_t *lock_a, *lock_b;
        pid_t pid;
        int status;

        va = sk_test_voucher_open(5);
        vb = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(va, sk_test_rand_id(), 0, 0, &a, ja), 0);
        ck_assert_int_eq(sk_test_deduct(vb, sk_test_rand_id(), 0, 0, &b1, jb1), 0);
        ck_assert_int_eq(sk_test_deduct(vb, sk_test_rand_id(), 0, 0, &b2, jb2), 0);
        lock_a = sk_test_lock_voucher(va);
        lock_b = sk_test_lock_voucher(vb);
        sk_test_produce(va, ja);
        pid = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 1);
        sk_sleep_ms(6000, NULL); /* joined, A's batch retrying against the lock */
        sk_test_produce_async(vb, jb1, strlen(jb1));
        sk_test_produce_async(vb, jb2, strlen(jb2));
        sk_test_produce_wait();
        other_member_commits(3);
        ck_assert_int_eq(sk_test_committed(0), 3);
        sk_sleep_ms(3000, NULL); /* the consumer is reassigned the partition */
        sk_test_unlock(lock_a);

        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_voucher_order WHERE trace_id = %" PRId64, a.trace_id);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        /* B stays locked: whatever A's batch stored has time to be auto-committed. */
        deadline = sk_mono_ms() + 6000;
        while (sk_mono_ms() < deadline) {
                int64_t c = sk_test_committed(0);
                if (c < low)
                        low = c;
                sk_sleep_ms(200, NULL);
        }
        sk_test_unlock(lock_b);
        ck_assert_msg(low >= 3, "committed offset went back to %" PRId64, low);
        status = sk_test_stop(pid, 30);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert_int_ge(sk_test_committed(0), 3);
        ck_assert_int_eq(sk_test_i64("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64, a.trace_id),
                         SK_OUTCOME_CREATED);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_offset_floor");
        TCase *tc = tcase_create("floor");
        int rc;

        sk_test_fix_setup("cons_floor", &(sk_test_fix_opts_t){ .partitions = 1 });
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, committed_offset_never_moves_back);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        sk_test_fix_teardown();
        return rc;
}
