/* 0312_consumer_batch_reads.c: what one consumer batch and one closer round cost the book
 * of record, counted by MariaDB itself (docs/SCALING.md "What one batch costs the
 * database"): the session's Handler_read_key and Handler_read_next around each call, on
 * the connection that runs it, against the real MariaDB. Counts, not times: they hold at
 * any load.
 *   - cons_apply_batch of 500 orders (consumer/apply.c, linked from consumer_core): a
 *     few primary-key reads per transaction (the voucher's price, the bucket row), none
 *     per order, no index scan; every order copies the voucher's price and currency
 *     (250 USD), UNPAID with the pay window (DESIGN.md 13);
 *   - a pay timeout of 0: a price-0 voucher's orders are created PAID (paid_at set, no
 *     deadline), a priced one's UNPAID with the default 900 s window (400 EUR copied);
 *     a message whose voucher row is missing is APPLY_NO_VOUCHER, nothing written;
 *   - the closer (sk_order_close_due, sk_order_overdue_oldest_s) over 2,000 UNPAID orders
 *     not yet due and 3 due: it reads the due ones only, closes exactly those, and a
 *     round with nothing due reads no order row at all.
 * The figures are printed; the bounds are the per-transaction constants, so a per-order
 * read (a sub-query per row) or a scan of every UNPAID order fails them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk_test.h"
#include "sk/db.h"
#include "sk/order.h"
#include "consumer.h"

/* consumer_core's objects that the apply code reaches name the process's stop flag. */
volatile sig_atomic_t g_stop;

#define N 500

typedef struct reads {
        int64_t key, next;
} reads_t;

/* The session's Handler_read_key and Handler_read_next on @p db (information_schema's
 * SESSION_STATUS: reading it costs neither). */
static reads_t session_reads(sk_db_t *db)
{
        char errstr[256] = "";
        reads_t r = { -1, -1 };

        ck_assert_msg(sk_db_i64(db, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS"
                                " WHERE VARIABLE_NAME = 'HANDLER_READ_KEY'", SK_NOARGS, &r.key, NULL,
                                errstr, sizeof(errstr)) == SK_OK, "read_key: %s", errstr);
        ck_assert_msg(sk_db_i64(db, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS"
                                " WHERE VARIABLE_NAME = 'HANDLER_READ_NEXT'", SK_NOARGS, &r.next, NULL,
                                errstr, sizeof(errstr)) == SK_OK, "read_next: %s", errstr);
        return r;
}

static reads_t reads_since(sk_db_t *db, reads_t before)
{
        reads_t now = session_reads(db);

        return (reads_t){ now.key - before.key, now.next - before.next };
}

static sk_db_t *db_or_fail(void)
{
        char errstr[512] = "";
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr));

        ck_assert_msg(db != NULL, "connect: %s", errstr);
        return db;
}

/* A voucher on sale with one bucket row of @p stock units, priced @p price in @p cur. */
static int64_t voucher(int64_t stock, int64_t price, const char *cur)
{
        int64_t vid = sk_test_rand_id() % INT64_C(1000000000000) + 1;

        sk_test_exec("INSERT INTO tb_seckill_voucher (voucher_id, init_stock, buckets, begin_time, end_time,"
                     " status, price_minor, currency) VALUES (%" PRId64 ", %" PRId64 ", 1, NOW(3),"
                     " NOW(3) + INTERVAL 1 HOUR, 1, %" PRId64 ", '%s')", vid, stock, price, cur);
        sk_test_exec("INSERT INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock) VALUES"
                     " (%" PRId64 ", 0, %" PRId64 ", %" PRId64 ")", vid, stock, stock);
        return vid;
}

/* @p n messages of voucher @p vid with fresh ids; msgs/ptrs caller-owned (n entries). */
static void messages(int64_t vid, sk_order_msg_t *msgs, const sk_order_msg_t **ptrs, int n)
{
        int64_t base = sk_test_rand_id() % INT64_C(1000000000000000) + 1;

        for (int i = 0; i < n; i++) {
                memset(&msgs[i], 0, sizeof(msgs[i]));
                msgs[i].trace_id = base + i;
                msgs[i].order_id = base + 3 * n + i;
                msgs[i].user_id = base + 6 * n + i;
                msgs[i].voucher_id = vid;
                msgs[i].before_qty = n - i;
                msgs[i].deduct_qty = 1;
                msgs[i].after_qty = n - i - 1;
                ptrs[i] = &msgs[i];
        }
}

START_TEST(batch_reads_per_transaction)
{
        static sk_order_msg_t msgs[N];
        static const sk_order_msg_t *ptrs[N];
        static sk_outcome_t known[N];
        sk_db_t *db = db_or_fail();
        cons_apply_t *ap = cons_apply_new(db, N);
        int64_t vid = voucher(10000, 250, "USD");
        char errstr[512] = "";
        int nknown = -1;
        reads_t r0, d;
        sk_err_t err;

        ck_assert_ptr_nonnull(ap);
        cons_apply_set_pay_timeout(600);
        /* A first batch opens the tables (the server reads their statistics once) and
         * prepares the statements: counted from the second one on. */
        messages(vid, msgs, ptrs, N);
        err = cons_apply_batch(ap, ptrs, N, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "first batch: %s", errstr);
        messages(vid, msgs, ptrs, N);
        /* The pre-check (DESIGN.md 7): one primary-key read per traceId at most. */
        r0 = session_reads(db);
        err = cons_apply_known(ap, ptrs, N, known, &nknown, errstr, sizeof(errstr));
        d = reads_since(db, r0);
        ck_assert_msg(err == SK_OK, "known: %s", errstr);
        ck_assert_int_eq(nknown, 0);
        printf("pre-check of %d: read_key=%" PRId64 " read_next=%" PRId64 "\n", N, d.key, d.next);
        ck_assert_int_le(d.key, N);
        ck_assert_int_eq(d.next, 0);
        /* The transaction: per-transaction reads only (price, bucket row), no scan. */
        r0 = session_reads(db);
        err = cons_apply_batch(ap, ptrs, N, errstr, sizeof(errstr));
        d = reads_since(db, r0);
        ck_assert_msg(err == SK_OK, "batch: %s", errstr);
        printf("batch of %d: read_key=%" PRId64 " read_next=%" PRId64 "\n", N, d.key, d.next);
        ck_assert_int_le(d.key, 4);
        ck_assert_int_eq(d.next, 0);

        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                                     " AND status = 1 AND amount_minor = 250 AND currency = 'USD'"
                                     " AND paid_at IS NULL AND pay_deadline BETWEEN create_time +"
                                     " INTERVAL 590 SECOND AND create_time + INTERVAL 610 SECOND", vid),
                         2 * N);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid),
                         10000 - 2 * N);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE voucher_id = %" PRId64
                                     " AND outcome = 1", vid), 2 * N);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE voucher_id = %" PRId64
                                     " AND log_type = -1", vid), 2 * N);
        cons_apply_destroy(ap);
        sk_db_close(db);
}
END_TEST

START_TEST(pay_timeout_zero_kinds)
{
        sk_order_msg_t msgs[3];
        const sk_order_msg_t *ptrs[3];
        sk_db_t *db = db_or_fail();
        cons_apply_t *ap = cons_apply_new(db, 8);
        int64_t free_v = voucher(10, 0, "CNY"), priced_v = voucher(10, 400, "EUR");
        char errstr[512] = "";

        ck_assert_ptr_nonnull(ap);
        cons_apply_set_pay_timeout(0);
        messages(free_v, msgs, ptrs, 3);
        ck_assert_msg(cons_apply_batch(ap, ptrs, 3, errstr, sizeof(errstr)) == SK_OK, "free: %s", errstr);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                                     " AND status = 2 AND paid_at IS NOT NULL AND pay_deadline IS NULL"
                                     " AND amount_minor = 0 AND currency = 'CNY'", free_v), 3);
        messages(priced_v, msgs, ptrs, 3);
        ck_assert_msg(cons_apply_batch(ap, ptrs, 2, errstr, sizeof(errstr)) == SK_OK, "priced: %s", errstr);
        ck_assert_int_eq(cons_apply_one(ap, ptrs[2], errstr, sizeof(errstr)), APPLY_OK);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                                     " AND status = 1 AND paid_at IS NULL AND amount_minor = 400"
                                     " AND currency = 'EUR' AND pay_deadline BETWEEN create_time +"
                                     " INTERVAL 890 SECOND AND create_time + INTERVAL 910 SECOND",
                                     priced_v), 3);
        /* A message whose voucher row is gone (its bucket row still there): nothing
         * written, told apart from a short stock. */
        sk_test_exec("DELETE FROM tb_seckill_voucher WHERE voucher_id = %" PRId64, priced_v);
        messages(priced_v, msgs, ptrs, 1);
        ck_assert_int_eq(cons_apply_one(ap, ptrs[0], errstr, sizeof(errstr)), APPLY_NO_VOUCHER);
        ck_assert_int_eq(cons_apply_batch(ap, ptrs, 1, errstr, sizeof(errstr)), SK_ENOTFOUND);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_seckill_outcome WHERE trace_id = %" PRId64,
                                     msgs[0].trace_id), 0);
        cons_apply_set_pay_timeout(600);
        cons_apply_destroy(ap);
        sk_db_close(db);
}
END_TEST

START_TEST(closer_reads_due_orders_only)
{
        sk_db_t *db = db_or_fail();
        int64_t vid = voucher(3000, 0, "CNY"), base = sk_test_rand_id() % INT64_C(1000000000000000) + 1;
        sk_order_row_t *rows = NULL;
        char errstr[512] = "";
        size_t n = 0;
        int64_t overdue = -1;
        reads_t r0, d;

        /* 2,000 UNPAID orders due in an hour, 3 due a minute ago (their units sold). */
        sk_test_exec("INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, bucket, status,"
                     " pay_deadline) SELECT %" PRId64 " + seq, %" PRId64 " + seq, %" PRId64 ", %" PRId64
                     " + seq, 0, 1, NOW(3) + INTERVAL IF(seq <= 3, -60, 3600) SECOND FROM seq_1_to_2003",
                     base, base + 10000, vid, base + 20000);
        sk_test_exec("UPDATE tb_seckill_stock SET stock = stock - 2003 WHERE voucher_id = %" PRId64, vid);

        r0 = session_reads(db);
        ck_assert_msg(sk_order_overdue_oldest_s(db, 0, &overdue, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        d = reads_since(db, r0);
        printf("overdue gauge: read_key=%" PRId64 " read_next=%" PRId64 "\n", d.key, d.next);
        ck_assert_int_ge(overdue, 59);
        ck_assert_int_le(d.key + d.next, 8);

        r0 = session_reads(db);
        ck_assert_msg(sk_order_close_due(db, 500, 0, &rows, &n, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        d = reads_since(db, r0);
        printf("closer round, 3 due of 2003 UNPAID: read_next=%" PRId64 "\n", d.next);
        ck_assert_uint_eq(n, 3);
        for (size_t i = 0; i < n; i++)
                ck_assert_int_le(rows[i].order_id, base + 3);
        free(rows);
        /* The 3 due rows (the scan reads each once), the bucket row's update, the
         * RESTORE rows: never the 2,000 not due. */
        ck_assert_int_le(d.next, 8);

        r0 = session_reads(db);
        ck_assert_msg(sk_order_close_due(db, 500, 0, &rows, &n, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        d = reads_since(db, r0);
        printf("closer round, nothing due: read_key=%" PRId64 " read_next=%" PRId64 "\n", d.key, d.next);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_le(d.key, 2);
        ck_assert_int_eq(d.next, 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                                     " AND status = 4", vid), 3);
        ck_assert_int_eq(sk_test_i64("SELECT stock FROM tb_seckill_stock WHERE voucher_id = %" PRId64, vid),
                         3000 - 2000);
        sk_db_close(db);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("batch_reads", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("consumer_batch_reads");
        TCase *tc = tcase_create("reads");

        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, batch_reads_per_transaction);
        tcase_add_test(tc, pay_timeout_zero_kinds);
        tcase_add_test(tc, closer_reads_due_orders_only);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
