/* producer/breaker.h: the front's Redis breakers (DESIGN.md 4b, 12): one per node of the
 * routing layer (breaker_set.h: on one server or Sentinel the one breaker of today; on
 * a Cluster one per master, keyed by the "host:port" serving the key's slot, so a dead
 * master stops only the purchases whose bucket lives on it), under a lock, with their
 * log lines and metrics, and the half-open probe thread (PING, ROLE = master,
 * loading:0 on the node; one a second after the minimum open time; never purchase
 * traffic). "Redis is down" for the degrade path (DESIGN.md 12) is fr_breaker_allow() = 0:
 * every node this front routes to has its breaker open (or no seed answers at all). */
#pragma once
#include <stdint.h>

#include "sk/redis.h"

/** Set up the breakers from g_fr.conf (SECKILL_BREAKER_*; per node when
 *  SECKILL_REDIS_URL is a Cluster). Once, after fr_metrics_init and before any thread
 *  starts. */
void fr_breaker_init(void);
/** Start / stop the probe thread (its own Redis connections). @returns 0 or -1. */
int fr_breaker_start(void);
void fr_breaker_stop(void);
/** 1 if some of Redis may take purchase traffic: the topology's breaker is closed and,
 *  on a Cluster, not every master's breaker is open. 0 = Redis is down for this front
 *  (the "breaker open" of DESIGN.md 12: nothing is queued, vouchers in mode auto
 *  drain). Lock-free. Thread-safe. */
int fr_breaker_allow(void);
/** 1 if purchase (and rollback) traffic may go to the node @p r (borrowed; the caller's
 *  handle, whose slot map names the node) routes @p key (borrowed) to: that node's
 *  breaker is CLOSED (unknown nodes are), and fr_breaker_allow(). 0 otherwise; then on
 *  a Cluster it also asks @p r for a slot map refresh (sk_redis_map_stale), so the
 *  caller's map follows the failover that will move the slot off the dead node. On a
 *  Cluster @p r first follows a map change the breaker thread saw (while a breaker is
 *  open it reads the map every 50 ms: sk_redis_map_follow, one CLUSTER SLOTS per change
 *  per handle), so a promoted replica gets the dead master's buckets at once. @p r
 *  NULL or one server / Sentinel: fr_breaker_allow(). Thread-safe (@p r is the
 *  caller's own). */
int fr_breaker_allow_key(sk_redis_t *r, const char *key);
/** Record one Redis command or pipelined batch that ended now on the node @p r routes
 *  @p key to (as fr_breaker_allow_key; @p r NULL or @p key NULL: the topology's own
 *  breaker; a Cluster slot the map does not cover: nobody): @p failed (timeout, I/O error, connection refused, LOADING, CLUSTERDOWN) or
 *  answered after @p latency_ms (slower than SECKILL_BREAKER_SLOW_MS counts as bad). May
 *  open that node's breaker (logged once with node=, metrics). Thread-safe. */
void fr_breaker_record_key(sk_redis_t *r, const char *key, int failed, int64_t latency_ms);
/** As fr_breaker_record_key for the node named @p addr ("host:port" as
 *  sk_redis_pipe_addr gives it; NULL = the topology's own breaker; "" = no node: on a
 *  Cluster, a slot the map does not cover, recorded nowhere; one server or Sentinel
 *  have one breaker, which takes every record). Thread-safe. */
void fr_breaker_record_addr(const char *addr, int failed, int64_t latency_ms);
/** The topology's own breaker: what no node can be blamed for (no connection to any
 *  seed or server). On one server or Sentinel the only breaker. Thread-safe. */
void fr_breaker_record(int failed, int64_t latency_ms);
/** 1 if every live breaker is closed and has seen no bad command (and no close) within
 *  SECKILL_BREAKER_HEALTHY_MS: Redis counts as healthy for the degrade recovery
 *  (DESIGN.md 12 db -> rebuilding). Thread-safe. */
int fr_breaker_healthy(void);
