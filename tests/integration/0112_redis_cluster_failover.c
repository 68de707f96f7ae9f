/* 0112_redis_cluster_failover.c: CLUSTER FAILOVER of the master of a key's slot while
 * sk_redis runs INCR and EVALSHA on it (DESIGN.md 4b, 8; label cluster; topology: see
 * sk_test_topo.h).
 *   - during the failover commands answer, or fail as SK_EAGAIN (not run: MOVED past
 *     the limit, NOREPLICAS until the old master resyncs, CLUSTERDOWN) or SK_EUNKNOWN
 *     (timeout / I/O error); nothing else;
 *   - after it, the handle follows the new master without being reopened (MOVED, map
 *     refresh) and every command succeeds again;
 *   - the counter equals the acknowledged INCRs plus at most the unknown ones;
 *   - claim.lua runs on the new master (which never saw SCRIPT LOAD: NOSCRIPT -> load
 *     on that node, retry once) and its count continues.
 * The old master is made master again at the end (a second CLUSTER FAILOVER). Each
 * CLUSTER FAILOVER is asked only once its replica is usable (sk_test_wait_replica_usable:
 * linked to its master, which has its min-replicas-to-write good replicas): before the
 * failback the old master may still be syncing. */
#include <errno.h>
#include <hiredis/hiredis.h>

#include "sk_test.h"
#include "sk/crc16.h"

static sk_redis_url_t g_url;
static char g_tag[64];

/* Ask @p replica_port to take over; run INCRs until @p want_owner serves the slot and
 * 50 INCRs in a row succeeded (at most 30 s). */
static void failover_during_incr(sk_redis_t *r, const char *k, int slot, int replica_port,
                                 sk_test_tally_t *t)
{
        redisContext *c0 = sk_test_node("127.0.0.1", g_url.port);
        redisContext *cr = sk_test_node("127.0.0.1", replica_port);
        int64_t t0, asked;
        int streak = 0, owner = -1;

        (void)sk_test_wait_replica_usable(replica_port, 60000);
        freeReplyObject(sk_test_node_cmd(cr, "CLUSTER FAILOVER"));
        t0 = asked = sk_mono_ms();
        while (sk_mono_ms() - t0 < 40000) {
                long before = t->ok;
                sk_test_tally_incr(r, k, t);
                streak = t->ok > before ? streak + 1 : 0;
                if (streak >= 50 && (owner = sk_test_slot_owner(c0, slot, NULL)) == replica_port)
                        break;
                /* Masters vote for one failover of a shard per 2 x node timeout (6 s
                 * here): a failback right after a failover times out; ask again. */
                if (owner != replica_port && sk_mono_ms() - asked > 7000) {
                        freeReplyObject(sk_test_node_cmd(cr, "CLUSTER FAILOVER"));
                        asked = sk_mono_ms();
                }
                if (streak == 0)
                        usleep(20000);
        }
        ck_assert_int_eq(sk_test_slot_owner(c0, slot, NULL), replica_port);
        ck_assert_int_ge(streak, 50);
        redisFree(cr);
        redisFree(c0);
}

START_TEST(failover_during_commands)
{
        char err[256], k[96], base[80];
        sk_redis_t *r = sk_redis_connect(&g_url, 3000, err, sizeof(err));
        redisContext *c0 = sk_test_node("127.0.0.1", g_url.port);
        int slot = sk_key_slot(g_tag, strlen(g_tag)), replica = -1, master;
        sk_test_tally_t t = { 0 };
        long long redrives = 0;
        redisReply *rep;

        ck_assert_msg(r != NULL, "%s", err);
        master = sk_test_wait_slot_replica(&g_url, slot, &replica);
        ck_assert_int_gt(replica, 0);
        snprintf(k, sizeof(k), "{%s}:ctr", g_tag);
        snprintf(base, sizeof(base), "{%s}", g_tag);
        ck_assert_int_eq(sk_scripts_load(r, err, sizeof(err)), SK_OK);
        ck_assert_msg(sk_test_claim(r, base, "77", &redrives, err, sizeof(err)) == SK_OK, "%s", err);
        ck_assert_int_eq(redrives, 1);
        for (int i = 0; i < 50; i++)
                sk_test_tally_incr(r, k, &t);
        ck_assert_int_eq(t.ok, 50);

        failover_during_incr(r, k, slot, replica, &t);
        fprintf(stderr, "failover to %d: ok=%ld eagain=%ld unknown=%ld\n", replica, t.ok,
                t.eagain, t.unknown);
        ck_assert_int_eq(t.other, 0);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "GET %s", k), SK_OK);
        ck_assert_int_ge(atol(rep->str), t.ok);
        ck_assert_int_le(atol(rep->str), t.ok + t.unknown);
        freeReplyObject(rep);
        /* The new master never saw SCRIPT LOAD: NOSCRIPT -> load there, retry once. */
        ck_assert_msg(sk_test_claim(r, base, "77", &redrives, err, sizeof(err)) == SK_OK, "%s", err);
        ck_assert_int_eq(redrives, 2);

        /* Back to the original layout. */
        failover_during_incr(r, k, slot, master, &t);
        ck_assert_int_eq(t.other, 0);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "GET %s", k), SK_OK);
        ck_assert_int_ge(atol(rep->str), t.ok);
        ck_assert_int_le(atol(rep->str), t.ok + t.unknown);
        freeReplyObject(rep);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "DEL {%s}:ctr {%s}:meta {%s}:trace",
                                       g_tag, g_tag, g_tag), SK_OK);
        freeReplyObject(rep);
        redisFree(c0);
        sk_redis_close(r);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("redis_cluster_failover");
        TCase *tc = tcase_create("failover");

        sk_test_topo_up("cluster", "SECKILL_TEST_CLUSTER_URL", SK_TEST_CLUSTER_URL, &g_url);
        snprintf(g_tag, sizeof(g_tag), "skt-fo-%d-%lld", (int)getpid(),
                 (long long)(sk_test_rand_id() % 1000000));
        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, failover_during_commands);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
