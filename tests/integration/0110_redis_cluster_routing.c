/* 0110_redis_cluster_routing.c: sk_redis against the real local Redis Cluster
 * (DESIGN.md 4b; label cluster; topology: see sk_test_topo.h).
 *   - connect from seeds, three masters, the server checks pass on every master;
 *   - many keys route to the master of their slot (every master gets some, each key
 *     reads back), a keyspace walk visits every master;
 *   - EVALSHA of claim.lua on vouchers whose hash tags sit on different masters, also
 *     after SCRIPT FLUSH on every master (NOSCRIPT -> load on that node, retry once);
 *   - a pipeline over every master gets every reply in order;
 *   - WATCH/MULTI/EXEC on one hash tag stays on one node. */
#include "sk_test.h"
#include "sk/crc16.h"

static sk_redis_url_t g_url;
static char g_pfx[64];

static sk_redis_t *conn(void)
{
        char err[256];
        sk_redis_t *r = sk_redis_connect(&g_url, 3000, err, sizeof(err));
        ck_assert_msg(r != NULL, "connect: %s", err);
        return r;
}

static void cmd_ok(sk_redis_t *r, redisReply **rep, const char *fmt, const char *a,
                   const char *b)
{
        char err[256];
        sk_err_t e = sk_redis_cmdf(r, rep, err, sizeof(err), fmt, a, b);
        ck_assert_msg(e == SK_OK, "%s %s: %s (%d)", fmt, a, err, (int)e);
}

START_TEST(connect_and_checks)
{
        sk_redis_t *r = conn();
        char err[256];

        ck_assert_int_eq(sk_redis_kind(r), SK_REDIS_CLUSTER);
        ck_assert_int_eq(sk_redis_master_count(r), 3);
        ck_assert_msg(sk_redis_check_server(r, err, sizeof(err)) == SK_OK, "%s", err);
        ck_assert_int_eq(sk_redis_noeviction(r), 1);
        ck_assert_int_eq(sk_scripts_load(r, err, sizeof(err)), SK_OK);
        ck_assert_int_eq(sk_scripts_loaded(r), 1);
        sk_redis_close(r);

        /* A seed list whose first seeds are dead still connects. */
        {
                sk_redis_url_t u;
                ck_assert_int_eq(sk_redis_url_parse("redis-cluster://127.0.0.1:1,127.0.0.1:7001",
                                                    &u, err, sizeof(err)), 0);
                r = sk_redis_connect(&u, 1000, err, sizeof(err));
                ck_assert_msg(r != NULL, "%s", err);
                ck_assert_int_eq(sk_redis_master_count(r), 3);
                sk_redis_close(r);
                ck_assert_int_eq(sk_redis_url_parse("redis-cluster://127.0.0.1:1", &u, err,
                                                    sizeof(err)), 0);
                ck_assert_ptr_null(sk_redis_connect(&u, 500, err, sizeof(err)));
                ck_assert_ptr_nonnull(strstr(err, "CLUSTER SLOTS"));
        }
}
END_TEST

typedef struct { int n; } count_t;

static int count_key(const char *k, size_t len, void *arg)
{
        (void)k;
        (void)len;
        ((count_t *)arg)->n++;
        return 0;
}

START_TEST(many_keys_route)
{
        enum { N = 600 };
        sk_redis_t *r = conn();
        char key[128], val[32], match[96], err[256];
        count_t total = { 0 };
        int nm = sk_redis_master_count(r);

        for (int i = 0; i < N; i++) {
                redisReply *rep;
                snprintf(key, sizeof(key), "%s:{k%d}:x", g_pfx, i);
                snprintf(val, sizeof(val), "v%d", i);
                cmd_ok(r, &rep, "SET %s %s", key, val);
                freeReplyObject(rep);
        }
        for (int i = 0; i < N; i++) {
                redisReply *rep;
                snprintf(key, sizeof(key), "%s:{k%d}:x", g_pfx, i);
                snprintf(val, sizeof(val), "v%d", i);
                cmd_ok(r, &rep, "GET %s", key, NULL);
                ck_assert_int_eq(rep->type, REDIS_REPLY_STRING);
                ck_assert_str_eq(rep->str, val);
                freeReplyObject(rep);
        }
        /* Every master holds some of them; the walk over all masters finds all. */
        snprintf(match, sizeof(match), "%s:*", g_pfx);
        for (int m = 0; m < nm; m++) {
                const char *argv[6] = { "SCAN", "0", "MATCH", match, "COUNT", "100000" };
                redisReply *rep;
                ck_assert_int_eq(sk_redis_cmd_master(r, m, &rep, 6, argv, NULL, err, sizeof(err)),
                                 SK_OK);
                ck_assert_msg(rep->element[1]->elements > 0, "master %d holds none", m);
                freeReplyObject(rep);
        }
        ck_assert_int_eq(sk_redis_scan(r, match, 100, count_key, &total, err, sizeof(err)), SK_OK);
        ck_assert_int_eq(total.n, N);
        /* A keyspace walk through the routed API is refused on a Cluster. */
        {
                redisReply *rep;
                ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "SCAN 0"), SK_EINVAL);
        }
        sk_redis_close(r);
}
END_TEST

static void claim(sk_redis_t *r, int64_t vid, long long want_redrives)
{
        char meta[128], trace[128], t[32], err[256];
        const char *keys[2] = { meta, trace };
        const char *args[3] = { "claim", "60000", t };
        redisReply *rep = NULL;
        sk_err_t e;

        snprintf(meta, sizeof(meta), "%s:{v:%lld:0}:meta", g_pfx, (long long)vid);
        snprintf(trace, sizeof(trace), "%s:{v:%lld:0}:trace", g_pfx, (long long)vid);
        snprintf(t, sizeof(t), "%lld", (long long)vid + 1);
        e = sk_script_eval(r, SK_SCRIPT_CLAIM, 2, keys, 3, args, &rep, err, sizeof(err));
        ck_assert_msg(e == SK_OK, "claim v%lld: %s", (long long)vid, err);
        ck_assert_int_eq(rep->type, REDIS_REPLY_ARRAY);
        ck_assert_str_eq(rep->element[0]->str, "OK");
        ck_assert_int_eq(rep->element[1]->integer, want_redrives);
        freeReplyObject(rep);
}

START_TEST(evalsha_on_every_master)
{
        sk_redis_t *r = conn();
        char err[256], tag[64];
        int seen[SK_CLUSTER_SLOTS / 1024] = { 0 }, spread = 0;

        ck_assert_int_eq(sk_scripts_load(r, err, sizeof(err)), SK_OK);
        for (int64_t v = 1; v <= 40; v++) {
                claim(r, v, 1);
                snprintf(tag, sizeof(tag), "v:%lld:0", (long long)v);
                seen[sk_key_slot(tag, strlen(tag)) / 1024] = 1;
        }
        for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
                spread += seen[i];
        ck_assert_int_ge(spread, 6);    /* the tags cover most of the slot range */
        /* Every master forgets its scripts: each EVALSHA loads on its node, once. */
        for (int m = 0; m < sk_redis_master_count(r); m++) {
                const char *argv[2] = { "SCRIPT", "FLUSH" };
                redisReply *rep;
                ck_assert_int_eq(sk_redis_cmd_master(r, m, &rep, 2, argv, NULL, err, sizeof(err)),
                                 SK_OK);
                freeReplyObject(rep);
        }
        ck_assert_int_eq(sk_scripts_loaded(r), 0);
        for (int64_t v = 1; v <= 40; v++)
                claim(r, v, 2);
        ck_assert_int_eq(sk_scripts_loaded(r), 0);       /* only claim.lua is back */
        ck_assert_int_eq(sk_scripts_load(r, err, sizeof(err)), SK_OK);
        ck_assert_int_eq(sk_scripts_loaded(r), 1);
        sk_redis_close(r);
}
END_TEST

START_TEST(pipeline_every_master)
{
        enum { N = 300 };
        sk_redis_t *r = conn();
        sk_redis_pipe_t *p = sk_redis_pipe_new(r);
        char key[N][96], val[N][16], err[256];

        ck_assert_ptr_nonnull(p);
        for (int i = 0; i < N; i++) {
                const char *set[3] = { "SET", key[i], val[i] };
                snprintf(key[i], sizeof(key[i]), "%s:{p%d}", g_pfx, i);
                snprintf(val[i], sizeof(val[i]), "%d", i * 7);
                ck_assert_int_eq(sk_redis_pipe_add(p, 3, set, NULL), i);
        }
        ck_assert_int_eq(sk_redis_pipe_exec(p), 0);
        sk_redis_pipe_reset(p);
        for (int i = 0; i < N; i++) {
                const char *incr[2] = { "INCR", key[i] };
                const char *get[2] = { "GET", key[i] };
                ck_assert_int_eq(sk_redis_pipe_add(p, 2, incr, NULL), 2 * i);
                ck_assert_int_eq(sk_redis_pipe_add(p, 2, get, NULL), 2 * i + 1);
        }
        {
                const char *bad[2] = { "NOSUCHCOMMAND", "k" };
                const char *scan[2] = { "SCAN", "0" };
                ck_assert_int_eq(sk_redis_pipe_add(p, 2, bad, NULL), 2 * N);
                ck_assert_int_eq(sk_redis_pipe_add(p, 2, scan, NULL), -1);
        }
        ck_assert_int_eq(sk_redis_pipe_exec(p), 0);
        for (int i = 0; i < N; i++) {
                redisReply *rep;
                char want[16];
                ck_assert_int_eq(sk_redis_pipe_result(p, 2 * i, &rep, err, sizeof(err)), SK_OK);
                ck_assert_int_eq(rep->integer, i * 7 + 1);
                ck_assert_int_eq(sk_redis_pipe_result(p, 2 * i + 1, &rep, err, sizeof(err)), SK_OK);
                snprintf(want, sizeof(want), "%d", i * 7 + 1);
                ck_assert_str_eq(rep->str, want);
        }
        {
                redisReply *rep;
                ck_assert_int_eq(sk_redis_pipe_result(p, 2 * N, &rep, err, sizeof(err)), SK_EREDIS);
                ck_assert_ptr_nonnull(strstr(err, "unknown command"));
                ck_assert_ptr_null(rep);
                ck_assert_int_eq(sk_redis_pipe_raw(p, 2 * N)->type, REDIS_REPLY_ERROR);
                ck_assert_ptr_null(sk_redis_pipe_raw(p, 2 * N + 1));
        }
        sk_redis_pipe_free(p);
        sk_redis_close(r);
}
END_TEST

START_TEST(watch_multi_exec_one_tag)
{
        sk_redis_t *r = conn();
        char a[96], b[96], err[256];
        redisReply *rep;

        snprintf(a, sizeof(a), "%s:{tx}:a", g_pfx);
        snprintf(b, sizeof(b), "%s:{tx}:b", g_pfx);
        /* Run it on a node other than the first master too: several tags. */
        for (int i = 0; i < 3; i++) {
                cmd_ok(r, &rep, "WATCH %s %s", a, b);
                freeReplyObject(rep);
                cmd_ok(r, &rep, "GET %s", a, NULL);
                freeReplyObject(rep);
                ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "MULTI"), SK_OK);
                freeReplyObject(rep);
                cmd_ok(r, &rep, "INCR %s", a, NULL);
                freeReplyObject(rep);
                cmd_ok(r, &rep, "INCR %s", b, NULL);
                freeReplyObject(rep);
                ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "EXEC"), SK_OK);
                ck_assert_int_eq(rep->type, REDIS_REPLY_ARRAY);
                ck_assert_int_eq(rep->elements, 2);
                ck_assert_int_eq(rep->element[1]->integer, 1); /* fresh keys each time */
                freeReplyObject(rep);
                snprintf(a, sizeof(a), "%s:{tx%d}:a", g_pfx, i);
                snprintf(b, sizeof(b), "%s:{tx%d}:b", g_pfx, i);
        }
        sk_redis_close(r);
}
END_TEST

static int del_key(const char *k, size_t len, void *arg)
{
        const char *argv[2] = { "DEL", k };
        size_t argvlen[2] = { 3, len };
        redisReply *rep = NULL;

        if (sk_redis_cmd(arg, &rep, 2, argv, argvlen, NULL, 0) == SK_OK)
                freeReplyObject(rep);
        return 0;
}

static void cleanup(void)
{
        char match[96], err[256];
        sk_redis_t *r = sk_redis_connect(&g_url, 3000, err, sizeof(err));

        if (!r)
                return;
        snprintf(match, sizeof(match), "%s:*", g_pfx);
        (void)sk_redis_scan(r, match, 1000, del_key, r, err, sizeof(err));
        sk_redis_close(r);
}

int main(void)
{
        Suite *s = suite_create("redis_cluster_routing");
        TCase *tc = tcase_create("routing");
        int rc;

        sk_test_topo_up("cluster", "SECKILL_TEST_CLUSTER_URL", SK_TEST_CLUSTER_URL, &g_url);
        snprintf(g_pfx, sizeof(g_pfx), "skt_cl_%d_%lld", (int)getpid(),
                 (long long)(sk_test_rand_id() % 1000000));
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, connect_and_checks);
        tcase_add_test(tc, many_keys_route);
        tcase_add_test(tc, evalsha_on_every_master);
        tcase_add_test(tc, pipeline_every_master);
        tcase_add_test(tc, watch_multi_exec_one_tag);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        cleanup();
        return rc;
}
