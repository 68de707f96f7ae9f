/* 0311_order_pay_close_race.c: pay racing the closer on the same order (DESIGN.md 8 "pay
 * after the deadline or after close", 9 invariant 6, 13), against the real MariaDB, 300
 * times: an UNPAID order whose deadline is 30 ms away; one thread pays it through the
 * payment callback's transaction (sk_payment_decide, grace 0: past the deadline it
 * closes the order on the spot and records refund_due), another runs the closer's batch
 * (sk_order_close_due) until the order is no longer UNPAID; both start after random
 * delays around the deadline. Exactly one wins each time: PAID with no RESTORE row and
 * no unit back, or CLOSED with one RESTORE row (business_type 5), its unit back, and a
 * payer that was told "closed". Also: cancel racing the closer (one RESTORE, one unit).
 * Each thread has its own connection. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/order.h"
#include "sk/payment.h"

#define ROUNDS 300
#define VOUCHER INT64_C(4242)


typedef struct racer {
        sk_db_t *db;
        pthread_barrier_t *start;
        int64_t order_id, user_id;
        int delay_us;
        int kind;               /* 0 payer, 1 closer, 2 canceller */
        /* results */
        int paid, told_closed, closed_by_me, cancelled_by_me, errors;
} racer_t;

static sk_db_t *db_or_fail(void)
{
        char errstr[512] = "";
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr));

        ck_assert_msg(db != NULL, "connect: %s", errstr);
        return db;
}

static int64_t q(sk_db_t *db, const char *fmt, int64_t a)
{
        char sql[512], errstr[256] = "";
        int64_t v = -1;
        sk_err_t err;

        snprintf(sql, sizeof(sql), fmt, a);
        err = sk_db_query_i64(db, sql, &v, NULL, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "%s: %s", sql, errstr);
        return v;
}

static void exec_or_fail(sk_db_t *db, const char *sql)
{
        char errstr[256] = "";

        ck_assert_msg(sk_db_exec(db, sql, errstr, sizeof(errstr)) == SK_OK, "%s: %s", sql, errstr);
}

static void *racer_main(void *arg)
{
        racer_t *r = arg;
        char errstr[256];
        int64_t until;

        pthread_barrier_wait(r->start);
        if (r->delay_us)
                sk_sleep_ms(r->delay_us / 1000, NULL);
        if (r->kind == 0) {
                sk_payment_t pay = { .attempt_id = sk_test_rand_id(), .order_id = r->order_id,
                                     .amount_minor = 0, .currency = "CNY" };
                sk_payment_res_t res;
                sk_err_t err;

                snprintf(pay.txn_id, sizeof(pay.txn_id), "t0311-%" PRId64, r->order_id);
                while ((err = sk_payment_decide(r->db, &pay, 0, &res, errstr, sizeof(errstr))) ==
                       SK_EAGAIN)
                        ;
                if (err) {
                        r->errors++;
                        return NULL;
                }
                if (res.verdict == SK_PAYV_APPLIED) {
                        r->paid = 1;
                } else {
                        /* late: closed on the spot in the payment's transaction */
                        r->closed_by_me = res.closed_now;
                        r->told_closed = res.verdict == SK_PAYV_REFUND_DUE &&
                                         (res.reason == SK_PAYREASON_LATE ||
                                          res.reason == SK_PAYREASON_CLOSED);
                        if (!r->told_closed)
                                r->errors++;
                }
                return NULL;
        }
        if (r->kind == 2) {
                sk_order_row_t o;
                int changed = 0;
                sk_err_t err;

                while ((err = sk_order_end(r->db, r->order_id, r->user_id, SK_ORDER_CANCELLED, 0,
                                           &changed, &o, errstr, sizeof(errstr))) == SK_EAGAIN)
                        ;
                if (err)
                        r->errors++;
                r->cancelled_by_me = changed;
                return NULL;
        }
        /* The closer: batches until the order is no longer UNPAID (bounded). */
        until = sk_mono_ms() + 3000;
        while (sk_mono_ms() < until) {
                sk_order_row_t *rows = NULL;
                size_t n = 0, i;
                sk_err_t err = sk_order_close_due(r->db, 500, 0, &rows, &n, errstr, sizeof(errstr));

                if (err == SK_EAGAIN)
                        continue;
                if (err) {
                        r->errors++;
                        break;
                }
                for (i = 0; i < n; i++)
                        if (rows[i].order_id == r->order_id)
                                r->closed_by_me = 1;
                free(rows);
                if (r->closed_by_me || q(r->db, "SELECT status FROM tb_voucher_order WHERE id = %" PRId64,
                                         r->order_id) != 1)
                        break;
                sk_sleep_ms(1, NULL);
        }
        return NULL;
}

static void new_order(sk_db_t *db, int64_t id, int deadline_ms)
{
        char sql[512];

        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, status, pay_deadline)"
                 " VALUES (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", 1,"
                 " NOW(3) + INTERVAL %d MICROSECOND)", id, id, VOUCHER, id + 1000000, deadline_ms * 1000);
        exec_or_fail(db, sql);
}

static void run(sk_db_t *main_db, int kind_a, int rounds, int *wins_a, int *wins_b)
{
        sk_db_t *da = db_or_fail(), *dbb = db_or_fail();
        unsigned seed = (unsigned)time(NULL);
        int i;

        for (i = 0; i < rounds; i++) {
                pthread_barrier_t bar;
                pthread_t ta, tb;
                racer_t a, b;
                int64_t id = (kind_a == 0 ? 1 : 100001) + i;
                int64_t st, restores, stock0;

                stock0 = q(main_db, "SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64, VOUCHER);
                new_order(main_db, id, kind_a == 0 ? 30 : 0);
                memset(&a, 0, sizeof(a));
                memset(&b, 0, sizeof(b));
                pthread_barrier_init(&bar, NULL, 2);
                a.db = da;
                b.db = dbb;
                a.start = b.start = &bar;
                a.order_id = b.order_id = id;
                a.user_id = b.user_id = id;
                a.kind = kind_a;
                b.kind = 1;
                a.delay_us = (int)(rand_r(&seed) % 60) * 1000;
                b.delay_us = (int)(rand_r(&seed) % 60) * 1000;
                pthread_create(&ta, NULL, racer_main, &a);
                pthread_create(&tb, NULL, racer_main, &b);
                pthread_join(ta, NULL);
                pthread_join(tb, NULL);
                pthread_barrier_destroy(&bar);
                ck_assert_int_eq(a.errors + b.errors, 0);

                st = q(main_db, "SELECT status FROM tb_voucher_order WHERE id = %" PRId64, id);
                restores = q(main_db, "SELECT COUNT(*) FROM tb_voucher_reconcile_log WHERE trace_id = %" PRId64
                             " AND log_type = 1", id + 1000000);
                if (kind_a == 0) {
                        /* Exactly one wins. */
                        ck_assert_msg(a.paid != (b.closed_by_me || a.closed_by_me),
                                      "round %d: paid=%d closer=%d pay-close=%d", i, a.paid,
                                      b.closed_by_me, a.closed_by_me);
                        ck_assert_int_eq(b.closed_by_me && a.closed_by_me, 0);
                        if (a.paid) {
                                ck_assert_int_eq(st, SK_ORDER_PAID);
                                ck_assert_int_eq(restores, 0);
                                ck_assert_int_eq(q(main_db, "SELECT paid_at <= pay_deadline FROM tb_voucher_order"
                                                   " WHERE id = %" PRId64, id), 1);
                                (*wins_a)++;
                        } else {
                                ck_assert_int_eq(st, SK_ORDER_CLOSED);
                                ck_assert_int_eq(a.told_closed, 1);
                                ck_assert_int_eq(restores, 1);
                                (*wins_b)++;
                        }
                } else {
                        ck_assert_msg(a.cancelled_by_me != b.closed_by_me, "round %d: cancel=%d close=%d",
                                      i, a.cancelled_by_me, b.closed_by_me);
                        ck_assert_int_eq(st, a.cancelled_by_me ? SK_ORDER_CANCELLED : SK_ORDER_CLOSED);
                        ck_assert_int_eq(restores, 1);
                        if (a.cancelled_by_me)
                                (*wins_a)++;
                        else
                                (*wins_b)++;
                }
                ck_assert_int_eq(q(main_db, "SELECT stock FROM tb_seckill_stock WHERE bucket = 0 AND voucher_id = %" PRId64,
                                   VOUCHER), stock0 + restores);
        }
        sk_db_close(da);
        sk_db_close(dbb);
}

START_TEST(pay_races_closer)
{
        sk_db_t *db = db_or_fail();
        int paid = 0, closed = 0;

        run(db, 0, ROUNDS, &paid, &closed);
        printf("pay vs closer: %d rounds, paid %d, closed %d\n", ROUNDS, paid, closed);
        ck_assert_int_eq(paid + closed, ROUNDS);
        ck_assert_int_eq(q(db, "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = %" PRId64
                           " AND paid_at IS NOT NULL AND status <> 2", VOUCHER), 0);
        sk_db_close(db);
}
END_TEST

START_TEST(cancel_races_closer)
{
        sk_db_t *db = db_or_fail();
        int cancelled = 0, closed = 0;

        run(db, 2, 100, &cancelled, &closed);
        printf("cancel vs closer: 100 rounds, cancelled %d, closed %d\n", cancelled, closed);
        ck_assert_int_eq(cancelled + closed, 100);
        sk_db_close(db);
}
END_TEST

static void setup(void)
{
        sk_db_t *db;
        char sql[256];

        sk_test_fix_setup("pay_close_race", &(sk_test_fix_opts_t){ .no_topics = 1 });
        db = db_or_fail();
        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, begin_time, end_time,"
                 " status) VALUES (%" PRId64 ", 1000, NOW(3), NOW(3) + INTERVAL 1 HOUR, 1)", VOUCHER);
        exec_or_fail(db, sql);
        /* its one bucket row (DESIGN.md 6) */
        exec_or_fail(db, "INSERT IGNORE INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)"
                 " SELECT voucher_id, 0, init_stock, 0 FROM tb_seckill_voucher");
        sk_db_close(db);
}

int main(void)
{
        Suite *s = suite_create("pay_close_race");
        TCase *tc = tcase_create("race");

        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, pay_races_closer);
        tcase_add_test(tc, cancel_races_closer);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
