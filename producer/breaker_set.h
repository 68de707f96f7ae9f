/* producer/breaker_set.h: the front's Redis breakers, one per node (DESIGN.md 4b, 12), as
 * a pure table of breaker_fsm.h state machines (no clock, no I/O, no lock: every call
 * takes the caller's monotonic time in ms; the caller serialises the calls).
 *
 * Entry 0 is the topology's own breaker: on one server or Sentinel the only one (one
 * node = one breaker, its address may change with a failover); on a Cluster it takes
 * only what no node can be blamed for (no seed answers CLUSTER SLOTS). In per-node mode
 * (Cluster) every master a command was routed to gets its own entry, keyed by its
 * "host:port" as the routing layer names it (sk_redis_key_addr), created closed on first
 * use, so a dead master opens only its own breaker while the others keep selling.
 *
 * An entry is live while its node serves slots; a node that no longer does (a replica
 * was promoted in its place, the map moved on) is retired by the caller: reset to closed
 * and left out of fr_brkset_usable, fr_brkset_healthy and fr_brkset_open_count until a
 * command is routed to it again. The table only grows (at most FR_BRKSET_MAX entries;
 * past that, new nodes share entry 0). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "breaker_fsm.h"

#define FR_BRKSET_MAX 64        /* entries: entry 0 and up to 63 nodes */
#define FR_BRK_ADDR_MAX 272     /* "host:port" of sk_redis_key_addr, NUL included */

typedef struct fr_brkset_ent {
        char addr[FR_BRK_ADDR_MAX];     /* "" for entry 0 */
        sk_breaker_t b;
        int live;                       /* entry 0, or a node serving slots */
} fr_brkset_ent_t;

typedef struct fr_brkset {
        sk_breaker_conf_t c;
        int per_node;                   /* Cluster: one entry per node */
        int n;                          /* entries used, >= 1 */
        fr_brkset_ent_t e[FR_BRKSET_MAX];
} fr_brkset_t;

/** Initialise @p s (caller's storage) with entry 0 only, CLOSED, settings @p c (copied),
 *  @p per_node 1 for a Cluster, 0 for one server or Sentinel, at @p now_ms. */
void fr_brkset_init(fr_brkset_t *s, const sk_breaker_conf_t *c, int per_node, int64_t now_ms);
/** The entry of node @p addr (borrowed; NULL or "" = entry 0), added CLOSED at @p now_ms
 *  when unknown (a full table answers 0). Not per-node: always 0. @returns its index. */
int fr_brkset_entry(fr_brkset_t *s, const char *addr, int64_t now_ms);
/** 1 if purchase traffic may go to node @p addr (borrowed; NULL/"" = entry 0): entry 0
 *  CLOSED and (per-node) the node's entry CLOSED or unknown. Pure. */
int fr_brkset_allow(const fr_brkset_t *s, const char *addr);
/** Record one command or pipelined batch to node @p addr (NULL/"" = entry 0), as
 *  sk_breaker_record; a retired entry that gets traffic is live again. @p idx_out (may
 *  be NULL) receives the entry's index for the caller's log line. */
sk_brk_event_t fr_brkset_record(fr_brkset_t *s, const char *addr, int64_t now_ms, int failed,
                                int64_t latency_ms, int *idx_out);
/** 1 if some of Redis may be used: entry 0 CLOSED and, per-node, not every live node
 *  entry open (with no node entry yet: entry 0 alone decides). 0 = Redis is down for
 *  this front: the "breaker open" of DESIGN.md 12 that drains vouchers. Pure. */
int fr_brkset_usable(const fr_brkset_t *s);
/** 1 if every live entry is healthy (sk_breaker_healthy): Redis seen healthy for
 *  healthy_ms, DESIGN.md 12 db -> rebuilding. Pure. */
int fr_brkset_healthy(const fr_brkset_t *s, int64_t now_ms);
/** Number of live entries not CLOSED (the metric seckill_front_redis_breaker_open). Pure. */
int fr_brkset_open_count(const fr_brkset_t *s);
/** Retire node entry @p i (>= 1): CLOSED again (a fresh breaker at @p now_ms), not live.
 *  @returns 1 if it was not CLOSED (the caller logs it), 0 otherwise (or not a node). */
int fr_brkset_retire(fr_brkset_t *s, int i, int64_t now_ms);
/** The live node entries (>= 1) whose node is none of the @p nm masters @p masters
 *  ("host:port" each, borrowed) of a slot map just read: their slots moved (a replica was
 *  promoted in a dead master's place). Their indexes into @p idx (room for @p max), in
 *  table order; the caller retires them (fr_brkset_retire). A map of no master moves
 *  nothing (@p nm < 1: an unreadable map is no evidence). @returns how many. Pure. */
int fr_brkset_moved(const fr_brkset_t *s, const char *const *masters, int nm, int *idx, int max);
