/* 0301_consumer_apply.c: seckill-consumer against the real stack.
 * One consumer process serves the whole suite (its own topic, group, database and
 * prefix); each case uses its own voucher. Admission runs through the real deduct.lua
 * so the DEDUCT trace entries exist, and the message produced is its JSON.
 * Cases: the same message twice -> one order, no rollback, 64-bit ids unchanged;
 * 10 messages for 7 DB units -> 7 orders, 3 FAILED sold_out, DB stock 0, Redis clamped,
 * users released; has_order -> stock restored, users[U] re-pointed to the trace T0 of
 * the user's active order; a fenced trace -> FAILED
 * front_rollback, no order; an existing FAILED outcome -> no order; DB stock forced to 0
 * -> FAILED sold_out, no restore, Redis clamped to 0, user released; poison -> DLQ with
 * a reason and the worker goes on; a collision (same orderId, other user) -> DLQ, first
 * order untouched; a message the DB refuses on every attempt (1264) -> retried, then DLQ
 * with the error, no outcome, no Redis change. */
#include "sk_test.h"

static pid_t g_consumer;

#define WAIT_S 60

static int64_t outcome_of(int64_t trace)
{
        return sk_test_i64("SELECT outcome FROM tb_seckill_outcome WHERE trace_id = %" PRId64, trace);
}

static int64_t wait_outcome(int64_t trace)
{
        char sql[256];
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64, trace);
        ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 1, sql), 1);
        return outcome_of(trace);
}

START_TEST(duplicate_message_one_order)
{
        int64_t vid, uid = sk_test_rand_id();
        sk_order_msg_t m, sentinel;
        char json[SK_MSG_MAX], json2[SK_MSG_MAX];

        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        sk_test_produce(vid, json);
        sk_test_produce(vid, json);
        /* A later purchase on the same voucher (same partition): once it is decided, the
         * duplicate before it has been consumed too. */
        ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &sentinel, json2), 0);
        sk_test_produce(vid, json2);
        ck_assert_int_eq(wait_outcome(sentinel.trace_id), SK_OUTCOME_CREATED);
        ck_assert_int_eq(outcome_of(m.trace_id), SK_OUTCOME_CREATED);

        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 2);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 3);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        ck_assert(sk_test_user_is(vid, uid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 3);
        /* 64-bit ids stored unchanged (random 63-bit ids are far above 2^53). */
        ck_assert(sk_test_i64("SELECT id FROM tb_voucher_order WHERE trace_id = %" PRId64, m.trace_id) == m.order_id);
        ck_assert(sk_test_i64("SELECT user_id FROM tb_voucher_order WHERE trace_id = %" PRId64, m.trace_id) == uid);
        ck_assert(sk_test_i64("SELECT voucher_id FROM tb_voucher_order_router WHERE order_id = %" PRId64, m.order_id) == vid);
        ck_assert(sk_test_i64("SELECT order_id FROM tb_seckill_outcome WHERE trace_id = %" PRId64, m.trace_id) == m.order_id);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                                " AND log_type = -1 AND business_type = 1 AND reconciliation_status = 1"
                                " AND message_id = '%" PRId64 "' AND before_qty = %" PRId64
                                " AND after_qty = %" PRId64, m.trace_id, m.trace_id, m.before_qty,
                                m.after_qty), 1);
        {
                /* The order is cached for the front, right after the batch's commit
                 * (the outcome waited for above can be seen before that SET lands: the
                 * Sentinel pass once read nil here). */
                char k[SK_KEY_MAX];
                redisReply *reply;
                sk_key_order(k, sk_test_fx.conf.redis_prefix, m.order_id);
                reply = sk_test_wait_get(WAIT_S, k);
                ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
                {
                        char oid[SK_ID_STRLEN];
                        sk_id_format(m.order_id, oid);
                        ck_assert_ptr_nonnull(strstr(reply->str, oid));
                }
                freeReplyObject(reply);
        }
}
END_TEST

START_TEST(batch_of_10_with_7_left)
{
        int64_t vid = sk_test_rand_id();
        sk_order_msg_t m[10];
        char json[10][SK_MSG_MAX];
        int i, created = 0, failed = 0, released = 0;

        /* Redis admitted 10 (stock 13 -> 3) while the DB has only 7 units. */
        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 20, .db_stock = 7,
                                              .stock = 13, .status = 1, .db_status = 1 });
        for (i = 0; i < 10; i++)
                ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &m[i], json[i]), 0);
        for (i = 0; i < 10; i++)
                sk_test_produce_async(vid, json[i], strlen(json[i]));
        sk_test_produce_wait();
        {
                char sql[256];
                snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64, vid);
                ck_assert_int_eq(sk_test_wait_i64(WAIT_S, 10, sql), 10);
        }
        for (i = 0; i < 10; i++) {
                int64_t o = outcome_of(m[i].trace_id);
                if (o == SK_OUTCOME_CREATED) {
                        created++;
                        ck_assert(sk_test_user_is(vid, m[i].user_id, m[i].trace_id));
                } else {
                        ck_assert_int_eq(o, SK_OUTCOME_FAILED);
                        failed++;
                        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                                                " AND reason = 'sold_out'", m[i].trace_id), 1);
                        /* The rollback runs after the FAILED commit: wait for its fence. */
                        for (int t = 0; t < 100 && !sk_test_fenced(vid, m[i].trace_id); t++)
                                sk_sleep_ms(100, NULL);
                        ck_assert(sk_test_fenced(vid, m[i].trace_id));
                        if (!sk_test_user_is(vid, m[i].user_id, m[i].trace_id))
                                released++;
                        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                                                " AND log_type = 1", m[i].trace_id), 1);
                }
        }
        ck_assert_int_eq(created, 7);
        ck_assert_int_eq(failed, 3);
        ck_assert_int_eq(released, 3);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 7);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 0);
        /* sold_out restores nothing and clamps Redis to the DB stock. */
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 0);
}
END_TEST

START_TEST(has_order_restores_and_keeps_user)
{
        int64_t vid = sk_test_rand_id(), uid = sk_test_rand_id(), old_order = sk_test_rand_id();
        int64_t t0 = sk_test_rand_id();
        sk_order_msg_t m;
        char json[SK_MSG_MAX];

        /* The user already holds an order in the DB (Redis does not know). */
        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 5, .db_stock = 4, .stock = 4,
                                              .status = 1, .db_status = 1 });
        sk_test_exec("INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, status) VALUES "
                "(%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 1)", old_order, uid, vid, t0);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 3);
        sk_test_produce(vid, json);
        ck_assert_int_eq(wait_outcome(m.trace_id), SK_OUTCOME_FAILED);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                                " AND reason = 'has_order'", m.trace_id), 1);
        for (int t = 0; t < 100 && !sk_test_fenced(vid, m.trace_id); t++)
                sk_sleep_ms(100, NULL);
        ck_assert(sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);                 /* restored */
        ck_assert(sk_test_user_is(vid, uid, t0));                 /* re-pointed to T0 */
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert(sk_test_i64("SELECT id FROM tb_voucher_order WHERE voucher_id = %" PRId64
                         " AND user_id = %" PRId64, vid, uid) == old_order);
}
END_TEST

START_TEST(fenced_trace_fails_front_rollback)
{
        int64_t vid, uid = sk_test_rand_id();
        sk_order_msg_t m;
        char json[SK_MSG_MAX], errstr[512] = "";
        sk_rollback_res_t res;

        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        /* The front gave up first (e.g. NOT_PERSISTED) and fenced the trace. */
        ck_assert_int_eq(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, vid, 0, m.trace_id, uid, "front",
                                         SK_REASON_FRONT_ROLLBACK, -1, sk_test_fx.extra_ms, &res, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
        sk_test_produce(vid, json);
        ck_assert_int_eq(wait_outcome(m.trace_id), SK_OUTCOME_FAILED);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                                " AND reason = 'front_rollback'", m.trace_id), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 0);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 5);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5); /* not restored twice */
}
END_TEST

START_TEST(failed_outcome_means_no_order)
{
        int64_t vid, uid = sk_test_rand_id();
        sk_order_msg_t m;
        sk_outcome_t existing;
        char json[SK_MSG_MAX], errstr[512] = "";

        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        /* The reconciler already gave up on it (lost). */
        ck_assert_int_eq(sk_outcome_fail(sk_test_fx.db, &m, SK_REASON_LOST, "test", &existing, errstr, sizeof(errstr)), SK_OK);
        sk_test_produce(vid, json);
        /* The consumer follows the FAILED row: rollback.lua with lost's flags. */
        for (int t = 0; t < WAIT_S * 10 && !sk_test_fenced(vid, m.trace_id); t++)
                sk_sleep_ms(100, NULL);
        ck_assert(sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
        ck_assert(!sk_test_user_is(vid, uid, m.trace_id));
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 0);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 5);
        ck_assert_int_eq(outcome_of(m.trace_id), SK_OUTCOME_FAILED);
}
END_TEST

START_TEST(db_stock_zero_clamps_redis)
{
        int64_t vid = sk_test_rand_id(), uid = sk_test_rand_id();
        sk_order_msg_t m;
        char json[SK_MSG_MAX];

        sk_test_voucher(&(sk_test_voucher_t){ .vid = vid, .init_stock = 5, .db_stock = 0, .stock = 2,
                                              .status = 1, .db_status = 1 });
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 1);
        sk_test_produce(vid, json);
        ck_assert_int_eq(wait_outcome(m.trace_id), SK_OUTCOME_FAILED);
        for (int t = 0; t < 100 && !sk_test_fenced(vid, m.trace_id); t++)
                sk_sleep_ms(100, NULL);
        ck_assert(sk_test_fenced(vid, m.trace_id));
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 0);                /* clamped, not restored */
        ck_assert(!sk_test_user_is(vid, uid, m.trace_id));       /* released */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 0);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 0);
}
END_TEST

START_TEST(poison_goes_to_dlq_and_worker_continues)
{
        int64_t vid;
        sk_order_msg_t m;
        char json[SK_MSG_MAX], bad_id[SK_MSG_MAX];
        sk_test_dlq_msg_t dlq[8];
        int n, i, saw_json = 0, saw_id = 0;

        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &m, json), 0);
        snprintf(bad_id, sizeof(bad_id),
                 "{\"traceId\":\"0123\",\"orderId\":\"1\",\"userId\":\"1\",\"voucherId\":\"%" PRId64 "\","
                 "\"beforeQty\":1,\"deductQty\":1,\"afterQty\":0,\"ts\":1}", vid);
        sk_test_produce(vid, "this is not json");
        sk_test_produce(vid, bad_id);
        sk_test_produce(vid, json);
        ck_assert_int_eq(wait_outcome(m.trace_id), SK_OUTCOME_CREATED);
        n = sk_test_read_dlq(dlq, 2, WAIT_S);
        ck_assert_int_ge(n, 2);
        for (i = 0; i < n; i++) {
                if (strcmp(dlq[i].kind, "poison") != 0)
                        continue;
                ck_assert(dlq[i].error[0] != '\0');
                if (strcmp(dlq[i].payload, "this is not json") == 0)
                        saw_json = 1;
                if (strcmp(dlq[i].payload, bad_id) == 0) {
                        saw_id = 1;
                        ck_assert_ptr_nonnull(strstr(dlq[i].error, "traceId"));
                }
        }
        ck_assert(saw_json);
        ck_assert(saw_id);
}
END_TEST

START_TEST(collision_goes_to_dlq)
{
        int64_t vid, ua = sk_test_rand_id(), ub = sk_test_rand_id();
        int64_t order = sk_test_rand_id();
        sk_order_msg_t a, b;
        char ja[SK_MSG_MAX], jb[SK_MSG_MAX], tb[SK_ID_STRLEN];
        sk_test_dlq_msg_t dlq[8];
        int n, i, found = 0;

        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, ua, sk_test_rand_id(), order, &a, ja), 0);
        ck_assert_int_eq(sk_test_deduct(vid, ub, sk_test_rand_id(), order, &b, jb), 0); /* same orderId */
        sk_test_produce(vid, ja);
        ck_assert_int_eq(wait_outcome(a.trace_id), SK_OUTCOME_CREATED);
        sk_test_produce(vid, jb);
        n = sk_test_read_dlq(dlq, 3, 20); /* 2 poison (earlier case) + this one */
        sk_id_format(b.trace_id, tb);
        for (i = 0; i < n; i++)
                if (strcmp(dlq[i].kind, "collision") == 0 && strcmp(dlq[i].trace, tb) == 0)
                        found = 1;
        ck_assert_msg(found, "no collision copy of trace %s in the DLQ (%d messages)", tb, n);
        ck_assert_int_eq(outcome_of(b.trace_id), -1); /* no decision */
        ck_assert(sk_test_i64("SELECT user_id FROM tb_voucher_order WHERE id = %" PRId64, order) == ua);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 1);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);
        ck_assert(sk_test_user_is(vid, ub, b.trace_id)); /* no Redis change */
}
END_TEST

START_TEST(other_db_error_retried_then_dlq)
{
        int64_t vid, uid = sk_test_rand_id();
        sk_order_msg_t m, ok;
        char json[SK_MSG_MAX], json_ok[SK_MSG_MAX], tid[SK_ID_STRLEN];
        sk_test_dlq_msg_t dlq[8];
        int n, i, found = 0;

        /* beforeQty beyond the INT column: a valid message the DB refuses (1264, strict
         * mode) on every attempt. Retried --max-db-retries times, then DLQ with the
         * error; no outcome, no Redis change; the next message is applied. */
        vid = sk_test_voucher_open(5);
        ck_assert_int_eq(sk_test_deduct(vid, uid, 0, 0, &m, json), 0);
        m.before_qty = 3000000000LL;
        m.after_qty = m.before_qty - m.deduct_qty;
        sk_msg_format(&m, json, sizeof(json));
        sk_test_produce(vid, json);
        ck_assert_int_eq(sk_test_deduct(vid, sk_test_rand_id(), 0, 0, &ok, json_ok), 0);
        sk_test_produce(vid, json_ok);
        ck_assert_int_eq(wait_outcome(ok.trace_id), SK_OUTCOME_CREATED);
        sk_id_format(m.trace_id, tid);
        n = sk_test_read_dlq(dlq, 8, 10);
        for (i = 0; i < n; i++)
                if (strcmp(dlq[i].trace, tid) == 0) {
                        found = 1;
                        ck_assert_str_eq(dlq[i].kind, "db_error");
                        ck_assert_ptr_nonnull(strstr(dlq[i].error, "1264"));
                }
        ck_assert_msg(found, "no db_error copy of trace %s in the DLQ", tid);
        ck_assert_int_eq(outcome_of(m.trace_id), -1);
        ck_assert(!sk_test_fenced(vid, m.trace_id));
        ck_assert(sk_test_user_is(vid, uid, m.trace_id));
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, vid), 4);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("consumer_apply");
        TCase *tc = tcase_create("apply");
        int rc, status;

        sk_test_fix_setup("cons_apply", &(sk_test_fix_opts_t){ .partitions = 2 });
        {
                /* Two worker threads, one partition each. */
                static const char *const flags[] = { "--workers", "2", NULL };
                g_consumer = sk_test_consumer_start(&(sk_test_spawn_t){ .args = flags }, 1);
        }
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, duplicate_message_one_order);
        tcase_add_test(tc, batch_of_10_with_7_left);
        tcase_add_test(tc, has_order_restores_and_keeps_user);
        tcase_add_test(tc, fenced_trace_fails_front_rollback);
        tcase_add_test(tc, failed_outcome_means_no_order);
        tcase_add_test(tc, db_stock_zero_clamps_redis);
        tcase_add_test(tc, poison_goes_to_dlq_and_worker_continues);
        tcase_add_test(tc, collision_goes_to_dlq);
        tcase_add_test(tc, other_db_error_retried_then_dlq);
        suite_add_tcase(s, tc);
        rc = sk_test_run_nofork(s);
        status = sk_test_stop(g_consumer, 30);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                fprintf(stderr, "consumer did not exit cleanly: status %d\n", status);
                rc = EXIT_FAILURE;
        }
        sk_test_fix_teardown();
        return rc;
}
