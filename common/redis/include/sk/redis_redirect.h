/* sk/redis_redirect.h: the pure logic of Redis Cluster routing (DESIGN.md 4b), apart
 * from any I/O so it can be unit-tested: which argument of a command is its routing
 * key, what a MOVED / ASK / TRYAGAIN / CLUSTERDOWN error reply says, and how one
 * pipelined command's bookkeeping moves on each answer. Pure functions, thread-safe. */
#pragma once
#include <stddef.h>

#define SK_REDIR_MAX 5          /* redirects (MOVED, ASK, TRYAGAIN) per command, DESIGN.md 4b */

typedef enum {
        SK_REDIR_NONE = 0,      /* not a redirect: a normal reply or another error */
        SK_REDIR_MOVED,         /* the slot lives elsewhere for good: update the map, retry */
        SK_REDIR_ASK,           /* the slot is migrating: ASKING then retry there, map unchanged */
        SK_REDIR_TRYAGAIN,      /* multi-key command during a migration: back off, retry */
        SK_REDIR_CLUSTERDOWN,   /* the cluster cannot serve: transient, not run */
} sk_redir_kind_t;

typedef struct sk_redir {
        sk_redir_kind_t kind;
        int slot;               /* MOVED/ASK: 0..16383 */
        char host[256];         /* MOVED/ASK: the node to go to ("" = the node asked) */
        int port;
} sk_redir_t;

/** @brief Parse the error reply text @p s (@p len bytes, borrowed), e.g.
 *  "MOVED 3999 127.0.0.1:6381", "ASK 3999 [::1]:6381", "TRYAGAIN ...", "CLUSTERDOWN ...".
 *  @returns the kind (also in out->kind); a MOVED/ASK with a malformed slot or
 *  address is SK_REDIR_NONE (the caller reports it as an ordinary error). */
sk_redir_kind_t sk_redir_parse(const char *s, size_t len, sk_redir_t *out);

/** @brief Index in argv of the key a command routes by: 1 for ordinary keyed commands,
 *  3 for EVAL/EVALSHA/FCALL with numkeys >= 1; 0 for a keyless command (PING, INFO,
 *  CONFIG, SCRIPT, MULTI, EXEC, WAIT, ..., or EVALSHA with 0 keys): any master, or for
 *  MULTI/EXEC/DISCARD/UNWATCH/WAIT the node of the previous keyed command; -1 for a keyspace
 *  walk (SCAN, KEYS, DBSIZE, FLUSHDB, RANDOMKEY) that must visit every master (see
 *  sk_redis_scan). @p argvlen NULL means NUL-terminated strings. */
int sk_cmd_key_index(int argc, const char **argv, const size_t *argvlen);

/* One pipelined command's routing state (see redis_pipe.c). */
typedef enum {
        SK_PCMD_PENDING = 0,    /* to be sent (again) in the next round */
        SK_PCMD_SENT,           /* handed to the node's connection, no answer yet */
        SK_PCMD_ANSWERED,       /* has its final reply (maybe an error reply) */
        SK_PCMD_UNKNOWN,        /* sent, the connection broke before the answer */
        SK_PCMD_NOTRUN,         /* never ran: node unreachable, uncovered slot, too many redirects */
} sk_pcmd_status_t;

typedef struct sk_pcmd {
        int slot;               /* routing slot, -1 = keyless */
        int target;             /* node index to send it to in the next round */
        int asking;             /* send ASKING before it (after an ASK) */
        int redirects;          /* MOVED + ASK + TRYAGAIN answers so far */
        int backoff;            /* answered TRYAGAIN: back off before the next round */
        sk_pcmd_status_t status;
} sk_pcmd_t;

/** @brief Move @p c on after its reply, whose redirect part is @p rd; @p redirect_node
 *  is the node index of rd's host:port (MOVED/ASK; -1 if it could not be added).
 *  MOVED -> target that node, no ASKING; ASK -> target it with ASKING; TRYAGAIN ->
 *  same target and ASKING, backoff; each counts one redirect and a command past
 *  SK_REDIR_MAX redirects (or with no usable node) becomes SK_PCMD_NOTRUN. Anything
 *  else (including CLUSTERDOWN) -> SK_PCMD_ANSWERED. @returns the new status. */
sk_pcmd_status_t sk_pcmd_on_reply(sk_pcmd_t *c, const sk_redir_t *rd, int redirect_node);

/** @brief The connection to @p node broke: every command of @p cmds (@p n) sent to it
 *  and not answered becomes SK_PCMD_UNKNOWN (its outcome is unknown, DESIGN.md 8).
 *  @returns how many changed. */
int sk_pcmds_on_conn_error(sk_pcmd_t *cmds, int n, int node);
