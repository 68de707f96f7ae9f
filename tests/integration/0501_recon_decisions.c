/* 0501_recon_decisions.c: the reconciler's decisions for decided and fenced purchases
 * (DESIGN.md 7, 8):
 *   - DB stock exhausted: the re-driven purchase ends FAILED (sold_out), user released,
 *     Redis stock clamped to the DB stock, no restore; the next pass is consistent;
 *   - a FAILED outcome whose rollback never ran: rolled back once with the stored
 *     reason's flags (lost: restore + release; sold_out: release + clamp), never twice;
 *   - a DEDUCT fenced by the front (T + T:r, no outcome): FAILED front_rollback recorded,
 *     stock restored exactly once, consistent;
 *   - meta left at status 4 with nobody holding the voucher lock: reset from the DB;
 *   - a traceId found in the DLQ topic: re-driven once per pass, never counted as
 *     failed, never rolled back, reported (exit 2) even after the group moved past it;
 *     from the second pass on it is counted as stuck in the DLQ re-drive loop
 *     (dlqRedriveLoop per voucher, dlqRedriveLoopTraces for the run). */
#include "sk_test.h"


static void record_failed(const char *json, sk_reason_t reason)
{
        sk_order_msg_t msg;
        sk_outcome_t existing;
        char errstr[512] = "";
        sk_err_t err;

        sk_test_parse_msg(json, &msg);
        err = sk_outcome_fail(sk_test_fx.db, &msg, reason, "test", &existing, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "outcome_fail: %s", errstr);
}

START_TEST(sold_out_redrive)
{
        char out[65536], vs[SK_ID_STRLEN];
        const char *args[] = { "--grace-seconds", "2", "--max-redrive", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        pid_t cons;
        int rc;

        sk_id_format(vid, vs);
        /* The DB sold everything elsewhere (Redis drifted above it). */
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_voucher WHERE voucher_id = %" PRId64, vid), 1);
        {
                char sql[256], errstr[256];
                snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = 0 WHERE voucher_id = %" PRId64, vid);
                ck_assert_int_eq(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)), SK_OK);
        }
        trace = sk_test_admit(vid, user, NULL, NULL, NULL);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
        sk_sleep_ms(2500, NULL);
        cons = sk_test_consumer_start(&(sk_test_spawn_t){ 0 }, 0);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        /* 2 when the pass saw the Redis/DB stock drift before the consumer clamped it. */
        ck_assert_msg(rc == 1 || (rc == 2 && sk_test_report_field(out, vid, "stockDrift") == 1), "exit %d", rc);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
        ck_assert_int_eq(sk_test_wait_outcome(trace, 60), SK_OUTCOME_FAILED);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                              " AND reason = 'sold_out'", trace), 1);
        /* The consumer's rollback: release, clamp to DB stock 0, no restore. */
        {
                int64_t deadline = sk_mono_ms() + 30000;
                while (!sk_test_fenced(vid, trace) && sk_mono_ms() < deadline)
                        sk_sleep_ms(200, NULL);
        }
        ck_assert_int_eq(sk_test_fenced(vid, trace), 1);
        ck_assert_int_eq(sk_test_has_user(vid, user), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64, vid), 0);
        sk_test_stop(cons, 30);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 0);
}
END_TEST

START_TEST(failed_without_rollback_rolled_back_once)
{
        char out[65536], json1[SK_MSG_MAX], json2[SK_MSG_MAX], sql[256], errstr[256];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", NULL, NULL };
        char vs[SK_ID_STRLEN];
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            u1 = sk_test_rand_id(),
                                                            u2 = sk_test_rand_id(), t1, t2;
        int rc;

        sk_id_format(vid, vs);
        args[4] = vs;
        t1 = sk_test_admit(vid, u1, NULL, NULL, json1);
        t2 = sk_test_admit(vid, u2, NULL, NULL, json2);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 3);
        /* Someone recorded FAILED and died before rollback.lua. */
        record_failed(json1, SK_REASON_LOST);
        record_failed(json2, SK_REASON_SOLD_OUT);
        snprintf(sql, sizeof(sql), "UPDATE tb_seckill_stock SET stock = 1 WHERE voucher_id = %" PRId64, vid);
        ck_assert_int_eq(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)), SK_OK);
        sk_sleep_ms(2500, NULL);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 2);
        ck_assert_int_eq(sk_test_fenced(vid, t1), 1);
        ck_assert_int_eq(sk_test_fenced(vid, t2), 1);
        ck_assert_int_eq(sk_test_has_user(vid, u1), 0);   /* lost: released */
        ck_assert_int_eq(sk_test_has_user(vid, u2), 0);   /* sold_out: released */
        /* 3 + 1 restored (lost) = 4, then the sold_out clamp to the DB stock 1 -- the
         * order of the two depends on the scan; either way min(.., 1) = 1 or the clamp
         * first (1) then +1 = 2. */
        {
                int64_t s = sk_test_stock(NULL, NULL, vid);
                ck_assert_msg(s == 1 || s == 2, "stock %" PRId64, s);
        }
        ck_assert_msg(rc == 1 || rc == 2, "exit %d", rc);

        /* Once only. */
        {
                int64_t before = sk_test_stock(NULL, NULL, vid);
                rc = sk_test_reconcile(args, NULL, out, sizeof(out));
                ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), 2);
                ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), before);
        }
}
END_TEST

START_TEST(front_fence_recorded)
{
        char out[65536], vs[SK_ID_STRLEN], errstr[512] = "";
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", NULL, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        sk_rollback_res_t res;
        int rc;

        sk_id_format(vid, vs);
        args[4] = vs;
        trace = sk_test_admit(vid, user, NULL, NULL, NULL);
        ck_assert_int_eq(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, vid, 0, trace, user, "front",
                                         SK_REASON_FRONT_ROLLBACK, -1,
                                         sk_expire_extra_ms(sk_test_fx.conf.reconcile_window_hours), &res,
                                         errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
        sk_sleep_ms(2500, NULL);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "fencedRecorded"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                              " AND outcome = 2 AND reason = 'front_rollback'", trace), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                              " AND log_type = 1", trace), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "fencedRecorded"), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
}
END_TEST

START_TEST(paused_meta_reset)
{
        char out[65536], vs[SK_ID_STRLEN], key[SK_KEY_MAX], errstr[256];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", NULL, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 });
        redisReply *reply = NULL;
        int rc;

        sk_id_format(vid, vs);
        args[4] = vs;
        sk_key_voucher(key, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_META);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HSET %s status 4", key), SK_OK);
        freeReplyObject(reply);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "metaReset"), 1);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HGET %s status", key), SK_OK);
        ck_assert_str_eq(reply->str, "1");
        freeReplyObject(reply);
}
END_TEST

/* Commit the high watermark of every partition for the group (as consumers would). */
static void commit_all(void)
{
        char errstr[512] = "";
        rd_kafka_conf_t *kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr));
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(sk_test_fx.conf.topic_partitions);
        rd_kafka_t *rk;
        rd_kafka_resp_err_t e;

        ck_assert_msg(kconf != NULL, "%s", errstr);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        for (int p = 0; p < sk_test_fx.conf.topic_partitions; p++) {
                int64_t lo = 0, hi = 0;
                e = rd_kafka_query_watermark_offsets(rk, sk_test_fx.conf.topic, p, &lo, &hi, 10000);
                ck_assert_msg(e == 0, "watermarks: %s", rd_kafka_err2str(e));
                rd_kafka_topic_partition_list_add(parts, sk_test_fx.conf.topic, p)->offset = hi;
        }
        e = rd_kafka_commit(rk, parts, 0 /* sync */);
        ck_assert_msg(e == 0, "commit: %s", rd_kafka_err2str(e));
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
}

START_TEST(dlq_trace_never_counted)
{
        char out[65536], vs[SK_ID_STRLEN], json[SK_MSG_MAX];
        const char *args[] = { "--grace-seconds", "2", "--max-redrive", "1", "--json", "--voucher", NULL, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        char *msgs[1] = { json };
        sk_conf_t dlq_conf;
        int rc, pass;

        sk_id_format(vid, vs);
        args[6] = vs;
        trace = sk_test_admit(vid, user, NULL, NULL, json);
        /* The consumer's DLQ copy of this purchase (same value). */
        dlq_conf = sk_test_fx.conf;
        memcpy(dlq_conf.topic, sk_test_fx.conf.dlq_topic, sizeof(dlq_conf.topic) - 1);
        dlq_conf.topic[sizeof(dlq_conf.topic) - 1] = '\0';
        {
                sk_conf_t saved = sk_test_fx.conf;
                sk_test_fx.conf = dlq_conf;
                sk_test_publish(vid, msgs, 1);
                sk_test_fx.conf = saved;
        }
        sk_sleep_ms(2500, NULL);
        for (pass = 0; pass < 3; pass++) {
                rc = sk_test_reconcile(args, NULL, out, sizeof(out));
                ck_assert_int_eq(rc, 2);
                ck_assert_int_eq(sk_test_report_field(out, vid, "dlq"), 1);
                ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
                ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
                ck_assert_int_eq(sk_test_report_field(out, vid, "failedCounted"), 0);
                /* Stuck in the DLQ re-drive loop: re-driven by an earlier pass and
                 * back in the DLQ (the first pass has not re-driven it yet). */
                ck_assert_int_eq(sk_test_report_field(out, vid, "dlqRedriveLoop"), (pass ? 1 : 0));
                ck_assert_ptr_nonnull(strstr(out, pass ? "\"dlqRedriveLoopTraces\":1"
                                                       : "\"dlqRedriveLoopTraces\":0"));
                commit_all(); /* the group "consumed" past every re-drive */
        }
        ck_assert_int_eq(sk_test_outcome(trace), 0);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 0);
        ck_assert_int_eq(sk_test_has_user(vid, user), 1);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
}
END_TEST

/* A voucher that ended 68 h ago (window 48 h + 1 day = its keys live 72 h past the end)
 * still has an undecided purchase: the trace hash expires in about 4 h -> alert, exit 2. */
START_TEST(undecided_near_expiry_alerts)
{
        char out[65536], vs[SK_ID_STRLEN], sql[512], errstr[512] = "", meta[SK_KEY_MAX];
        char trace_key[SK_KEY_MAX], f[SK_ID_STRLEN], v[SK_MSG_MAX];
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_rand_id(), now = sk_now_ms();
        int64_t end_ms = now - INT64_C(68) * 3600 * 1000;
        int64_t e_ms = end_ms + sk_expire_extra_ms(sk_test_fx.conf.reconcile_window_hours);
        sk_order_msg_t m = { sk_test_rand_id(), sk_test_rand_id(), sk_test_rand_id(), vid, 5, 1, 4,
                             end_ms - 60000, 0, 0 };
        redisReply *reply = NULL;
        int rc;

        sk_id_format(vid, vs);
        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time, end_time, status)"
                 " VALUES (%" PRId64 ", 5, UTC_TIMESTAMP(3) - INTERVAL 70 HOUR,"
                 " UTC_TIMESTAMP(3) - INTERVAL 68 HOUR, 1)", vid);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, "INSERT IGNORE INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)"
                 " SELECT voucher_id, 0, init_stock, init_stock FROM tb_seckill_voucher", errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        sk_key_voucher(meta, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_META);
        sk_key_voucher(trace_key, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr),
                                       "HSET %s begin_ms %" PRId64 " end_ms %" PRId64 " status 1", meta,
                                       end_ms - INT64_C(2) * 3600 * 1000, end_ms), SK_OK);
        freeReplyObject(reply);
        sk_id_format(m.trace_id, f);
        sk_msg_format(&m, v, sizeof(v));
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "HSET %s %s %s", trace_key,
                                       f, v), SK_OK);
        freeReplyObject(reply);
        ck_assert_int_eq(sk_redis_cmdf(sk_test_fx.r, &reply, errstr, sizeof(errstr), "PEXPIREAT %s %" PRId64,
                                       trace_key, e_ms), SK_OK);
        freeReplyObject(reply);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 2);
        ck_assert_int_eq(sk_test_report_field(out, vid, "expiryAlert"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
}
END_TEST

/* Re-drives that the group consumed past without any outcome (here: the group's offsets
 * moved to the end, as if the messages were lost) count as failed; after --max-redrive
 * counted failures the purchase is FAILED (lost), then rolled back: stock restored, user
 * released, fence written, RESTORE row recorded. */
START_TEST(redrives_exhausted_lost)
{
        char out[65536], vs[SK_ID_STRLEN];
        const char *args[] = { "--grace-seconds", "2", "--max-redrive", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        int rc;

        sk_id_format(vid, vs);
        trace = sk_test_admit(vid, user, NULL, NULL, NULL);
        sk_sleep_ms(2500, NULL);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));            /* re-drive 1 */
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));            /* nobody consumed: wait */
        ck_assert_int_eq(rc, 2);
        ck_assert_int_eq(sk_test_report_field(out, vid, "waiting"), 1);
        commit_all();
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));            /* failed 1, re-drive 2 */
        ck_assert_int_eq(sk_test_report_field(out, vid, "failedCounted"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
        ck_assert_int_eq(sk_test_outcome(trace), 0);
        commit_all();
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));            /* failed 2 = max: lost */
        ck_assert_int_eq(rc, 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "failedCounted"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "lost"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64
                              " AND outcome = 2 AND reason = 'lost'", trace), 1);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                              " AND log_type = 1", trace), 1);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 1);
        ck_assert_int_eq(sk_test_has_user(vid, user), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 5);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
}
END_TEST

/* An outcome row whose ids differ from the DEDUCT of its traceId is an id collision:
 * reported (exit 2), never followed (no rollback). */
START_TEST(outcome_collision_reported)
{
        char out[65536], vs[SK_ID_STRLEN], sql[512], errstr[512] = "";
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = 5, .db_stock = 5,
                                                            .db_status = 1, .preheat = 1 }),
                                                            user = sk_test_rand_id(), trace;
        int rc;

        sk_id_format(vid, vs);
        trace = sk_test_admit(vid, user, NULL, NULL, NULL);
        snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id,"
                 " outcome, reason) VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 2, 'lost')",
                 trace, sk_test_rand_id(), sk_test_rand_id(), vid);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        sk_sleep_ms(2500, NULL);
        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 2);
        ck_assert_int_eq(sk_test_report_field(out, vid, "collisions"), 1);
        ck_assert_int_eq(sk_test_report_field(out, vid, "rolledBack"), 0);
        ck_assert_int_eq(sk_test_fenced(vid, trace), 0);
        ck_assert_int_eq(sk_test_stock(NULL, NULL, vid), 4);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0501_recon_decisions");
        TCase *tc = tcase_create("decisions");
        int rc;

        sk_test_fix_setup("recon_decide", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                 .delivery_timeout_ms = 500,
                                                                 .lock_wait_s = 5 });
        tcase_set_timeout(tc, 240);
        /* First: it commits offsets for the group, which needs a group without members. */
        tcase_add_test(tc, dlq_trace_never_counted);
        tcase_add_test(tc, redrives_exhausted_lost);
        tcase_add_test(tc, outcome_collision_reported);
        tcase_add_test(tc, sold_out_redrive);
        tcase_add_test(tc, failed_without_rollback_rolled_back_once);
        tcase_add_test(tc, front_fence_recorded);
        tcase_add_test(tc, paused_meta_reset);
        tcase_add_test(tc, undecided_near_expiry_alerts);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
