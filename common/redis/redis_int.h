/* redis_int.h: the inside of sk_redis_t, shared by redis.c and the redis_*.c files of
 * common/redis but the pure redis_redirect.c (each with its job in common/README.md).
 * Internal to common/redis (DESIGN.md 4b).
 *
 * Every topology is "a table of nodes + a slot map": one server (redis://) is node 0
 * serving every slot; Sentinel is node 0 too, its address re-resolved through the
 * Sentinels whenever it is (re)connected; a Cluster has one node per master (and any
 * node a redirect named), with slots[] learned from CLUSTER SLOTS. Node indices never
 * change during the handle's life (the table only grows), so a slot map entry or a
 * pipeline's target stays valid across refreshes. */
#pragma once
#include <stdint.h>
#include <hiredis/hiredis.h>
#include "sk/conf.h"
#include "sk/crc16.h"
#include "sk/err.h"
#include "sk/redis.h"

#define SK_RNODES_MAX 64        /* nodes one handle may know (masters, replicas named by redirects) */
#define SK_REDIRECTS_MAX 5      /* MOVED/ASK/TRYAGAIN per command (DESIGN.md 4b) */
#define SK_REFRESH_MIN_MS 1000  /* unforced slot map refreshes at most once a second */

typedef struct sk_rnode {
        char host[256];
        int port;
        redisContext *ctx;      /* NULL until connected or after an error broke it */
        int is_master;          /* serves slots in the last map */
} sk_rnode_t;

struct sk_redis {
        sk_redis_url_t url;     /* copy; holds the password for AUTH on reconnect */
        int timeout_ms;
        int nnodes;
        sk_rnode_t nodes[SK_RNODES_MAX];
        int16_t slots[SK_CLUSTER_SLOTS];        /* Cluster: node index, -1 = not covered */
        int64_t refreshed_ms;   /* monotonic time of the last map refresh (0 = never) */
        int need_refresh;       /* a connection error or redirect asked for a refresh */
        int last_node;          /* node of the last keyed command (MULTI/EXEC follow it) */
        char lasterr[256];      /* why the last map refresh failed */
        uint64_t sentinel_epoch; /* Sentinel: the switch epoch node 0 was resolved at */
        uint64_t follow_gen;    /* the last generation of sk_redis_map_follow */
};

/* ---- redis_node.c */
/* Connect node @p n of @p r (AUTH, SELECT, keepalive, command timeout); drops an
 * earlier context. Sentinel: re-resolves the master first and checks ROLE. SK_OK,
 * SK_EAGAIN (unreachable, refused, not a master) or SK_EREDIS (AUTH/SELECT refused). */
sk_err_t sk__node_open(sk_redis_t *r, int n, char *errstr, size_t errstr_size);
/* Free node @p n's context, if any. */
void sk__node_drop(sk_redis_t *r, int n);
/* Connected node @p n, connecting first if needed (nothing sent yet: failure = SK_EAGAIN). */
sk_err_t sk__node_ensure(sk_redis_t *r, int n, char *errstr, size_t errstr_size);
/* Classify and free an error reply: SK_EAGAIN or SK_EREDIS, text in errstr. */
sk_err_t sk__error_reply(redisReply *reply, char *errstr, size_t errstr_size);

/* ---- redis_script.c */
/* CONFIG GET maxmemory-policy of node @p n (the value into @p policy): 1 noeviction,
 * 0 another policy, -1 error. */
int sk__node_noeviction(sk_redis_t *r, int n, char *policy, size_t policy_size);

/* ---- redis_sentinel.c */
/* Ask the Sentinels of r->url in turn (short timeouts) for the master's address.
 * SK_OK with host/port, or SK_EAGAIN if none answered with an address. */
sk_err_t sk__sentinel_resolve(sk_redis_t *r, char *host, size_t host_size, int *port,
                              char *errstr, size_t errstr_size);
/* 1 if ROLE on @p ctx says master, 0 if another role, -1 on an I/O error. */
int sk__role_is_master(redisContext *ctx);

/* ---- redis_sentinel_watch.c */
/* The process-wide switch epoch of @p url's Sentinel master (DESIGN.md 4b: bumped
 * on +switch-master, or when get-master-addr-by-name, asked once a second, changes);
 * starts its watcher thread on first use. 0 for another topology or when no watcher
 * could start. Thread-safe. */
uint64_t sk__sentinel_epoch(const sk_redis_url_t *url);

/* ---- redis_route.c */
/* Index of the node host:port, added (not connected) if unknown; -1 if the table is full. */
int sk__node_find_or_add(sk_redis_t *r, const char *host, size_t host_len, int port);
/* Node serving @p slot (-1 = keyless: any master); -1 if not covered (Cluster). */
int sk__node_for_slot(sk_redis_t *r, int slot);
/* Refresh the Cluster slot map (CLUSTER SLOTS) now if @p force, else only when asked
 * for and at most once a second. Non-Cluster: no-op. */
void sk__map_refresh(sk_redis_t *r, int force);
/* Run one command with routing and redirects (DESIGN.md 4b). SK_OK with *raw = the
 * reply (possibly an error reply other than MOVED/ASK/TRYAGAIN, for the caller to
 * classify) and *node_out = the node that answered; SK_EUNKNOWN (sent, no reply;
 * the node's connection is dropped and a map refresh requested); SK_EAGAIN (not run:
 * unreachable node, uncovered slot, TRYAGAIN or redirects past the limit). */
sk_err_t sk__route_cmd(sk_redis_t *r, int slot, int argc, const char **argv,
                       const size_t *argvlen, redisReply **raw, int *node_out,
                       char *errstr, size_t errstr_size);
/* Run a command on node @p n only (no redirects): SK_OK with *raw (maybe an error
 * reply), SK_EUNKNOWN (connection dropped) or SK_EAGAIN (could not connect). */
sk_err_t sk__node_cmd(sk_redis_t *r, int n, int argc, const char **argv,
                      const size_t *argvlen, redisReply **raw, char *errstr, size_t errstr_size);
/* Routing slot of a command (argvlen NULL = C strings): its key's slot; -2 for MULTI,
 * EXEC, DISCARD, UNWATCH, WAIT (the node of the previous keyed command); -1 for another
 * keyless command (any master); -3 for a keyspace walk (every master). */
int sk__cmd_slot(int argc, const char **argv, const size_t *argvlen);
/* Node indexes of every master into @p out (room for SK_RNODES_MAX). @returns how many
 * (1 for redis:// and Sentinel: node 0). */
int sk__masters(sk_redis_t *r, int *out);
/* "host:port" of node @p n into @p addr ("" when @p n is not a node). */
void sk__node_addr(const sk_redis_t *r, int n, char *addr, size_t addr_size);
/* Monotonic milliseconds. */
int64_t sk__now_ms(void);
