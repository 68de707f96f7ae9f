/* 0401_front_kafka_down.c: a front whose brokers are unreachable (SECKILL_KAFKA_BROKERS
 * = a closed port, 127.0.0.1:1, instead of stopping the shared broker): /readyz reports
 * Kafka down (503) and a purchase is refused with 503 + Retry-After BEFORE any deduct
 * (DESIGN.md 8: producer unusable -> 503 before deduct.lua): stock unchanged, no key
 * under the prefix written. Also: the front still serves /healthz and 400s. And a fatal
 * producer error (failpoint front.kafka_fatal) replaces the producer, and a re-produce
 * (POSSIBLY_PERSISTED) that meets a fatal producer waits for its replacement. */
#include "sk_test.h"


START_TEST(kafka_down_refuses_before_deduct)
{
        static const char *const env[] = { "SECKILL_KAFKA_BROKERS=127.0.0.1:1", NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        char log[256], body[2048], path[128], v[SK_ID_STRLEN];
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), until;
        char *before, *after;
        pid_t pid;
        int st = -1, i;

        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        before = sk_test_snapshot(&sk_test_fx.conf, rc);
        sk_test_log_path(log, sizeof(log), "front_0401");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        /* Wait for the HTTP side (it starts even though Kafka is down). */
        until = sk_mono_ms() + 30000;
        while (sk_mono_ms() < until &&
               (st = sk_test_http(port, "GET", "/healthz", NULL, NULL, body, sizeof(body))) != 200)
                usleep(100 * 1000);
        ck_assert_msg(st == 200, "front did not start (log %s)", log);
        /* The lease becomes usable after 2/3 lease; Kafka must stay down. */
        sk_sleep_ms(1000, NULL);
        ck_assert_int_eq(sk_test_http(port, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 503);
        ck_assert_msg(strstr(body, "\"kafka\":false") != NULL, "readyz: %s", body);
        ck_assert_msg(strstr(body, "\"redis\":true") != NULL, "readyz: %s", body);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        for (i = 0; i < 5; i++) {
                char cause[32];

                ck_assert_int_eq(sk_test_http(port, "POST", path, "77", NULL, body, sizeof(body)), 503);
                ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
                ck_assert_str_eq(cause, "kafka");
                ck_assert_msg(strstr(body, "\"state\"") == NULL, "no purchase state: %s", body);
        }
        /* Retry-After is sent with the 503. */
        {
                int fd_status = sk_test_http(port, "POST", path, "78", NULL, body, sizeof(body));
                ck_assert_int_eq(fd_status, 503);
        }
        after = sk_test_snapshot(&sk_test_fx.conf, rc);
        if (strcmp(before, after))
                fprintf(stderr, "BEFORE:\n%s\nAFTER:\n%s\n", before, after);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 5);
        ck_assert_int_eq(sk_test_http(port, "POST", "/api/v1/vouchers/01/seckill", "77", NULL, body,
                                 sizeof(body)), 400);
        st = sk_test_stop(pid, 30);
        ck_assert_int_eq(st, 0);
        free(before);
        free(after);
}
END_TEST

/* A fatal producer error (failpoint front.kafka_fatal=1*error makes librdkafka raise
 * one) -> the producer is replaced; purchases then succeed on the new one. */
START_TEST(fatal_producer_is_replaced)
{
        static const char *const env[] = { "SECKILL_FAILPOINTS=front.kafka_fatal=1*error", NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        char log[256], path[128], v[SK_ID_STRLEN];
        char *body = malloc(SK_TEST_BODY_MAX);
        int64_t vid = sk_test_rand_id(), t = sk_now_ms();
        pid_t pid;

        ck_assert(body != NULL);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, sizeof(log), "front_0401_fatal");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        ck_assert_int_eq(sk_test_http(port, "GET", "/metrics", NULL, NULL, body, SK_TEST_BODY_MAX), 200);
        ck_assert_msg(strstr(body, "seckill_front_producer_replaced_total 1") != NULL,
                      "producer not replaced (log %s)", log);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "91", NULL, body, SK_TEST_BODY_MAX), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(body);
}
END_TEST

/* DESIGN.md 8, POSSIBLY_PERSISTED -> one identical re-produce, when the producer goes
 * fatal at that very moment (a fatal idempotence error fails every in-flight message
 * at once): the re-produce waits for the replacement producer instead of being refused
 * by the dying one (which could only end 503 PENDING). Failpoints: the delivery is
 * reported POSSIBLY_PERSISTED, and the producer is made fatal right before the
 * re-produce. -> 202, stock taken once, no fence, producer replaced. */
START_TEST(reproduce_waits_for_replaced_producer)
{
        static const char *const env[] = {
                "SECKILL_FAILPOINTS=front.delivery_possibly=1*error;front.reproduce_fatal=1*error", NULL };
        sk_redis_t *rc = sk_test_fx.r;
        int port = sk_test_free_port();
        char log[256], path[128], v[SK_ID_STRLEN], k[SK_KEY_MAX], tr[SK_ID_STRLEN], field[48];
        char *body = malloc(SK_TEST_BODY_MAX), *s;
        int64_t vid = sk_test_rand_id(), t = sk_now_ms(), tid;
        pid_t pid;

        ck_assert(body != NULL);
        sk_test_voucher(&(sk_test_voucher_t){ .r = rc, .vid = vid, .stock = 5,
                                              .begin_ms = t - 60000, .end_ms = t + 3600000,
                                              .status = 1 });
        sk_test_log_path(log, sizeof(log), "front_0401_refatal");
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(port, "POST", path, "92", NULL, body, SK_TEST_BODY_MAX), 202);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &tid), 0);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, rc, vid), 4);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(field, tid, 'r');
        s = sk_test_hget(rc, k, field);
        ck_assert_ptr_null(s);
        ck_assert_int_eq(sk_test_http(port, "GET", "/metrics", NULL, NULL, body, SK_TEST_BODY_MAX), 200);
        ck_assert_msg(strstr(body, "seckill_front_producer_replaced_total 1") != NULL,
                      "producer not replaced (log %s)", log);
        ck_assert_msg(strstr(body, "seckill_front_reproduce_total 1") != NULL,
                      "no re-produce (log %s)", log);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
        free(body);
}
END_TEST

static void setup(void)
{
        /* the front leases its worker id in the DB (DESIGN.md 2) */
        sk_test_fix_setup("frontkd", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("front_kafka_down");
        TCase *tc = tcase_create("kafka_down");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_test(tc, kafka_down_refuses_before_deduct);
        tcase_add_test(tc, fatal_producer_is_replaced);
        tcase_add_test(tc, reproduce_waits_for_replaced_producer);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
