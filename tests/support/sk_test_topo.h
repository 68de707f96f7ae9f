/* sk_test_topo.h: the Redis Cluster and Sentinel tests' helpers (DESIGN.md 4b, 10;
 * labels cluster / sentinel).
 *
 * Topology: each test runs `scripts/stack.sh up cluster|sentinel` first, which starts
 * the local topology (127.0.0.1:7000-7008: 3 masters with 2 replicas each; or master 6390,
 * replicas 6391-6392 + Sentinels 26390-26392) when
 * it is not running and otherwise uses the running one; the tests leave it running for
 * the next test (`scripts/stack.sh down cluster|sentinel` stops it). Tests that change
 * the topology (failover, slot migration) hold the CTest RESOURCE_LOCK of their
 * topology and leave it serving every slot. SECKILL_TEST_CLUSTER_URL /
 * SECKILL_TEST_SENTINEL_URL point them at another topology (then nothing is started).
 * Direct hiredis connections here are only for inspecting and steering single nodes
 * (CLUSTER SETSLOT, FAILOVER, ROLE); every data command goes through sk_redis. */
#pragma once
#include <stddef.h>
#include <hiredis/hiredis.h>
#include "sk/err.h"
#include "sk/redis.h"
#include "sk/url.h"

#define SK_TEST_CLUSTER_URL "redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002"
#define SK_TEST_SENTINEL_URL \
        "redis-sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/seckill"

/** Outcomes of commands run through a failover (sk_test_tally_incr). */
typedef struct sk_test_tally {
        long ok, eagain, unknown, other;
} sk_test_tally_t;

/** @brief Start (or reuse) topology @p which ("cluster", "sentinel") by
 *  scripts/stack.sh unless environment variable @p env_var names a URL; parse that URL
 *  or @p def_url into @p url. Exits 1 if either step fails. */
void sk_test_topo_up(const char *which, const char *env_var, const char *def_url,
                     sk_redis_url_t *url);
/** @brief A direct connection to one node (inspection and steering only), 5 s
 *  timeouts; fails the test if none. Owned: redisFree. */
redisContext *sk_test_node(const char *host, int port);
/** @brief A command on a direct connection (hiredis format: %s, %d, %b...); fails the
 *  test on no reply or an error reply. @returns the reply (owned: freeReplyObject). */
redisReply *sk_test_node_cmd(redisContext *c, const char *fmt, ...);
/** @brief The port of @p slot's master per CLUSTER SLOTS on @p c (-1 if unknown); its
 *  first replica's port into *@p replica_port (-1: none) when not NULL. */
int sk_test_slot_owner(redisContext *c, int slot, int *replica_port);
/** @brief Wait (≤ 30 s) until @p slot's master lists a replica and has a good one
 *  (acked within min-replicas-max-lag). @returns the master's port; the replica's into
 *  *@p replica_port. Fails the test on timeout. */
int sk_test_wait_slot_replica(const sk_redis_url_t *url, int slot, int *replica_port);
/** @brief Wait (≤ @p timeout_ms) until the node on @p replica_port can take over by a
 *  manual or automatic failover: it is a replica whose link to its master is up
 *  (INFO: master_link_status:up), and that master has at least min-replicas-to-write
 *  good replicas (min_slaves_good_slaves). A second failover right after a first must
 *  wait for this, not assume it (the old master may still be syncing). @returns the
 *  master's port; fails the test on timeout, saying which condition was missing. */
int sk_test_wait_replica_usable(int replica_port, int timeout_ms);
/** @brief Wait (≤ @p timeout_ms) until the Sentinel on @p url's first seed reports a
 *  replica of master @p url->master it would promote: SENTINEL REPLICAS flags without
 *  s_down, o_down or disconnected, master-link-status ok, replicating the master the
 *  Sentinel names now (its own INFO: master_link_status:up), and that master has at least
 *  min-replicas-to-write good replicas. A test that asks for SENTINEL FAILOVER calls this
 *  first. @returns how many usable replicas were seen (≥ 1); fails the test on timeout
 *  with the Sentinel's last view of each replica. */
int sk_test_sentinel_wait_usable(const sk_redis_url_t *url, int timeout_ms);
/** @brief CLUSTER MYID of the node on @p port into @p id (41 bytes). */
void sk_test_node_id(int port, char *id);
/** @brief INCR @p key through @p r, counted by outcome in @p t. */
void sk_test_tally_incr(sk_redis_t *r, const char *key, sk_test_tally_t *t);
/** @brief claim.lua "claim" of @p trace_id on BASE:meta / BASE:trace (@p base carries
 *  the hash tag); *@p redrives = the new re-drive count. @returns sk_redis_evalsha's
 *  code, the reason in @p err. */
sk_err_t sk_test_claim(sk_redis_t *r, const char *base, const char *trace_id,
                       long long *redrives, char *err, size_t err_size);
