/* 0400_front_purchase.c: seckill-front end to end against the real stack (the
 * front-level cases of DESIGN.md 3, 7, 8): concurrency (stock 1 with 50 buyers; stock 10 with one
 * user x 20 then 9 others), membership before stock, the status map of DESIGN.md 3
 * (paused, not started, ended, offline, expired, unknown, meta missing), malformed ids
 * -> 400 with no Redis write, 405/404/413, the Kafka message with ids unchanged, order
 * lookups with the owner check, a front rollback (failpoint front.after_deduct=error ->
 * 503 FAILED, stock restored, fence written), the front's own deadline (failpoint
 * front.before_respond=sleep -> 503 PENDING, stock kept) and a graceful SIGTERM (exit 0).
 * Runs without fork (CK_FORK=no): the tests share one front child process. */
#include <pthread.h>

#include <librdkafka/rdkafka.h>

#include "sk_test.h"
#include "sk/kafka.h"
#include "sk/msg.h"

static int g_port;
static pid_t g_pid;
static char g_log[256];

/* ------------------------------------------------------------ concurrency ---- */

typedef struct buyer {
        pthread_barrier_t *bar;
        int64_t vid;
        char user[SK_ID_STRLEN];
        int status;
        int code;
} buyer_t;

static void *buyer_main(void *arg)
{
        buyer_t *b = arg;
        char body[1024];

        pthread_barrier_wait(b->bar);
        b->status = sk_test_buy(g_port, b->vid, b->user, body, sizeof(body));
        b->code = sk_test_body_code(body);
        return NULL;
}

/* @p users[i] buys concurrently; counts by status into @p n202, @p n409. */
static void crowd(int64_t vid, int n, const int64_t *users, buyer_t *out)
{
        pthread_t *t = calloc((size_t)n, sizeof(*t));
        pthread_barrier_t bar;
        int i;

        ck_assert(t != NULL);
        pthread_barrier_init(&bar, NULL, (unsigned)n);
        for (i = 0; i < n; i++) {
                out[i].bar = &bar;
                out[i].vid = vid;
                sk_id_format(users[i], out[i].user);
                ck_assert_int_eq(pthread_create(&t[i], NULL, buyer_main, &out[i]), 0);
        }
        for (i = 0; i < n; i++)
                pthread_join(t[i], NULL);
        pthread_barrier_destroy(&bar);
        free(t);
}

START_TEST(ready_health_metrics)
{
        char body[SK_TEST_BODY_MAX];

        ck_assert_int_eq(sk_test_http(g_port, "GET", "/healthz", NULL, NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_http(g_port, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 200);
        ck_assert_ptr_nonnull(strstr(body, "\"kafka\":true"));
        ck_assert_ptr_nonnull(strstr(body, "\"redisServer\":true"));
        ck_assert_ptr_nonnull(strstr(body, "\"lease\":true"));
        /* The DB node of the front's new transactions (DESIGN.md 16): the only one here. */
        {
                char want[320];
                snprintf(want, sizeof(want), "\"dbWriter\":\"%s:%d\"", sk_test_fx.conf.mysql.host,
                         sk_test_fx.conf.mysql.port);
                ck_assert_msg(strstr(body, want), "%s not in %s", want, body);
        }
        /* The masters' replication guard, as CONFIG GET on master 0 says (1 on the
         * local Cluster and Sentinel, 0 on the plain server; DESIGN.md 4b). */
        {
                const char *argv[3] = { "CONFIG", "GET", "min-replicas-to-write" };
                redisReply *reply = NULL;
                char err[256], want[64];

                ck_assert_int_eq(sk_redis_cmd_master(sk_test_fx.r, 0, &reply, 3, argv, NULL, err,
                                                     sizeof(err)), SK_OK);
                ck_assert(reply->type == REDIS_REPLY_ARRAY && reply->elements == 2);
                snprintf(want, sizeof(want), "\"minReplicasToWrite\":%s,",
                         reply->element[1]->str);
                freeReplyObject(reply);
                ck_assert_msg(strstr(body, want) != NULL, "%s not in %s", want, body);
                ck_assert_ptr_null(strstr(body, "\"minReplicasMaxLag\":-1"));
        }
        ck_assert_int_eq(sk_test_http(g_port, "GET", "/metrics", NULL, NULL, body, sizeof(body)), 200);
        ck_assert_ptr_nonnull(strstr(body, "seckill_front_requests_total"));
        ck_assert_ptr_nonnull(strstr(body, "seckill_front_inflight"));
        /* DESIGN.md 15: the operations endpoints are on SECKILL_OPS_ADDR only (the
         * requests above went there); on the API listener they are unknown routes. */
        ck_assert_int_ne(sk_test_ops_port(g_port), g_port);
        {
                static const char *const ops[] = { "/healthz", "/readyz", "/metrics" };
                char req[128];

                for (size_t i = 0; i < 3; i++) {
                        int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n"
                                         "Connection: close\r\n\r\n", ops[i]);

                        ck_assert_int_eq(sk_test_http_raw(g_port, req, (size_t)n, body, sizeof(body)), 404);
                        ck_assert_ptr_null(strstr(body, "seckill_front_inflight"));
                }
        }
}
END_TEST

START_TEST(stock1_fifty_buyers)
{
        int64_t vid = sk_test_voucher_open(1), users[50];
        buyer_t b[50];
        int i, n202 = 0, n409 = 0;

        memset(b, 0, sizeof(b));
        for (i = 0; i < 50; i++)
                users[i] = 1000 + i;
        crowd(vid, 50, users, b);
        for (i = 0; i < 50; i++) {
                if (b[i].status == 202)
                        n202++;
                else if (b[i].status == 409 && b[i].code == 10005)
                        n409++;
                else
                        ck_abort_msg("buyer %d: status %d code %d", i, b[i].status, b[i].code);
        }
        ck_assert_int_eq(n202, 1);
        ck_assert_int_eq(n409, 49);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 0);
}
END_TEST

START_TEST(stock10_one_user_twenty_then_nine)
{
        int64_t vid = sk_test_voucher_open(10), users[20];
        buyer_t b[20];
        char body[1024];
        int i, n202 = 0;

        memset(b, 0, sizeof(b));
        for (i = 0; i < 20; i++)
                users[i] = 777;
        crowd(vid, 20, users, b);
        for (i = 0; i < 20; i++) {
                if (b[i].status == 202)
                        n202++;
                else
                        ck_assert_msg(b[i].status == 409 && b[i].code == 10006,
                                      "same user %d: status %d code %d", i, b[i].status, b[i].code);
        }
        ck_assert_int_eq(n202, 1);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 9);
        for (i = 0; i < 9; i++)
                users[i] = 2000 + i;
        memset(b, 0, sizeof(b));
        crowd(vid, 9, users, b);
        for (i = 0; i < 9; i++)
                ck_assert_msg(b[i].status == 202, "other %d: %d", i, b[i].status);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 0);
        /* After sell-out: a past buyer gets 10006 (membership before stock), a new
         * buyer 10005; the stock never goes below 0. */
        ck_assert_int_eq(sk_test_buy(g_port, vid, "777", body, sizeof(body)), 409);
        ck_assert_int_eq(sk_test_body_code(body), 10006);
        ck_assert_int_eq(sk_test_buy(g_port, vid, "2003", body, sizeof(body)), 409);
        ck_assert_int_eq(sk_test_body_code(body), 10006);
        ck_assert_int_eq(sk_test_buy(g_port, vid, "3001", body, sizeof(body)), 409);
        ck_assert_int_eq(sk_test_body_code(body), 10005);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 0);
}
END_TEST

/* ------------------------------------------------------------- status map ---- */

START_TEST(status_map)
{
        char body[1024];
        int64_t t = sk_now_ms(), v;
        char cause[64];

        /* paused -> 503 + 10013 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = 5,
                                              .init_stock = 5, .db_stock = 5, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 4, .db_status = 4 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_body_code(body), 10013);
        ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
        ck_assert_str_eq(cause, "paused");
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, v), 5);
        /* not started -> 403/10002 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = 5,
                                              .init_stock = 5, .db_stock = 5,
                                              .begin_ms = t + 3600000, .end_ms = t + 7200000,
                                              .status = 1, .db_status = 1 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 403);
        ck_assert_int_eq(sk_test_body_code(body), 10002);
        /* ended -> 403/10003 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = 5,
                                              .init_stock = 5, .db_stock = 5,
                                              .begin_ms = t - 7200000, .end_ms = t - 3600000,
                                              .status = 1, .db_status = 1 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 403);
        ck_assert_int_eq(sk_test_body_code(body), 10003);
        /* offline -> 403/10011 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = 5,
                                              .init_stock = 5, .db_stock = 5, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 2, .db_status = 2 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 403);
        ck_assert_int_eq(sk_test_body_code(body), 10011);
        /* expired -> 403/10012 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = 5,
                                              .init_stock = 5, .db_stock = 5, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .status = 3, .db_status = 3 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 403);
        ck_assert_int_eq(sk_test_body_code(body), 10012);
        /* unknown voucher: nowhere -> 404/10004 */
        v = sk_test_rand_id();
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 404);
        ck_assert_int_eq(sk_test_body_code(body), 10004);
        /* in the DB but offline there, no Redis meta -> 404/10004 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = -1,
                                              .init_stock = 0, .db_stock = 0, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .db_status = 2 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 404);
        ck_assert_int_eq(sk_test_body_code(body), 10004);
        /* on sale in the DB, Redis meta missing (Redis lost data) -> 503, not 10004 */
        v = sk_test_rand_id();
        sk_test_voucher(&(sk_test_voucher_t){ .r = sk_test_fx.r, .vid = v, .stock = -1,
                                              .init_stock = 0, .db_stock = 0, .begin_ms = t - 60000,
                                              .end_ms = t + 3600000, .db_status = 1 });
        ck_assert_int_eq(sk_test_buy(g_port, v, "11", body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_body_code(body), 10013);
        ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
        ck_assert_str_eq(cause, "meta_missing");
}
END_TEST

/* ---------------------------------------------------------- bad requests ---- */

START_TEST(malformed_ids_no_write)
{
        static const char *const bad_ids[] = { "abc", "-1", "0", "01", "%201", "%20",
                                               "99999999999999999999", "9223372036854775808",
                                               "", "1%20OR%201=1", "1%00", "+1", "1.0",
                                               "0x10", NULL };
        static const char *const bad_users[] = { "abc", "-1", "0", "01", "99999999999999999999",
                                                 "1 OR 1=1", "1,2", "", NULL };
        int64_t vid = sk_test_voucher_open(5);
        char v[SK_ID_STRLEN], path[256], body[1024];
        char *before, *after;
        int i;

        sk_id_format(vid, v);
        before = sk_test_snapshot(&sk_test_fx.conf, sk_test_fx.r);
        for (i = 0; bad_ids[i]; i++) {
                snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", bad_ids[i]);
                ck_assert_msg(sk_test_http(g_port, "POST", path, "42", NULL, body, sizeof(body)) == 400,
                              "voucher id '%s'", bad_ids[i]);
                ck_assert_int_eq(sk_test_body_code(body), 10001);
                snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", bad_ids[i]);
                ck_assert_msg(sk_test_http(g_port, "GET", path, "42", NULL, body, sizeof(body)) == 400,
                              "orders/me voucher id '%s'", bad_ids[i]);
                snprintf(path, sizeof(path), "/api/v1/orders/%s", bad_ids[i]);
                ck_assert_msg(sk_test_http(g_port, "GET", path, "42", NULL, body, sizeof(body)) == 400,
                              "order id '%s'", bad_ids[i]);
        }
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        for (i = 0; bad_users[i]; i++) {
                ck_assert_msg(sk_test_http(g_port, "POST", path, bad_users[i], NULL, body, sizeof(body)) == 400,
                              "user '%s'", bad_users[i]);
                ck_assert_int_eq(sk_test_body_code(body), 10001);
        }
        /* Missing X-User-Id. */
        ck_assert_int_eq(sk_test_http(g_port, "POST", path, NULL, NULL, body, sizeof(body)), 400);
        ck_assert_int_eq(sk_test_body_code(body), 10001);
        /* Wrong method, unknown route, a body. */
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, "42", NULL, body, sizeof(body)), 405);
        ck_assert_int_eq(sk_test_http(g_port, "PUT", path, "42", NULL, body, sizeof(body)), 405);
        ck_assert_int_eq(sk_test_http(g_port, "DELETE", "/api/v1/orders/1", "42", NULL, body, sizeof(body)), 405);
        ck_assert_int_eq(sk_test_http(g_port, "POST", "/readyz", NULL, NULL, body, sizeof(body)), 405);
        ck_assert_int_eq(sk_test_http(g_port, "GET", "/api/v1/nothing", "42", NULL, body, sizeof(body)), 404);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/other", v);
        ck_assert_int_eq(sk_test_http(g_port, "POST", path, "42", NULL, body, sizeof(body)), 404);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        ck_assert_int_eq(sk_test_http(g_port, "POST", path, "42", "Content-Length: 3\r\n\r\nabc", body,
                                 sizeof(body)), 413);
        /* Oversized request line and headers: libmicrohttpd's own 414 and 431. */
        {
                char *huge = malloc(20001), *hdr = malloc(20032);

                ck_assert(huge && hdr);
                memset(huge, 'a', 20000);
                huge[0] = '/';
                huge[20000] = '\0';
                ck_assert_int_eq(sk_test_http(g_port, "GET", huge, "42", NULL, body, sizeof(body)), 414);
                snprintf(hdr, 20032, "X-Big: %s\r\n", huge + 1);
                ck_assert_int_eq(sk_test_http(g_port, "POST", path, "42", hdr, body, sizeof(body)), 431);
                free(huge);
                free(hdr);
        }
        after = sk_test_snapshot(&sk_test_fx.conf, sk_test_fx.r);
        ck_assert_str_eq(before, after);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 5);
        free(before);
        free(after);
}
END_TEST

/* -------------------------------------------------- Kafka message, lookups ---- */

static char g_order[SK_ID_STRLEN], g_trace[SK_ID_STRLEN];
static int64_t g_kvid;
#define BIG_USER "1990653204235288577"

/* Count the messages of the run's topic whose value is exactly @p payload (and whose
 * key is the bucket-0 key "V:0" of voucher @p voucher, sk_msg_key: DESIGN.md 5),
 * reading both partitions to their end (bounded by 30 s). */
static int kafka_count(const char *payload, const char *voucher, int want)
{
        char errstr[512], key[SK_MSG_KEY_MAX];
        int64_t vid;
        rd_kafka_conf_t *kconf;
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *parts;
        int64_t until = sk_mono_ms() + 30000;
        int found = 0, eofs = 0, p;

        ck_assert_int_eq(sk_id_parse_cstr(voucher, &vid), 0);
        sk_msg_key(key, sizeof(key), vid, 0);

        kconf = sk_kafka_conf_new(&sk_test_fx.conf, SK_KAFKA_CONSUMER, errstr, sizeof(errstr));
        ck_assert_msg(kconf != NULL, "%s", errstr);
        ck_assert_int_eq(sk_kafka_conf_set(kconf, "enable.partition.eof", "true", errstr,
                                           sizeof(errstr)), SK_OK);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, errstr, sizeof(errstr));
        ck_assert_msg(rk != NULL, "%s", errstr);
        rd_kafka_poll_set_consumer(rk);
        parts = rd_kafka_topic_partition_list_new(2);
        for (p = 0; p < 2; p++)
                rd_kafka_topic_partition_list_add(parts, sk_test_fx.conf.topic, p)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
        ck_assert_int_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(parts);
        /* Until every partition reached its end with at least @p want found. */
        while (sk_mono_ms() < until && (eofs < 2 || found < want)) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);

                if (!m)
                        continue;
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        eofs++;
                } else if (!m->err && m->len == strlen(payload) &&
                           !memcmp(m->payload, payload, m->len)) {
                        ck_assert_int_eq((int)m->key_len, (int)strlen(key));
                        ck_assert(!memcmp(m->key, key, m->key_len));
                        found++;
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return found;
}

START_TEST(kafka_message_ids_unchanged)
{
        char body[1024], v[SK_ID_STRLEN], k[SK_KEY_MAX];
        char *entry;
        int64_t t;
        int found = 0;

        g_kvid = sk_test_voucher_open(5);
        sk_id_format(g_kvid, v);
        ck_assert_int_eq(sk_test_buy(g_port, g_kvid, BIG_USER, body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_body_code(body), 0);
        ck_assert_int_eq(sk_test_json_field(body, "orderId", g_order, sizeof(g_order)), 0);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", g_trace, sizeof(g_trace)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(g_trace, &t), 0);
        ck_assert_ptr_nonnull(strstr(body, "\"state\":\"PENDING\""));
        /* The DEDUCT entry in Redis carries the ids unchanged. */
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, g_kvid, 0, SK_KEY_TRACE);
        entry = sk_test_hget(sk_test_fx.r, k, g_trace);
        ck_assert_ptr_nonnull(entry);
        ck_assert_int_eq(sk_test_json_field(entry, "userId", body, sizeof(body)), 0);
        ck_assert_str_eq(body, BIG_USER);
        ck_assert_int_eq(sk_test_json_field(entry, "orderId", body, sizeof(body)), 0);
        ck_assert_str_eq(body, g_order);
        ck_assert_int_eq(sk_test_json_field(entry, "voucherId", body, sizeof(body)), 0);
        ck_assert_str_eq(body, v);

        /* The Kafka message: key = "voucherId:0", value = the same bytes, exactly once. */
        found = kafka_count(entry, v, 1);
        ck_assert_msg(found == 1, "%d messages with traceId %s in %s", found, g_trace, sk_test_fx.conf.topic);
        ck_assert_int_eq(sk_test_json_field(entry, "traceId", body, sizeof(body)), 0);
        ck_assert_str_eq(body, g_trace);
        free(entry);
}
END_TEST

START_TEST(order_lookups_owner_only)
{
        char body[1024], path[256], v[SK_ID_STRLEN], sql[512], f[64];

        ck_assert_msg(g_order[0], "needs kafka_message_ids_unchanged");
        sk_id_format(g_kvid, v);
        /* Not in the DB yet (no consumer here): orders/me says PENDING with the order. */
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", v);
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, BIG_USER, NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "PENDING");
        ck_assert_int_eq(sk_test_json_field(body, "orderId", f, sizeof(f)), 0);
        ck_assert_str_eq(f, g_order);
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, "5", NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "NONE");
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, NULL, NULL, body, sizeof(body)), 400);
        snprintf(path, sizeof(path), "/api/v1/orders/%s", g_order);
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, BIG_USER, NULL, body, sizeof(body)), 404);

        /* The order row appears (as the consumer would write it). */
        snprintf(sql, sizeof(sql),
                 "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, status) "
                 "VALUES (%s, %s, %s, %s, 1)", g_order, BIG_USER, v, g_trace);
        sk_test_conf_exec(&sk_test_fx.conf, sql);
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, BIG_USER, NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_json_field(body, "orderId", f, sizeof(f)), 0);
        ck_assert_str_eq(f, g_order);
        ck_assert_int_eq(sk_test_json_field(body, "userId", f, sizeof(f)), 0);
        ck_assert_str_eq(f, BIG_USER);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", f, sizeof(f)), 0);
        ck_assert_str_eq(f, g_trace);
        /* Another user's order id -> 404. */
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, "1990653204235288578", NULL, body, sizeof(body)), 404);
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, NULL, NULL, body, sizeof(body)), 400);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", v);
        ck_assert_int_eq(sk_test_http(g_port, "GET", path, BIG_USER, NULL, body, sizeof(body)), 200);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "CREATED");
        /* An order id that does not exist -> 404. */
        ck_assert_int_eq(sk_test_http(g_port, "GET", "/api/v1/orders/9223372036854775807", BIG_USER,
                                 NULL, body, sizeof(body)), 404);
}
END_TEST

/* ---------------------------------------------- rollback and the deadline ---- */

START_TEST(front_rollback_and_deadline)
{
        static const char *const env[] = {
                "SECKILL_FAILPOINTS=front.after_deduct=1*error;front.before_respond=1*sleep(8000)",
                NULL };
        char log[300], body[1024], k[SK_KEY_MAX], f[64], tr[SK_ID_STRLEN], field[48];
        int port = sk_test_free_port(), st;
        int64_t vid = sk_test_voucher_open(3), t, t0;
        pid_t pid;
        char *s;

        snprintf(log, sizeof(log), "%s.fp", g_log);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front with failpoints not ready (%s)", log);

        /* 1. Deduct, then the publish "fails": rollback.lua mode front -> 503 FAILED,
         *    stock restored, user released, fence T:r written. */
        ck_assert_int_eq(sk_test_buy(port, vid, "501", body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "FAILED");
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &t), 0);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 3);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(field, t, 'r');
        s = sk_test_hget(sk_test_fx.r, k, field);
        ck_assert_msg(s != NULL, "no fence %s", field);
        free(s);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        s = sk_test_hget(sk_test_fx.r, k, "501");
        ck_assert_ptr_null(s);
        /* orders/me: NONE until the reconciler records FAILED (front_rollback); then
         * FAILED with that reason. */
        {
                char path[128], v[SK_ID_STRLEN], sql[512], o[SK_ID_STRLEN];

                ck_assert_int_eq(sk_test_json_field(body, "orderId", o, sizeof(o)), 0);
                sk_id_format(vid, v);
                snprintf(path, sizeof(path), "/api/v1/vouchers/%s/orders/me", v);
                ck_assert_int_eq(sk_test_http(port, "GET", path, "501", NULL, body, sizeof(body)), 200);
                ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
                ck_assert_str_eq(f, "NONE");
                snprintf(sql, sizeof(sql),
                         "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id, "
                         "outcome, reason) VALUES (%s, %s, 501, %s, 2, 'front_rollback')", tr, o, v);
                sk_test_conf_exec(&sk_test_fx.conf, sql);
                ck_assert_int_eq(sk_test_http(port, "GET", path, "501", NULL, body, sizeof(body)), 200);
                ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
                ck_assert_str_eq(f, "FAILED");
                ck_assert_int_eq(sk_test_json_field(body, "reason", f, sizeof(f)), 0);
                ck_assert_str_eq(f, "front_rollback");
                ck_assert_int_eq(sk_test_json_field(body, "orderId", f, sizeof(f)), 0);
                ck_assert_str_eq(f, o);
        }

        /* 2. PERSISTED, but the answer is held past the deadline (2 x 3 s + 1 s): the
         *    front answers 503 PENDING itself, the stock stays taken, no rollback. */
        t0 = sk_mono_ms();
        ck_assert_int_eq(sk_test_buy(port, vid, "502", body, sizeof(body)), 503);
        ck_assert_int_ge(sk_mono_ms() - t0, 6500);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "PENDING");
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 2);
        s = sk_test_hget(sk_test_fx.r, k, "502");
        ck_assert_ptr_nonnull(s);
        free(s);

        /* 3. The same user who was rolled back may buy again. */
        sk_sleep_ms(1500, NULL);
        ck_assert_int_eq(sk_test_buy(port, vid, "501", body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 1);
        st = sk_test_stop(pid, 30);
        ck_assert_int_eq(st, 0);
}
END_TEST

/* In-flight cap (DESIGN.md 8): with SECKILL_MAX_INFLIGHT=1 and the first purchase held
 * (its answer sleeps 2 s), a second purchase is refused 503 overload before any deduct. */
typedef struct held {
        int port;
        int64_t vid;
        int status;
} held_t;

static void *held_main(void *arg)
{
        held_t *h = arg;
        char body[1024];

        h->status = sk_test_buy(h->port, h->vid, "601", body, sizeof(body));
        return NULL;
}

START_TEST(inflight_cap_refuses_before_deduct)
{
        static const char *const env[] = { "SECKILL_MAX_INFLIGHT=1",
                                           "SECKILL_FAILPOINTS=front.before_respond=1*sleep(2000)",
                                           NULL };
        char log[300], body[1024], k[SK_KEY_MAX], cause[32];
        held_t h;
        pthread_t t;
        pid_t pid;
        char *s;

        memset(&h, 0, sizeof(h));
        h.port = sk_test_free_port();
        h.vid = sk_test_voucher_open(5);
        snprintf(log, sizeof(log), "%s.cap", g_log);
        pid = sk_test_front_start(&sk_test_fx.conf, h.port, env, log);
        ck_assert_msg(sk_test_wait_ready(h.port, pid, 30) == 0, "front not ready (%s)", log);
        ck_assert_int_eq(pthread_create(&t, NULL, held_main, &h), 0);
        sk_sleep_ms(700, NULL);
        ck_assert_int_eq(sk_test_buy(h.port, h.vid, "602", body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_json_field(body, "cause", cause, sizeof(cause)), 0);
        ck_assert_str_eq(cause, "overload");
        pthread_join(t, NULL);
        ck_assert_int_eq(h.status, 202);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, h.vid), 4);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, h.vid, 0, SK_KEY_USERS);
        s = sk_test_hget(sk_test_fx.r, k, "602");
        ck_assert_ptr_null(s);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

/* SIGTERM with a purchase in flight (its delivery report handling sleeps 2 s): the
 * front stops accepting, still answers the in-flight purchase (202), exits 0. */
START_TEST(sigterm_with_purchase_in_flight)
{
        static const char *const env[] = {
                "SECKILL_FAILPOINTS=front.before_respond=1*sleep(2000)", NULL };
        char log[300], body[1024];
        held_t h;
        pthread_t t;
        pid_t pid;
        int st = -1;
        int64_t until;

        memset(&h, 0, sizeof(h));
        h.port = sk_test_free_port();
        h.vid = sk_test_voucher_open(5);
        snprintf(log, sizeof(log), "%s.term", g_log);
        pid = sk_test_front_start(&sk_test_fx.conf, h.port, env, log);
        ck_assert_msg(sk_test_wait_ready(h.port, pid, 30) == 0, "front not ready (%s)", log);
        ck_assert_int_eq(pthread_create(&t, NULL, held_main, &h), 0);
        sk_sleep_ms(700, NULL);
        kill(pid, SIGTERM);
        sk_sleep_ms(300, NULL);
        /* The API listener accepts no more; the operations listener still answers, and
         * /readyz says not ready while the front drains (DESIGN.md 15). */
        {
                static const char req[] = "GET /api/v1/orders/1 HTTP/1.1\r\nHost: x\r\n\r\n";

                ck_assert_int_lt(sk_test_http_raw(h.port, req, sizeof(req) - 1, body, sizeof(body)), 0);
        }
        ck_assert_int_eq(sk_test_http(h.port, "GET", "/readyz", NULL, NULL, body, sizeof(body)), 503);
        pthread_join(t, NULL);
        ck_assert_int_eq(h.status, 202);
        until = sk_mono_ms() + 30000;
        while (sk_mono_ms() < until) {
                int w;

                if (waitpid(pid, &w, WNOHANG) == pid) {
                        st = WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
                        break;
                }
                usleep(50 * 1000);
        }
        if (st < 0)
                sk_test_stop(pid, 5);
        ck_assert_int_eq(st, 0);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, h.vid), 4);
}
END_TEST

/* Delivery-report rules of DESIGN.md 8 (statuses forced by failpoints):
 * POSSIBLY_PERSISTED -> one identical re-produce; its NOT_PERSISTED -> 503 PENDING and NO
 * rollback (an earlier copy may exist); a re-produce that is PERSISTED -> 202. */
START_TEST(possibly_persisted_reproduce)
{
        static const char *const env_a[] = {
                "SECKILL_FAILPOINTS=front.delivery_possibly=1*error;front.delivery_not=1*error", NULL };
        static const char *const env_b[] = { "SECKILL_FAILPOINTS=front.delivery_possibly=1*error", NULL };
        char log[300], body[1024], k[SK_KEY_MAX], f[64], tr[SK_ID_STRLEN], field[48], v[SK_ID_STRLEN];
        int port = sk_test_free_port();
        int64_t vid = sk_test_voucher_open(5), t;
        pid_t pid;
        char *s, *entry;

        sk_id_format(vid, v);
        snprintf(log, sizeof(log), "%s.pp", g_log);
        pid = sk_test_front_start(&sk_test_fx.conf, port, env_a, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (%s)", log);
        ck_assert_int_eq(sk_test_buy(port, vid, "701", body, sizeof(body)), 503);
        ck_assert_int_eq(sk_test_json_field(body, "state", f, sizeof(f)), 0);
        ck_assert_str_eq(f, "PENDING");
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        ck_assert_int_eq(sk_id_parse_cstr(tr, &t), 0);
        /* No rollback: stock still taken, no fence, the user still named. */
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 4);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        sk_field_trace(field, t, 'r');
        s = sk_test_hget(sk_test_fx.r, k, field);
        ck_assert_ptr_null(s);
        entry = sk_test_hget(sk_test_fx.r, k, tr);
        ck_assert_ptr_nonnull(entry);
        /* Two identical copies in the topic. */
        ck_assert_int_eq(kafka_count(entry, v, 2), 2);
        free(entry);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        s = sk_test_hget(sk_test_fx.r, k, "701");
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(s, tr);
        free(s);
        ck_assert_int_eq(sk_test_buy(port, vid, "702", body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);

        /* A re-produce that is PERSISTED -> 202 (again two identical copies). */
        port = sk_test_free_port();
        pid = sk_test_front_start(&sk_test_fx.conf, port, env_b, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (%s)", log);
        ck_assert_int_eq(sk_test_buy(port, vid, "703", body, sizeof(body)), 202);
        ck_assert_int_eq(sk_test_json_field(body, "traceId", tr, sizeof(tr)), 0);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        entry = sk_test_hget(sk_test_fx.r, k, tr);
        ck_assert_ptr_nonnull(entry);
        ck_assert_int_eq(kafka_count(entry, v, 2), 2);
        free(entry);
        ck_assert_int_eq(sk_test_stock(&sk_test_fx.conf, sk_test_fx.r, vid), 2);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

START_TEST(zz_graceful_shutdown)
{
        int st = sk_test_stop(g_pid, 40);

        g_pid = 0;
        ck_assert_int_eq(st, 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("front", &(sk_test_fix_opts_t){ .no_topics = 1 });
        g_port = sk_test_free_port();
        sk_test_log_path(g_log, sizeof(g_log), "front_0400");
        g_pid = sk_test_front_start(&sk_test_fx.conf, g_port, NULL, g_log);
        ck_assert_msg(sk_test_wait_ready(g_port, g_pid, 30) == 0, "front not ready (log %s)", g_log);
}

static void teardown(void)
{
        if (g_pid > 0)
                sk_test_stop(g_pid, 30);
        sk_test_fix_teardown();
}

int main(void)
{
        Suite *s = suite_create("front_purchase");
        TCase *tc = tcase_create("front");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, teardown);
        tcase_add_test(tc, ready_health_metrics);
        tcase_add_test(tc, stock1_fifty_buyers);
        tcase_add_test(tc, stock10_one_user_twenty_then_nine);
        tcase_add_test(tc, status_map);
        tcase_add_test(tc, malformed_ids_no_write);
        tcase_add_test(tc, kafka_message_ids_unchanged);
        tcase_add_test(tc, order_lookups_owner_only);
        tcase_add_test(tc, front_rollback_and_deadline);
        tcase_add_test(tc, inflight_cap_refuses_before_deduct);
        tcase_add_test(tc, sigterm_with_purchase_in_flight);
        tcase_add_test(tc, possibly_persisted_reproduce);
        tcase_add_test(tc, zz_graceful_shutdown);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
