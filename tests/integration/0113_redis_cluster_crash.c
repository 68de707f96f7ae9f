/* 0113_redis_cluster_crash.c: the master of a key's slot stops answering (SIGSTOP)
 * while sk_redis runs INCRs on it (DESIGN.md 4b, 8; label cluster; topology: see
 * sk_test_topo.h; the node must run on this host, its pid comes from INFO).
 *   - while it is frozen: commands time out (SK_EUNKNOWN, connection dropped) or are
 *     refused (SK_EAGAIN: CLUSTERDOWN once the cluster marks the node failed,
 *     NOREPLICAS on the promoted replica that has no replica yet); never SK_OK from a
 *     frozen node, never another error class;
 *   - a replica takes over by itself (cluster-node-timeout; with two replicas either may
 *     win the election); after SIGCONT the old
 *     master rejoins as its replica and the same handle succeeds again, following the
 *     new map without being reopened;
 *   - the counter never exceeds acknowledged + unknown INCRs.
 * A manual failover at the end gives the slot back to the old master. */
#include <signal.h>

#include <errno.h>
#include <hiredis/hiredis.h>

#include "sk_test.h"
#include "sk/crc16.h"

static sk_redis_url_t g_url;
static char g_tag[64];

static long node_pid(int port)
{
        redisContext *c = sk_test_node("127.0.0.1", port);
        redisReply *r = sk_test_node_cmd(c, "INFO server");
        const char *p = strstr(r->str, "process_id:");
        long pid = p ? atol(p + 11) : -1;

        freeReplyObject(r);
        redisFree(c);
        return pid;
}

/* Owner of @p slot seen by the node on @p port (another node than the frozen one). */
static int owner_seen_by(int port, int slot)
{
        redisContext *c = sk_test_node("127.0.0.1", port);
        int o = sk_test_slot_owner(c, slot, NULL);
        redisFree(c);
        return o;
}

/* INCR until @p done(arg) or @p ms elapsed; @returns 1 if done. */
static int incr_until(sk_redis_t *r, const char *k, sk_test_tally_t *t, int ms,
                      int (*done)(void *arg, int streak), void *arg)
{
        int64_t t0 = sk_mono_ms();
        int streak = 0;

        while (sk_mono_ms() - t0 < ms) {
                long before = t->ok;
                sk_test_tally_incr(r, k, t);
                streak = t->ok > before ? streak + 1 : 0;
                if (done(arg, streak))
                        return 1;
                if (streak == 0)
                        usleep(50000);
        }
        return 0;
}

/* The cluster has settled after the tests before this one (0112 ends with manual
 * failovers): every seed node says cluster_state:ok, names @p master as the slot's owner
 * and reports the same cluster_current_epoch, five times in a row 200 ms apart (up to
 * 30 s). Freezing a master while an earlier failover's epochs still spread can leave
 * the election of its replica unseen by the others. @returns 1 once settled. */
static int cluster_settled(int slot, int master)
{
        int64_t t0 = sk_mono_ms();
        int stable = 0;

        while (sk_mono_ms() - t0 < 30000 && stable < 5) {
                long long epoch = -1;
                int ok = 1;

                for (int i = 0; i < g_url.nseeds && ok; i++) {
                        redisContext *c = sk_test_node(g_url.seeds[i].host, g_url.seeds[i].port);
                        redisReply *r = sk_test_node_cmd(c, "CLUSTER INFO");
                        const char *e = strstr(r->str, "cluster_current_epoch:");
                        long long ep = e ? strtoll(e + 22, NULL, 10) : -2;

                        ok = strstr(r->str, "cluster_state:ok") != NULL && (epoch < 0 || ep == epoch);
                        epoch = ep;
                        freeReplyObject(r);
                        ok = ok && sk_test_slot_owner(c, slot, NULL) == master;
                        redisFree(c);
                }
                stable = ok ? stable + 1 : 0;
                usleep(200000);
        }
        return stable >= 5;
}

typedef struct { int watcher, slot, old, now; } own_t;

/* The watcher names another master than the frozen one for the slot (a replica of it
 * won the election); that master's port into o->now. */
static int owner_moved(void *arg, int streak)
{
        own_t *o = arg;
        int owner = owner_seen_by(o->watcher, o->slot);
        (void)streak;
        if (owner > 0 && owner != o->old)
                o->now = owner;
        return o->now > 0;
}

static int streak_50(void *arg, int streak)
{
        (void)arg;
        return streak >= 50;
}

START_TEST(master_frozen_during_commands)
{
        char err[256], k[96];
        sk_redis_t *r = sk_redis_connect(&g_url, 500, err, sizeof(err));
        redisContext *c0 = sk_test_node("127.0.0.1", g_url.port);
        int slot = sk_key_slot(g_tag, strlen(g_tag)), replica = -1, master, watcher = -1;
        sk_test_tally_t frozen = { 0 }, t = { 0 };
        long pid;
        redisReply *rep;

        ck_assert_msg(r != NULL, "%s", err);
        master = sk_test_wait_slot_replica(&g_url, slot, &replica);
        ck_assert_int_eq(sk_test_wait_replica_usable(replica, 60000), master);
        ck_assert_msg(cluster_settled(slot, master), "cluster not settled on master %d", master);
        rep = sk_test_node_cmd(c0, "CLUSTER SLOTS");     /* another master watches the map */
        for (size_t i = 0; i < rep->elements; i++) {
                int p = (int)rep->element[i]->element[2]->element[1]->integer;
                if (p != master)
                        watcher = p;
        }
        freeReplyObject(rep);
        redisFree(c0);
        ck_assert_int_gt(watcher, 0);
        pid = node_pid(master);
        ck_assert_int_gt(pid, 1);
        snprintf(k, sizeof(k), "{%s}:ctr", g_tag);
        for (int i = 0; i < 20; i++)
                sk_test_tally_incr(r, k, &t);
        ck_assert_int_eq(t.ok, 20);

        ck_assert_int_eq(kill((pid_t)pid, SIGSTOP), 0);
        {
                own_t o = { watcher, slot, master, -1 };
                int promoted = incr_until(r, k, &frozen, 30000, owner_moved, &o);
                kill((pid_t)pid, SIGCONT);
                ck_assert_msg(promoted, "no replica of %d promoted within 30 s", master);
                replica = o.now;
        }
        fprintf(stderr, "frozen master %d, replica %d promoted: ok=%ld eagain=%ld unknown=%ld\n", master,
                replica, frozen.ok, frozen.eagain, frozen.unknown);
        ck_assert_int_eq(frozen.other, 0);
        ck_assert_int_ge(frozen.unknown + frozen.eagain, 1);
        t.ok += frozen.ok;
        t.unknown += frozen.unknown;
        /* The old master rejoins as a replica: the new master takes writes again. */
        ck_assert_msg(incr_until(r, k, &t, 40000, streak_50, NULL), "no recovery after SIGCONT");
        ck_assert_int_eq(t.other, 0);
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "GET %s", k), SK_OK);
        ck_assert_int_le(atol(rep->str), t.ok + t.unknown);
        freeReplyObject(rep);

        /* Give the slot back (manual failover once the old master has synced and its new
         * master has its good replicas). */
        {
                redisContext *cm = sk_test_node("127.0.0.1", master);
                int64_t t0, asked = 0;

                ck_assert_int_eq(sk_test_wait_replica_usable(master, 60000), replica);
                t0 = sk_mono_ms();
                while (sk_mono_ms() - t0 < 40000 && owner_seen_by(watcher, slot) != master) {
                        rep = sk_test_node_cmd(cm, "INFO replication");
                        if (strstr(rep->str, "master_link_status:up") &&
                            sk_mono_ms() - asked > 7000) {
                                freeReplyObject(sk_test_node_cmd(cm, "CLUSTER FAILOVER"));
                                asked = sk_mono_ms();
                        }
                        freeReplyObject(rep);
                        usleep(200000);
                }
                redisFree(cm);
                ck_assert_int_eq(owner_seen_by(watcher, slot), master);
        }
        ck_assert_msg(incr_until(r, k, &t, 30000, streak_50, NULL), "no writes after failback");
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "DEL %s", k), SK_OK);
        freeReplyObject(rep);
        sk_redis_close(r);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("redis_cluster_crash");
        TCase *tc = tcase_create("crash");

        sk_test_topo_up("cluster", "SECKILL_TEST_CLUSTER_URL", SK_TEST_CLUSTER_URL, &g_url);
        snprintf(g_tag, sizeof(g_tag), "skt-crash-%d-%lld", (int)getpid(),
                 (long long)(sk_test_rand_id() % 1000000));
        tcase_set_timeout(tc, 280);
        tcase_add_test(tc, master_frozen_during_commands);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
