/* check_metrics.c: Prometheus text rendering (HELP/TYPE once per name, labels,
 * cumulative buckets, _sum/_count, +Inf), atomic updates, quantile estimates. No network. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sk_test.h"
#include "sk/metrics.h"
#include "sk/metrics_http.h"

START_TEST(render_counters_and_gauges)
{
        sk_metrics_t *m = sk_metrics_new();
        sk_metric_t *a, *b, *g, *again;
        char *txt;

        a = sk_metrics_counter(m, "http_requests_total", "code=\"202\"", "HTTP answers by code");
        b = sk_metrics_counter(m, "seckill_http_requests_total", "code=\"503\"", "HTTP answers by code");
        g = sk_metrics_gauge(m, "inflight", NULL, "requests in flight");
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        ck_assert_ptr_nonnull(g);
        again = sk_metrics_counter(m, "http_requests_total", "code=\"202\"", "ignored");
        ck_assert_ptr_eq(again, a);                     /* find, not duplicate */
        ck_assert_ptr_null(sk_metrics_gauge(m, "http_requests_total", "code=\"202\"", "x")); /* type clash */
        sk_metric_add(a, 3);
        sk_metric_add(a, 2);
        sk_metric_add(b, 1);
        sk_metric_set(g, 42);
        sk_metric_add(g, -2);
        ck_assert_int_eq(sk_metric_value(a), 5);
        ck_assert_int_eq(sk_metric_value(g), 40);
        txt = sk_metrics_render(m);
        ck_assert_ptr_nonnull(txt);
        ck_assert_str_eq(txt,
                "# HELP seckill_http_requests_total HTTP answers by code\n"
                "# TYPE seckill_http_requests_total counter\n"
                "seckill_http_requests_total{code=\"202\"} 5\n"
                "seckill_http_requests_total{code=\"503\"} 1\n"
                "# HELP seckill_inflight requests in flight\n"
                "# TYPE seckill_inflight gauge\n"
                "seckill_inflight 40\n");
        free(txt);
        sk_metrics_destroy(m);
}
END_TEST

START_TEST(render_histogram)
{
        static const double bounds[] = { 0.005, 0.01, 0.1, 1 };
        sk_metrics_t *m = sk_metrics_new();
        sk_metric_t *h, *h2;
        char *txt;

        h = sk_metrics_hist(m, "consumer_txn_seconds", NULL, "order transaction time", bounds, 4);
        h2 = sk_metrics_hist(m, "consumer_txn_seconds", "kind=\"batch\"", "order transaction time", bounds, 4);
        ck_assert_ptr_nonnull(h);
        ck_assert_ptr_nonnull(h2);
        sk_metric_observe(h, 0.001);    /* le 0.005 */
        sk_metric_observe(h, 0.005);    /* le 0.005 (inclusive) */
        sk_metric_observe(h, 0.05);     /* le 0.1 */
        sk_metric_observe(h, 2.5);      /* +Inf */
        sk_metric_observe(h2, 0.5);
        ck_assert_int_eq(sk_metric_value(h), 4);
        txt = sk_metrics_render(m);
        ck_assert_ptr_nonnull(txt);
        ck_assert_str_eq(txt,
                "# HELP seckill_consumer_txn_seconds order transaction time\n"
                "# TYPE seckill_consumer_txn_seconds histogram\n"
                "seckill_consumer_txn_seconds_bucket{le=\"0.005\"} 2\n"
                "seckill_consumer_txn_seconds_bucket{le=\"0.01\"} 2\n"
                "seckill_consumer_txn_seconds_bucket{le=\"0.1\"} 3\n"
                "seckill_consumer_txn_seconds_bucket{le=\"1\"} 3\n"
                "seckill_consumer_txn_seconds_bucket{le=\"+Inf\"} 4\n"
                "seckill_consumer_txn_seconds_sum 2.556\n"
                "seckill_consumer_txn_seconds_count 4\n"
                "seckill_consumer_txn_seconds_bucket{kind=\"batch\",le=\"0.005\"} 0\n"
                "seckill_consumer_txn_seconds_bucket{kind=\"batch\",le=\"0.01\"} 0\n"
                "seckill_consumer_txn_seconds_bucket{kind=\"batch\",le=\"0.1\"} 0\n"
                "seckill_consumer_txn_seconds_bucket{kind=\"batch\",le=\"1\"} 1\n"
                "seckill_consumer_txn_seconds_bucket{kind=\"batch\",le=\"+Inf\"} 1\n"
                "seckill_consumer_txn_seconds_sum{kind=\"batch\"} 0.5\n"
                "seckill_consumer_txn_seconds_count{kind=\"batch\"} 1\n");
        free(txt);
        sk_metrics_destroy(m);
}
END_TEST

START_TEST(help_is_escaped)
{
        sk_metrics_t *m = sk_metrics_new();
        char *txt;

        sk_metrics_counter(m, "x_total", NULL, "line1\nback\\slash");
        txt = sk_metrics_render(m);
        ck_assert_ptr_nonnull(strstr(txt, "# HELP seckill_x_total line1\\nback\\\\slash\n"));
        free(txt);
        sk_metrics_destroy(m);
}
END_TEST

START_TEST(quantiles)
{
        static const double bounds[] = { 0.001, 0.01, 0.1, 1 };
        sk_metrics_t *m = sk_metrics_new();
        sk_metric_t *h = sk_metrics_hist(m, "lat_seconds", NULL, "latency", bounds, 4);
        int i;

        ck_assert(sk_metric_quantile(h, 0.5) == 0.0);  /* empty */
        for (i = 0; i < 90; i++)
                sk_metric_observe(h, 0.0005);   /* 90 in le 0.001 */
        for (i = 0; i < 9; i++)
                sk_metric_observe(h, 0.05);     /* 9 in le 0.1 */
        sk_metric_observe(h, 0.5);              /* 1 in le 1 */
        ck_assert(sk_metric_quantile(h, 0.0) == 0.001);
        ck_assert(sk_metric_quantile(h, 0.5) == 0.001);
        ck_assert(sk_metric_quantile(h, 0.9) == 0.001);
        ck_assert(sk_metric_quantile(h, 0.91) == 0.1);
        ck_assert(sk_metric_quantile(h, 0.99) == 0.1);
        ck_assert(sk_metric_quantile(h, 1.0) == 1.0);
        sk_metric_observe(h, 50.0);             /* +Inf bucket: reported as the last bound */
        ck_assert(sk_metric_quantile(h, 1.0) == 1.0);
        ck_assert(sk_metric_quantile(h, 7.0) == 1.0);   /* q clamped */
        sk_metrics_destroy(m);
}
END_TEST

START_TEST(bad_registrations_and_null_safety)
{
        static const double desc[] = { 1, 0.5 };
        sk_metrics_t *m = sk_metrics_new();

        ck_assert_ptr_null(sk_metrics_hist(m, "h", NULL, "x", desc, 2));
        ck_assert_ptr_null(sk_metrics_counter(m, "", NULL, "x"));
        ck_assert_ptr_null(sk_metrics_counter(NULL, "a", NULL, "x"));
        sk_metric_add(NULL, 1);
        sk_metric_set(NULL, 1);
        sk_metric_observe(NULL, 1.0);
        ck_assert_int_eq(sk_metric_value(NULL), 0);
        ck_assert(sk_metric_quantile(NULL, 0.5) == 0.0);
        sk_metrics_destroy(m);
        sk_metrics_destroy(NULL);
        sk_metrics_http_stop(NULL);
}
END_TEST

static sk_metric_t *shared_c, *shared_h;

static void *bump(void *arg)
{
        (void)arg;
        for (int i = 0; i < 50000; i++) {
                sk_metric_add(shared_c, 1);
                sk_metric_observe(shared_h, 0.002);
        }
        return NULL;
}

START_TEST(concurrent_updates_are_exact)
{
        static const double bounds[] = { 0.001, 0.01 };
        sk_metrics_t *m = sk_metrics_new();
        pthread_t th[4];
        char *txt;

        shared_c = sk_metrics_counter(m, "bumps_total", NULL, "bumps");
        shared_h = sk_metrics_hist(m, "bump_seconds", NULL, "bumps", bounds, 2);
        for (int i = 0; i < 4; i++)
                pthread_create(&th[i], NULL, bump, NULL);
        for (int i = 0; i < 4; i++)
                pthread_join(th[i], NULL);
        ck_assert_int_eq(sk_metric_value(shared_c), 200000);
        ck_assert_int_eq(sk_metric_value(shared_h), 200000);
        txt = sk_metrics_render(m);
        ck_assert_ptr_nonnull(strstr(txt, "seckill_bump_seconds_sum 400\n"));
        ck_assert_ptr_nonnull(strstr(txt, "seckill_bump_seconds_bucket{le=\"0.01\"} 200000\n"));
        free(txt);
        sk_metrics_destroy(m);
}
END_TEST

START_TEST(http_bad_address)
{
        sk_metrics_t *m = sk_metrics_new();
        char err[256] = "";

        ck_assert_ptr_null(sk_metrics_http_start(m, "nohostport", err, sizeof(err)));
        ck_assert_str_ne(err, "");
        ck_assert_ptr_null(sk_metrics_http_start(m, "127.0.0.1:99999", err, sizeof(err)));
        sk_metrics_destroy(m);
}
END_TEST

START_TEST(remove_retires_one_series)
{
        sk_metrics_t *m = sk_metrics_new();
        sk_metric_t *a = sk_metrics_gauge(m, "room_members", "voucher=\"1\"", "members");
        sk_metric_t *b = sk_metrics_gauge(m, "room_members", "voucher=\"2\"", "members");
        sk_metric_t *o = sk_metrics_counter(m, "other_total", NULL, "other");
        char *txt;

        sk_metric_set(a, 5);
        sk_metric_set(b, 7);
        sk_metrics_remove(m, a);
        sk_metrics_remove(m, NULL);     /* no-op */
        txt = sk_metrics_render(m);
        ck_assert_ptr_null(strstr(txt, "voucher=\"1\""));
        ck_assert_ptr_nonnull(strstr(txt, "seckill_room_members{voucher=\"2\"} 7"));
        ck_assert_ptr_nonnull(strstr(txt, "# TYPE seckill_room_members gauge"));
        ck_assert_ptr_nonnull(strstr(txt, "seckill_other_total 0"));
        free(txt);
        /* the same series registered again starts from zero */
        a = sk_metrics_gauge(m, "room_members", "voucher=\"1\"", "members");
        ck_assert_int_eq(sk_metric_value(a), 0);
        sk_metrics_remove(m, b);
        sk_metrics_remove(m, o);
        txt = sk_metrics_render(m);
        ck_assert_ptr_nonnull(strstr(txt, "seckill_room_members{voucher=\"1\"} 0"));
        ck_assert_ptr_null(strstr(txt, "voucher=\"2\""));
        ck_assert_ptr_null(strstr(txt, "other_total"));
        free(txt);
        sk_metrics_destroy(m);
}
END_TEST

static Suite *metrics_suite(void)
{
        Suite *s = suite_create("metrics");
        TCase *tc = tcase_create("metrics");

        tcase_add_test(tc, render_counters_and_gauges);
        tcase_add_test(tc, render_histogram);
        tcase_add_test(tc, help_is_escaped);
        tcase_add_test(tc, quantiles);
        tcase_add_test(tc, bad_registrations_and_null_safety);
        tcase_add_test(tc, concurrent_updates_are_exact);
        tcase_add_test(tc, http_bad_address);
        tcase_add_test(tc, remove_retires_one_series);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(metrics_suite());
}
