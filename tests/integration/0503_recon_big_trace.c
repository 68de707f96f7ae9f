/* 0503_recon_big_trace.c: a trace hash of 50,000 DEDUCT entries (10,000 under ASan), every one decided
 * CREATED in the database (bulk INSERTs) and preheated consistently: one pass (HSCAN
 * until cursor 0, batched joins) judges all of them consistent, marks every DEDUCT
 * reconcile-log row consistent (4), reports no drift and exits 0; a second pass has
 * nothing left to mark. Entries are written with a pipelined HSET. */
#include "sk_test.h"
#include "sk/verify.h"
#include "sk/rebuild.h"

/* Under AddressSanitizer each entry costs the reconciler several times the CPU: a pass
 * over 50,000 took 171 s beside other jobs (load 15) and the second pass hit the
 * timeout. The sanitizer run keeps every path (many HSCAN rounds, batched joins, the
 * bulk marks) with a fifth of the entries; the plain run keeps 50,000. */
#if defined(__SANITIZE_ADDRESS__)
#define N_ENTRIES 10000
#else
#define N_ENTRIES 50000
#endif
#define ROWS_PER_INSERT 1000

static void bulk_db(int64_t vid, int64_t trace0, int64_t order0, int64_t user0, int64_t left)
{
        size_t cap = (size_t)ROWS_PER_INSERT * 256 + 512;
        char *sql = malloc(cap), errstr[512] = "";
        int table, i, j;

        ck_assert_ptr_nonnull(sql);
        snprintf(sql, cap,
                 "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time, end_time, status)"
                 " VALUES (%" PRId64 ", %d, UTC_TIMESTAMP(3) - INTERVAL 1 HOUR,"
                 " UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, 1)", vid, (int)(N_ENTRIES + left));
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        snprintf(sql, cap, "INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)"
                 " VALUES (%" PRId64 ", 0, %d, %" PRId64 ")", vid, (int)(N_ENTRIES + left), left);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        for (table = 0; table < 3; table++) {
                for (i = 0; i < N_ENTRIES; i += ROWS_PER_INSERT) {
                        size_t len;
                        if (table == 0)
                                len = (size_t)snprintf(sql, cap, "INSERT INTO tb_seckill_outcome"
                                        " (trace_id, order_id, user_id, voucher_id, outcome) VALUES ");
                        else if (table == 1)
                                len = (size_t)snprintf(sql, cap, "INSERT INTO tb_voucher_order"
                                        " (id, user_id, voucher_id, trace_id, status) VALUES ");
                        else
                                len = (size_t)snprintf(sql, cap, "INSERT INTO tb_voucher_reconcile_log"
                                        " (order_id, user_id, voucher_id, message_id, before_qty, change_qty,"
                                        " after_qty, trace_id, log_type, business_type, reconciliation_status) VALUES ");
                        for (j = i; j < i + ROWS_PER_INSERT && j < N_ENTRIES; j++) {
                                int64_t t = trace0 + j, o = order0 + j, u = user0 + j;
                                const char *sep = j > i ? "," : "";
                                if (table == 0)
                                        len += (size_t)snprintf(sql + len, cap - len, "%s(%" PRId64 ",%" PRId64
                                                ",%" PRId64 ",%" PRId64 ",1)", sep, t, o, u, vid);
                                else if (table == 1)
                                        len += (size_t)snprintf(sql + len, cap - len, "%s(%" PRId64 ",%" PRId64
                                                ",%" PRId64 ",%" PRId64 ",1)", sep, o, u, vid, t);
                                else
                                        len += (size_t)snprintf(sql + len, cap - len, "%s(%" PRId64 ",%" PRId64
                                                ",%" PRId64 ",'%" PRId64 "',%d,1,%d,%" PRId64 ",-1,1,1)", sep,
                                                o, u, vid, t, N_ENTRIES + (int)left - j, N_ENTRIES + (int)left - j - 1, t);
                        }
                        ck_assert_msg(sk_db_exec(sk_test_fx.db, sql, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
                }
        }
        free(sql);
}

static void bulk_trace(int64_t vid, int64_t trace0, int64_t order0, int64_t user0, int64_t left)
{
        char key[SK_KEY_MAX], f[32], v[SK_MSG_MAX];
        sk_redis_pipe_t *pp = sk_redis_pipe_new(sk_test_fx.r);
        int64_t ts = sk_now_ms() - 60000;
        int i;

        sk_key_voucher(key, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        for (i = 0; i < N_ENTRIES; i++) {
                sk_order_msg_t m = { trace0 + i, order0 + i, user0 + i, vid,
                                     N_ENTRIES + left - i, 1, N_ENTRIES + left - i - 1, ts, 0, 0 };
                snprintf(f, sizeof(f), "%" PRId64, m.trace_id);
                sk_msg_format(&m, v, sizeof(v));
                {
                        const char *argv[4] = { "HSET", key, f, v };
                        ck_assert_int_ge(sk_redis_pipe_add(pp, 4, argv, NULL), 0);
                }
        }
        ck_assert_int_eq(sk_redis_pipe_exec(pp), 0); /* routed pipeline: any topology */
        sk_redis_pipe_free(pp);
}

START_TEST(fifty_thousand_entries)
{
        char out[65536], vs[SK_ID_STRLEN], errstr[512] = "";
        const char *args[] = { "--grace-seconds", "2", "--json", "--voucher", vs, NULL };
        int64_t vid = sk_test_rand_id();
        int64_t trace0 = (sk_test_rand_id() % (INT64_C(1) << 60)) + 1;
        int64_t order0 = (sk_test_rand_id() % (INT64_C(1) << 60)) + 1;
        int64_t user0 = (sk_test_rand_id() % (INT64_C(1) << 60)) + 1;
        sk_rebuild_report_t rep;
        sk_verify_report_t vr;
        sk_err_t err;
        int rc;

        sk_id_format(vid, vs);
        bulk_db(vid, trace0, order0, user0, 10);
        /* Preheat from the DB (stock 10, 50,000 buyers in the users hash). */
        err = sk_voucher_preheat(&sk_test_fx.conf, vid, 10000, &rep, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "preheat: %s", errstr);
        bulk_trace(vid, trace0, order0, user0, 10);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "entries"), N_ENTRIES);
        ck_assert_int_eq(sk_test_report_field(out, vid, "checked"), N_ENTRIES);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), N_ENTRIES);
        ck_assert_int_eq(sk_test_report_field(out, vid, "logMarkedConsistent"), N_ENTRIES);
        ck_assert_int_eq(sk_test_report_field(out, vid, "inconsistent"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "drift"), 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "redriven"), 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64
                              " AND log_type = -1 AND reconciliation_status = 4", vid), N_ENTRIES);

        rc = sk_test_reconcile(args, NULL, out, sizeof(out));
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(sk_test_report_field(out, vid, "consistent"), N_ENTRIES);
        ck_assert_int_eq(sk_test_report_field(out, vid, "logMarkedConsistent"), 0);

        err = sk_verify_voucher(&sk_test_fx.conf, vid, &vr, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "verify: %s", errstr);
        ck_assert_int_eq(vr.active_orders, N_ENTRIES);
        ck_assert_int_eq(vr.users_in_hash, N_ENTRIES);
        ck_assert_int_eq(vr.trace_entries, N_ENTRIES);
        ck_assert_int_eq(vr.undecided_traces, 0);
        ck_assert_msg(vr.ok, "verify failed");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0503_recon_big_trace");
        TCase *tc = tcase_create("big");
        int rc;

        sk_test_fix_setup("recon_big", &(sk_test_fix_opts_t){ .partitions = 2,
                                                              .delivery_timeout_ms = 500,
                                                              .lock_wait_s = 5 });
        tcase_set_timeout(tc, 280);
        tcase_add_test(tc, fifty_thousand_entries);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
