/* 0111_redis_cluster_migrate.c: a slot migration on the real local Redis Cluster while
 * sk_redis runs commands on that slot (DESIGN.md 4b; label cluster; topology: see
 * sk_test_topo.h). The slot is moved A -> B by hand (CLUSTER SETSLOT
 * IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE), as redis-cli --cluster reshard does:
 *   - a key still on A is served by A; a new key goes to B through ASK (ASKING, map
 *     unchanged) and reads back through ASK;
 *   - a multi-key command over a key on A and one on B gets TRYAGAIN: bounded retries,
 *     then SK_EAGAIN (not run) — or, when the migration finishes meanwhile, MOVED to B
 *     and the answer;
 *   - a pipeline over the migrating slot and other slots gets every reply, re-sending
 *     only the redirected commands;
 *   - after SETSLOT NODE, the stale map meets MOVED and follows it.
 * The slot is moved back at the end, so the cluster is left as found. */
#include <pthread.h>

#include <errno.h>
#include <hiredis/hiredis.h>

#include "sk_test.h"
#include "sk/crc16.h"

static sk_redis_url_t g_url;
static char g_tag[64];
static int g_slot;

static sk_redis_t *conn(void)
{
        char err[256];
        sk_redis_t *r = sk_redis_connect(&g_url, 3000, err, sizeof(err));
        ck_assert_msg(r != NULL, "connect: %s", err);
        return r;
}

/* Ports of the three masters (from CLUSTER SLOTS of 7000's view). */
static int masters(int *ports)
{
        redisContext *c = sk_test_node("127.0.0.1", g_url.port);
        redisReply *r = sk_test_node_cmd(c, "CLUSTER SLOTS");
        int n = 0;

        for (size_t i = 0; i < r->elements; i++) {
                int p = (int)r->element[i]->element[2]->element[1]->integer, dup = 0;
                for (int k = 0; k < n; k++)
                        dup |= ports[k] == p;
                if (!dup && n < 8)
                        ports[n++] = p;
        }
        freeReplyObject(r);
        redisFree(c);
        return n;
}

static void setslot_all(int slot, const char *how, const char *id)
{
        int ports[8], n = masters(ports);

        for (int i = 0; i < n; i++) {
                redisContext *c = sk_test_node("127.0.0.1", ports[i]);
                redisReply *r = redisCommand(c, "CLUSTER SETSLOT %d %s %s", slot, how, id);
                ck_assert_ptr_nonnull(r);
                freeReplyObject(r);
                redisFree(c);
        }
}

static void start_migration(int slot, int from, int to)
{
        char from_id[41], to_id[41];
        redisContext *cf = sk_test_node("127.0.0.1", from), *ct = sk_test_node("127.0.0.1", to);

        sk_test_node_id(from, from_id);
        sk_test_node_id(to, to_id);
        freeReplyObject(sk_test_node_cmd(ct, "CLUSTER SETSLOT %d IMPORTING %s", slot, from_id));
        freeReplyObject(sk_test_node_cmd(cf, "CLUSTER SETSLOT %d MIGRATING %s", slot, to_id));
        redisFree(cf);
        redisFree(ct);
}

/* MIGRATE every key of @p slot from -> to, then SETSLOT NODE on every master. */
static void finish_migration(int slot, int from, int to)
{
        char to_id[41];
        redisContext *cf = sk_test_node("127.0.0.1", from);

        sk_test_node_id(to, to_id);
        for (;;) {
                redisReply *keys = sk_test_node_cmd(cf, "CLUSTER GETKEYSINSLOT %d 100", slot);
                if (keys->elements == 0) {
                        freeReplyObject(keys);
                        break;
                }
                for (size_t i = 0; i < keys->elements; i++)
                        freeReplyObject(sk_test_node_cmd(cf, "MIGRATE 127.0.0.1 %d %b 0 5000", to,
                                                keys->element[i]->str,
                                                (size_t)keys->element[i]->len));
                freeReplyObject(keys);
        }
        redisFree(cf);
        setslot_all(slot, "NODE", to_id);
}

static void set_ok(sk_redis_t *r, const char *k, const char *v)
{
        char err[256];
        redisReply *rep;
        sk_err_t e = sk_redis_cmdf(r, &rep, err, sizeof(err), "SET %s %s", k, v);
        ck_assert_msg(e == SK_OK, "SET %s: %s", k, err);
        freeReplyObject(rep);
}

static void get_eq(sk_redis_t *r, const char *k, const char *v)
{
        char err[256];
        redisReply *rep;
        sk_err_t e = sk_redis_cmdf(r, &rep, err, sizeof(err), "GET %s", k);
        ck_assert_msg(e == SK_OK, "GET %s: %s", k, err);
        ck_assert_int_eq(rep->type, REDIS_REPLY_STRING);
        ck_assert_str_eq(rep->str, v);
        freeReplyObject(rep);
}

static int keys_in_slot(int port, int slot)
{
        redisContext *c = sk_test_node("127.0.0.1", port);
        redisReply *r = sk_test_node_cmd(c, "CLUSTER COUNTKEYSINSLOT %d", slot);
        int n = (int)r->integer;
        freeReplyObject(r);
        redisFree(c);
        return n;
}

typedef struct { int slot, from, to, delay_ms; } mig_t;

static void *finish_later(void *arg)
{
        mig_t *m = arg;
        usleep((useconds_t)m->delay_ms * 1000);
        finish_migration(m->slot, m->from, m->to);
        return NULL;
}

START_TEST(migrate_during_commands)
{
        sk_redis_t *r = conn();
        redisContext *c0 = sk_test_node("127.0.0.1", g_url.port);
        int ports[8], nm = masters(ports), a = sk_test_slot_owner(c0, g_slot, NULL), b = -1;
        char k1[96], k2[96], k3[96], err[256];
        redisReply *rep;
        int64_t t0;

        ck_assert_int_eq(nm, 3);
        for (int i = 0; i < nm; i++)
                if (ports[i] != a)
                        b = ports[i];
        snprintf(k1, sizeof(k1), "{%s}:k1", g_tag);
        snprintf(k2, sizeof(k2), "{%s}:k2", g_tag);
        snprintf(k3, sizeof(k3), "{%s}:k3", g_tag);
        set_ok(r, k1, "one");                   /* on A, before the migration */

        start_migration(g_slot, a, b);
        get_eq(r, k1, "one");                   /* still on A */
        set_ok(r, k2, "two");                   /* new key: ASK -> B */
        ck_assert_int_eq(keys_in_slot(b, g_slot), 1);
        ck_assert_int_eq(keys_in_slot(a, g_slot), 1);
        get_eq(r, k2, "two");                   /* ASK again: the map was not changed */

        /* k1 on A, k2 on B: TRYAGAIN until the limit -> not run. */
        t0 = sk_mono_ms();
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "MGET %s %s", k1, k2), SK_EAGAIN);
        ck_assert_msg(strstr(err, "TRYAGAIN") != NULL, "%s", err);
        ck_assert_int_lt(sk_mono_ms() - t0, 5000);

        /* A pipeline over the migrating slot and other slots. */
        {
                sk_redis_pipe_t *p = sk_redis_pipe_new(r);
                char other[20][96];
                const char *g1[2] = { "GET", k1 }, *g2[2] = { "GET", k2 };
                const char *s3[3] = { "SET", k3, "three" };
                for (int i = 0; i < 20; i++) {
                        const char *s[3] = { "SET", other[i], "x" };
                        snprintf(other[i], sizeof(other[i]), "{%s-o%d}", g_tag, i);
                        sk_redis_pipe_add(p, 3, s, NULL);
                        if (i == 5)
                                sk_redis_pipe_add(p, 2, g1, NULL);
                        if (i == 10)
                                sk_redis_pipe_add(p, 2, g2, NULL);
                        if (i == 15)
                                sk_redis_pipe_add(p, 3, s3, NULL);
                }
                ck_assert_int_eq(sk_redis_pipe_exec(p), 0);
                ck_assert_int_eq(sk_redis_pipe_result(p, 6, &rep, err, sizeof(err)), SK_OK);
                ck_assert_str_eq(rep->str, "one");
                ck_assert_int_eq(sk_redis_pipe_result(p, 12, &rep, err, sizeof(err)), SK_OK);
                ck_assert_str_eq(rep->str, "two");
                ck_assert_int_eq(sk_redis_pipe_result(p, 18, &rep, err, sizeof(err)), SK_OK);
                ck_assert_str_eq(rep->str, "OK");
                ck_assert_int_eq(keys_in_slot(b, g_slot), 2);   /* k3 went to B by ASK */
                sk_redis_pipe_free(p);
        }

        /* TRYAGAIN while the migration finishes: MOVED to B, then the answer. */
        {
                mig_t m = { g_slot, a, b, 30 };
                pthread_t th;
                ck_assert_int_eq(pthread_create(&th, NULL, finish_later, &m), 0);
                rep = NULL;
                ck_assert_msg(sk_redis_cmdf(r, &rep, err, sizeof(err), "MGET %s %s", k1, k2) == SK_OK,
                              "MGET during the end of the migration: %s", err);
                pthread_join(th, NULL);
                ck_assert_int_eq(rep->elements, 2);
                ck_assert_str_eq(rep->element[0]->str, "one");
                ck_assert_str_eq(rep->element[1]->str, "two");
                freeReplyObject(rep);
        }
        ck_assert_int_eq(sk_test_slot_owner(c0, g_slot, NULL), b);
        ck_assert_int_eq(keys_in_slot(b, g_slot), 3);
        ck_assert_int_eq(keys_in_slot(a, g_slot), 0);
        get_eq(r, k3, "three");

        /* A fresh handle learns B from the map; the old one follows MOVED back. */
        {
                sk_redis_t *r2 = conn();
                get_eq(r2, k1, "one");
                sk_redis_close(r2);
        }
        start_migration(g_slot, b, a);
        finish_migration(g_slot, b, a);
        get_eq(r, k1, "one");                   /* MOVED -> A */
        get_eq(r, k2, "two");
        ck_assert_int_eq(sk_redis_cmdf(r, &rep, err, sizeof(err), "DEL %s %s %s", k1, k2, k3), SK_OK);
        ck_assert_int_eq(rep->integer, 3);
        freeReplyObject(rep);
        redisFree(c0);
        sk_redis_close(r);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("redis_cluster_migrate");
        TCase *tc = tcase_create("migrate");

        sk_test_topo_up("cluster", "SECKILL_TEST_CLUSTER_URL", SK_TEST_CLUSTER_URL, &g_url);
        snprintf(g_tag, sizeof(g_tag), "skt-mig-%d-%lld", (int)getpid(),
                 (long long)(sk_test_rand_id() % 1000000));
        g_slot = sk_key_slot(g_tag, strlen(g_tag));
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, migrate_during_commands);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
