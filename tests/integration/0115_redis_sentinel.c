/* 0115_redis_sentinel.c: sk_redis through Redis Sentinel (DESIGN.md 4b, 8; label
 * sentinel; topology: see sk_test_topo.h).
 *   - the master is found through the Sentinels even when the first listed one is
 *     down; an unknown master name fails with a clear message;
 *   - SENTINEL FAILOVER while INCRs run: commands answer or fail as SK_EAGAIN
 *     (READONLY from the demoted master, refused connects, ROLE not master) or
 *     SK_EUNKNOWN, then the same handle follows the new master (resolved again on
 *     reconnect and on READONLY) and every command succeeds again;
 *   - the counter never exceeds acknowledged + unknown INCRs (a forced failover may
 *     lose acknowledged writes, DESIGN.md 8: the DB stays the judge);
 *   - claim.lua runs on the new master (NOSCRIPT -> load, retry once);
 *   - a planned failover is followed without an error first (+switch-master).
 * Every SENTINEL FAILOVER is asked only once the Sentinel reports a usable replica
 * (sk_test_sentinel_wait_usable): right after a failover the old master may still be
 * syncing as a replica, and a replica that is not usable makes the Sentinels refuse or
 * abort the next one. */
#include <errno.h>
#include <hiredis/hiredis.h>

#include "sk_test.h"

static sk_redis_url_t g_url;
static char g_key[96];

/* Port of the master the first Sentinel names. */
static int sentinel_master_port(void)
{
        redisContext *c = sk_test_node(g_url.seeds[0].host, g_url.seeds[0].port);
        redisReply *r = sk_test_node_cmd(c, "SENTINEL get-master-addr-by-name %s", g_url.master);
        int port = atoi(r->element[1]->str);
        freeReplyObject(r);
        redisFree(c);
        return port;
}

/* SENTINEL FAILOVER through Sentinel @p sc once it reports a usable replica (≤ 60 s),
 * asked again (1 s apart, 60 s at most) while a failover still settling from an earlier
 * run answers INPROG. @returns the master's port when the failover was accepted. */
static int failover(redisContext *sc)
{
        int64_t t0;
        int old, usable;
        redisReply *rep;

        usable = sk_test_sentinel_wait_usable(&g_url, 60000);
        fprintf(stderr, "sentinel: %d usable replica(s) before SENTINEL FAILOVER\n", usable);
        t0 = sk_mono_ms();
        old = sentinel_master_port();

        for (;;) {
                rep = redisCommand(sc, "SENTINEL FAILOVER %s", g_url.master);
                ck_assert_ptr_nonnull(rep);
                if (rep->type != REDIS_REPLY_ERROR) {
                        freeReplyObject(rep);
                        return old;
                }
                ck_assert_msg(sk_mono_ms() - t0 < 60000, "SENTINEL FAILOVER: %s", rep->str);
                freeReplyObject(rep);
                sleep(1);
                old = sentinel_master_port();
        }
}

START_TEST(discovery)
{
        char err[256];
        sk_redis_url_t u;
        sk_redis_t *r;
        redisReply *rep;

        /* The first Sentinel listed is not there. */
        ck_assert_int_eq(sk_redis_url_parse("redis-sentinel://127.0.0.1:1,127.0.0.1:26391/seckill",
                                            &u, err, sizeof(err)), 0);
        if (getenv("SECKILL_TEST_SENTINEL_URL") && *getenv("SECKILL_TEST_SENTINEL_URL"))
                u = g_url;
        r = sk_redis_connect(&u, 2000, err, sizeof(err));
        ck_assert_msg(r != NULL, "%s", err);
        ck_assert_int_eq(sk_redis_kind(r), SK_REDIS_SENTINEL);
        ck_assert_msg(sk_redis_check_server(r, err, sizeof(err)) == SK_OK, "%s", err);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "SET %s 0", g_key), SK_OK);
        freeReplyObject(rep);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "ROLE"), SK_OK);
        ck_assert_str_eq(rep->element[0]->str, "master");
        freeReplyObject(rep);
        sk_redis_close(r);

        /* A master name no Sentinel knows. */
        u = g_url;
        snprintf(u.master, sizeof(u.master), "nosuchmaster");
        ck_assert_ptr_null(sk_redis_connect(&u, 1000, err, sizeof(err)));
        ck_assert_msg(strstr(err, "nosuchmaster") != NULL, "%s", err);
}
END_TEST

/* Port of the node @p r's next command goes to (CONFIG GET port through the handle). */
static int handle_port(sk_redis_t *r)
{
        char err[256];
        redisReply *rep = NULL;
        int port = -1;

        if (sk_redis_cmdf(r, &rep, err, sizeof(err), "CONFIG GET port") == SK_OK &&
            rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
                port = atoi(rep->element[1]->str);
        if (rep)
                freeReplyObject(rep);
        return port;
}

START_TEST(failover_during_commands)
{
        char err[256];
        sk_redis_t *r = sk_redis_connect(&g_url, 2000, err, sizeof(err));
        redisContext *sc = sk_test_node(g_url.seeds[0].host, g_url.seeds[0].port);
        int old = sentinel_master_port(), streak = 0, now = -1;
        sk_test_tally_t t = { 0 };
        long long redrives = 0;
        int64_t t0;
        redisReply *rep;

        ck_assert_msg(r != NULL, "%s", err);
        ck_assert_msg(sk_test_claim(r, g_key, "99", &redrives, err, sizeof(err)) == SK_OK, "%s", err);
        for (int i = 0; i < 50; i++)
                sk_test_tally_incr(r, g_key, &t);
        ck_assert_int_eq(t.ok, 50);
        (void)failover(sc);
        t0 = sk_mono_ms();
        while (sk_mono_ms() - t0 < 60000) {
                long before = t.ok;
                sk_test_tally_incr(r, g_key, &t);
                streak = t.ok > before ? streak + 1 : 0;
                /* With two replicas the Sentinels name the promoted replica while they
                 * still reconfigure the other one, before +switch-master: wait until the
                 * handle is on the master they name, not only until they name one. */
                if (streak >= 50 && (now = sentinel_master_port()) != old && handle_port(r) == now)
                        break;
                if (streak == 0)
                        usleep(50000);
        }
        fprintf(stderr, "sentinel failover %d -> %d: ok=%ld eagain=%ld unknown=%ld\n", old,
                sentinel_master_port(), t.ok, t.eagain, t.unknown);
        ck_assert_int_ne(sentinel_master_port(), old);
        ck_assert_int_eq(handle_port(r), sentinel_master_port());
        ck_assert_int_ge(streak, 50);
        ck_assert_int_eq(t.other, 0);
        /* The handle now talks to the new master. */
        {
                redisContext *c = sk_test_node("127.0.0.1", sentinel_master_port());
                redisReply *v = sk_test_node_cmd(c, "GET %s", g_key);
                ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "GET %s", g_key), SK_OK);
                ck_assert_str_eq(rep->str, v->str);
                ck_assert_int_le(atol(rep->str), t.ok + t.unknown);
                freeReplyObject(rep);
                freeReplyObject(v);
                redisFree(c);
        }
        ck_assert_msg(sk_test_claim(r, g_key, "99", &redrives, err, sizeof(err)) == SK_OK, "%s", err);
        ck_assert_int_ge(redrives, 1);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "DEL %s %s:meta %s:trace",
                                       g_key, g_key, g_key), SK_OK);
        freeReplyObject(rep);
        redisFree(sc);
        sk_redis_close(r);
}
END_TEST

/* DESIGN.md 4b: a handle connected to the master follows a planned
 * SENTINEL FAILOVER without meeting any error first: the +switch-master subscription
 * (or the once-a-second ask) moves its next command to the new master. Reads keep
 * working on a demoted master, so a handle that only re-resolves on errors stays there;
 * this one must be on the new master 1.5 s after the Sentinels switched. */
START_TEST(switch_master_followed)
{
        char err[256];
        sk_redis_t *r = sk_redis_connect(&g_url, 2000, err, sizeof(err));
        redisContext *sc = sk_test_node(g_url.seeds[0].host, g_url.seeds[0].port);
        int old = sentinel_master_port(), now;
        int64_t t0;

        ck_assert_msg(r != NULL, "%s", err);
        ck_assert_int_eq(handle_port(r), old);
        old = failover(sc);
        t0 = sk_mono_ms();
        while ((now = sentinel_master_port()) == old) {
                ck_assert_msg(sk_mono_ms() - t0 < 45000, "the Sentinels did not switch within 45 s");
                usleep(20000);
        }
        sk_sleep_ms(1500, NULL);
        ck_assert_int_eq(handle_port(r), now);
        redisFree(sc);
        sk_redis_close(r);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("redis_sentinel");
        TCase *tc = tcase_create("sentinel");

        sk_test_topo_up("sentinel", "SECKILL_TEST_SENTINEL_URL", SK_TEST_SENTINEL_URL, &g_url);
        snprintf(g_key, sizeof(g_key), "skt_sen_%d_%lld", (int)getpid(),
                 (long long)(sk_test_rand_id() % 1000000));
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, discovery);
        tcase_add_test(tc, failover_during_commands);
        tcase_add_test(tc, switch_master_followed);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
