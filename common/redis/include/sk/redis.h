/* sk/redis.h: the project's Redis client on top of hiredis for the three topologies of
 * DESIGN.md 4b (one server, Sentinel, Cluster), with connect and command timeouts and
 * EVALSHA of the Lua scripts its caller gives it (NOSCRIPT -> SCRIPT LOAD on that node,
 * retry once; DESIGN.md 4). Which scripts exist is the caller's.
 *   - redis://: one connection.
 *   - redis-sentinel://: the master's address is asked of the Sentinels on every
 *     (re)connect and accepted only if ROLE says master; READONLY drops the connection
 *     so the next command resolves again.
 *   - redis-cluster://: one connection per master, commands routed by the slot of
 *     their key (sk_cmd_key_index: the first key, EVALSHA by KEYS[1]), MOVED / ASK /
 *     TRYAGAIN followed (at most 5), slot map refreshed from CLUSTER SLOTS. Every
 *     multi-key command must keep its keys in one hash tag ({v:ID:b}).
 * Error classes (DESIGN.md 8): SK_EAGAIN = the command did not run (error replies
 * BUSY, LOADING, READONLY, OOM, MASTERDOWN, NOREPLICAS, TRYAGAIN, CLUSTERDOWN; NOSCRIPT
 * twice; connect refused / reconnect failed before sending; uncovered slot; too many
 * redirects); SK_EUNKNOWN = I/O error, EOF or timeout after the command was handed to
 * hiredis: outcome unknown, that node's connection is dropped; the next command on the
 * handle reconnects first (or call sk_redis_reconnect() explicitly). Other error
 * replies: SK_EREDIS.
 * Not thread-safe: one handle per thread (hiredis contexts are not thread-safe). */
#pragma once
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>
#include "sk/err.h"
#include "sk/conf.h"
#include "sk/redis_error.h"
#include "sk/redis_redirect.h"

typedef struct sk_redis sk_redis_t;

/** One Lua script as this layer runs it. The caller owns the object (static storage,
 *  one per script per process) and sets name and body; the SHA cache is this layer's:
 *  zero-initialise it and never write it. */
typedef struct sk_redis_script {
        const char *name;       /* for messages, e.g. "claim"; borrowed, static */
        const char *body;       /* the source, NUL-terminated; borrowed, static; NULL = not
                                 * in this build (SCRIPT LOAD answers SK_EINVAL) */
        /* The SHA1 SCRIPT LOAD returned to this process (40 lowercase hex characters):
         * written once under a lock, published by sha_set (release/acquire). */
        atomic_int sha_set;
        char sha[41];
} sk_redis_script_t;

/** @brief Connect to @p url (copied) with @p timeout_ms for connect and each command;
 *  AUTH and SELECT as the URL says. Cluster: learns the slot map from the first seed
 *  that answers CLUSTER SLOTS (masters are connected lazily). Sentinel: resolves the
 *  master (DESIGN.md 4b). @returns owned handle, or NULL with the reason. */
sk_redis_t *sk_redis_connect(const sk_redis_url_t *url, int timeout_ms,
                             char *errstr, size_t errstr_size);
/** @brief Drop every connection and open a fresh one to the server / master
 *  (Sentinel: resolving it again; Cluster: refreshing the slot map).
 *  @returns SK_OK or SK_EAGAIN. */
sk_err_t sk_redis_reconnect(sk_redis_t *r, char *errstr, size_t errstr_size);
/** @brief The hiredis context of the master serving @p key's slot (Cluster; the one
 *  server or master otherwise), for raw pipelining of commands on that key's hash tag
 *  only (redisAppendCommandArgv + redisGetReply: the caller classifies those replies
 *  itself). Borrowed; invalid after a reconnect or after a command on @p r returned
 *  SK_EUNKNOWN. If the connection was dropped, reconnects first; NULL if that node
 *  cannot be connected or the slot is not covered. A MOVED/ASK reply to a raw command
 *  is the caller's to treat as "did not run" (the map refreshes on the next routed
 *  command). */
redisContext *sk_redis_ctx_key(sk_redis_t *r, const char *key);
/** @brief The time of a TIME reply @p rep (borrowed; may be NULL) in ms since the epoch
 *  (seconds x 1000 + microseconds / 1000), or -1 when it is not two whole numbers. Pure. */
int64_t sk_redis_time_ms(const redisReply *rep);
/** @brief The topology of @p r's URL. */
sk_redis_kind_t sk_redis_kind(const sk_redis_t *r);

/** @brief Run a command (argv style, binary safe; @p argvlen NULL = NUL-terminated
 *  strings), routed by its key (sk_cmd_key_index). *reply is owned by the caller
 *  (freeReplyObject); an error reply is returned as SK_EREDIS/SK_EAGAIN with the text
 *  in errstr and *reply = NULL. A keyspace walk (SCAN, KEYS, ...) on a Cluster is
 *  SK_EINVAL: use sk_redis_scan. */
sk_err_t sk_redis_cmd(sk_redis_t *r, redisReply **reply, int argc, const char **argv,
                      const size_t *argvlen, char *errstr, size_t errstr_size);
/** @brief printf-style convenience (hiredis formatting). Same routing and errors as
 *  sk_redis_cmd. */
sk_err_t sk_redis_cmdf(sk_redis_t *r, redisReply **reply, char *errstr, size_t errstr_size,
                       const char *fmt, ...);
/** @brief sk_redis_cmdf with a va_list (@p ap is consumed). Same routing and errors. */
sk_err_t sk_redis_vcmdf(sk_redis_t *r, redisReply **reply, char *errstr, size_t errstr_size,
                        const char *fmt, va_list ap);

/** @brief The node @p r routes @p key (borrowed, NUL-terminated) to now, as "host:port"
 *  into @p addr (@p addr_size bytes, 262 are always enough): Cluster, the master of the
 *  key's slot in r's slot map, after a map refresh when one is due (a connection error,
 *  a MOVED, sk_redis_map_stale; at most as often as routed commands refresh it: this
 *  may send CLUSTER SLOTS); one server or Sentinel, node 0 (the last resolved master;
 *  "" before the first connect). The per-node Redis breaker of the front keys on it
 *  (DESIGN.md 4b, 12). @returns SK_OK, or SK_EAGAIN when the slot is not covered by
 *  the map (nothing written but ""). Not thread-safe (one sk_redis_t per thread). */
sk_err_t sk_redis_key_addr(sk_redis_t *r, const char *key, char *addr, size_t addr_size);
/** @brief Ask for a slot map refresh (Cluster; a no-op otherwise): the next routed
 *  command, pipeline or sk_redis_key_addr on @p r asks CLUSTER SLOTS again, at most
 *  every 100 ms (the refresh after a connection error). A caller that stops sending to
 *  a node it knows is down calls it so that its map still follows a failover
 *  (DESIGN.md 4b). Not thread-safe (one sk_redis_t per thread). */
void sk_redis_map_stale(sk_redis_t *r);
/** @brief Follow a map change someone else saw (Cluster; a no-op otherwise): when
 *  @p gen differs from the generation @p r last followed (0 at connect), @p r asks
 *  CLUSTER SLOTS again now, whatever its rate limit, and remembers @p gen; the same
 *  @p gen again costs nothing. The front's breaker thread bumps a process-wide
 *  generation when it sees a dead master's slots served by a promoted replica, so every
 *  worker's handle routes to the new owner at its next purchase (DESIGN.md 4b). Not
 *  thread-safe (one sk_redis_t per thread). */
void sk_redis_map_follow(sk_redis_t *r, uint64_t gen);
/** @brief Ask CLUSTER SLOTS now (Cluster; a no-op otherwise), whatever the rate limit:
 *  for a caller that polls the map on its own timer (the front's breaker thread while
 *  a master's breaker is open). @returns SK_OK when the map was replaced, SK_EAGAIN
 *  when no node answered (the map is unchanged). Not thread-safe. */
sk_err_t sk_redis_map_refresh(sk_redis_t *r);
/** @brief "host:port" of master number @p i (0..sk_redis_master_count()-1) into
 *  @p addr (@p addr_size bytes). @returns SK_OK or SK_EINVAL (no such master). Not
 *  thread-safe (one sk_redis_t per thread). */
sk_err_t sk_redis_master_addr(sk_redis_t *r, int i, char *addr, size_t addr_size);
/** @brief Number of masters of @p r: 1 for redis:// and Sentinel, the masters of the
 *  last slot map for a Cluster. Node indexes 0..n-1 below. */
int sk_redis_master_count(sk_redis_t *r);
/** @brief Run a command on master number @p i (0..sk_redis_master_count()-1), no
 *  routing (INFO, CONFIG GET, SCRIPT, SCAN, ...). Same errors as sk_redis_cmd. */
sk_err_t sk_redis_cmd_master(sk_redis_t *r, int i, redisReply **reply, int argc,
                             const char **argv, const size_t *argvlen,
                             char *errstr, size_t errstr_size);

/** @brief SCAN the keyspace of every master (MATCH @p match, COUNT @p count) and call
 *  @p fn(key, keylen, arg) for each key (a key may be reported twice, as SCAN does);
 *  @p fn returning non-zero stops the walk (returned as SK_OK). Errors as
 *  sk_redis_cmd. */
sk_err_t sk_redis_scan(sk_redis_t *r, const char *match, int count,
                       int (*fn)(const char *key, size_t keylen, void *arg), void *arg,
                       char *errstr, size_t errstr_size);
/** @brief HSCAN the hash @p key (borrowed) with COUNT @p count per call (<= 0: 1000)
 *  until the cursor is 0, calling @p fn with @p arg for each field/value pair where
 *  both are strings (borrowed, valid during the call only). HSCAN may return a field
 *  more than once and may miss fields added during the walk (the caller copes). @p fn
 *  returns SK_OK to go on; any other code stops the walk and is returned (SK_ENOMEM
 *  with "out of memory reading KEY" in errstr, others with "HSCAN KEY: <code name>").
 *  A malformed reply is SK_EREDIS; other errors as sk_redis_cmd. Not thread-safe per
 *  @p r. */
sk_err_t sk_redis_hscan(sk_redis_t *r, const char *key, int count,
                        sk_err_t (*fn)(const char *field, size_t field_len, const char *val,
                                       size_t val_len, void *arg),
                        void *arg, char *errstr, size_t errstr_size);

/** @brief EVALSHA @p s (borrowed; its SHA cache is written) with @p nkeys keys and
 *  @p nargs args (NUL-terminated strings, borrowed), routed by keys[0] (a script's keys
 *  share one hash tag, DESIGN.md 4b). When this process has no SHA for @p s yet it runs
 *  SCRIPT LOAD of @p s on every master first (and caches the returned SHA, see
 *  sk_redis_script_sha()). NOSCRIPT -> SCRIPT LOAD on that node and retry once; NOSCRIPT
 *  again -> SK_EAGAIN. The scripts' argument errors ("ERR SKARG ...") are SK_EINVAL
 *  (nothing written); other error replies SK_EREDIS or SK_EAGAIN as above; a timeout or
 *  I/O error after sending is SK_EUNKNOWN (DESIGN.md 8), a redirect never changes the
 *  arguments. *reply (owned by the caller) on SK_OK. */
sk_err_t sk_redis_evalsha(sk_redis_t *r, sk_redis_script_t *s, int nkeys, const char **keys,
                          int nargs, const char **args, redisReply **reply,
                          char *errstr, size_t errstr_size);
/** @brief SCRIPT LOAD the @p n scripts of @p list (borrowed; their SHA caches are
 *  written) on every master and cache the SHAs. Idempotent. @returns SK_OK; SK_EINVAL
 *  (a script without a body); the errors of a command as above. */
sk_err_t sk_redis_load_scripts(sk_redis_t *r, sk_redis_script_t *list, size_t n,
                               char *errstr, size_t errstr_size);
/** @brief 1 if the @p n scripts of @p list (borrowed, at most 64) are loaded on every
 *  master (SCRIPT EXISTS of the cached SHAs), 0 if not (or one was never loaded by this
 *  process), <0 error. */
int sk_redis_scripts_loaded(sk_redis_t *r, const sk_redis_script_t *list, size_t n);
/** @brief @p s's SHA1 as 40 lowercase hex characters: the one SCRIPT LOAD returned to
 *  this process (the layer does not hash the source itself). NULL before the first
 *  successful SCRIPT LOAD of @p s in this process (sk_redis_load_scripts(), or the first
 *  sk_redis_evalsha(), which loads it). The string lives in @p s and never changes once
 *  set. Thread-safe. */
const char *sk_redis_script_sha(const sk_redis_script_t *s);
/** @brief 1 if maxmemory-policy is noeviction on every master, 0 if not, <0 on error
 *  (CONFIG GET). */
int sk_redis_noeviction(sk_redis_t *r);

/** @brief What a binary checks at startup and /readyz reports (DESIGN.md 4, 4b): every
 *  master reachable, Redis >= 7.0, maxmemory-policy noeviction and loading:0 on each.
 *  @returns SK_OK; SK_EINVAL with a one-line reason naming the master when one is
 *  older than 7.0 or evicts (the binary refuses to start, exit 2); SK_EAGAIN when a
 *  master is unreachable or still loading its dataset (transient). */
sk_err_t sk_redis_check_server(sk_redis_t *r, char *errstr, size_t errstr_size);

/** @brief The replication guard of the masters (DESIGN.md 4b: replicated masters run
 *  with min-replicas-to-write 1 and min-replicas-max-lag 10; /readyz reports them):
 *  CONFIG GET on every master. @returns the smallest min-replicas-to-write over the
 *  masters (0 = writes are not refused without replicas, as on one plain server) and
 *  sets *@p max_lag_s (may be NULL) to the largest min-replicas-max-lag (seconds);
 *  -1 when a master is unreachable or refuses CONFIG GET (transient). Reports only:
 *  readiness does not depend on it. Not thread-safe (one sk_redis_t per thread). */
int sk_redis_min_replicas(sk_redis_t *r, int *max_lag_s);

/** @brief The startup check of every binary (DESIGN.md 4): connect to @p url, run
 *  sk_redis_check_server, close. A Redis that is older than 7.0 or evicts: prints
 *  "PROG: reason" on stderr and @returns 2 (exit 2). Unreachable or another error: a
 *  debug log line and 0 (1 s timeout) (the binaries cope with Redis down, DESIGN.md 12). Call from
 *  main() before starting threads. */
int sk_redis_startup_check(const sk_redis_url_t *url, const char *prog);

/** @brief Close and free @p r. NULL is a no-op. */
void sk_redis_close(sk_redis_t *r);

/* ---- Pipelines (DESIGN.md 4b): N commands, N replies, grouped per node. */
typedef struct sk_redis_pipe sk_redis_pipe_t;

/** @brief New empty pipeline on @p r (borrowed; outlives the pipeline). NULL = ENOMEM. */
sk_redis_pipe_t *sk_redis_pipe_new(sk_redis_t *r);
/** @brief Append one command (copied; routed by its key as sk_redis_cmd). @returns its
 *  index, or -1 (out of memory, or a keyspace walk). */
int sk_redis_pipe_add(sk_redis_pipe_t *p, int argc, const char **argv, const size_t *argvlen);
/** @brief Send every appended command, one batch per node, and read the replies. Only
 *  commands answered MOVED / ASK / TRYAGAIN are sent again (at most 5 times each); a
 *  connection error makes every unanswered command of that node SK_EUNKNOWN. Per
 *  command results via sk_redis_pipe_result. @returns the number of commands that did
 *  not get a reply (SK_EUNKNOWN or SK_EAGAIN), 0 = all answered. */
int sk_redis_pipe_exec(sk_redis_pipe_t *p);
/** @brief Result of command @p i after exec: SK_OK with *reply (borrowed, freed by
 *  reset/free), an error reply as SK_EAGAIN/SK_EREDIS (*reply = NULL, text in errstr),
 *  SK_EUNKNOWN (sent, connection broke) or SK_EAGAIN (never ran). */
sk_err_t sk_redis_pipe_result(sk_redis_pipe_t *p, int i, redisReply **reply,
                              char *errstr, size_t errstr_size);
/** @brief The final reply of command @p i as the server sent it, error replies included
 *  (for callers that classify script errors themselves), borrowed until reset/free;
 *  NULL when it got none (sk_redis_pipe_result then says SK_EUNKNOWN or SK_EAGAIN).
 *  Never a MOVED/ASK/TRYAGAIN: those were followed. */
const redisReply *sk_redis_pipe_raw(const sk_redis_pipe_t *p, int i);
/** @brief "host:port" of the node command @p i was last sent to (or would have been:
 *  a node that could not be connected), into @p addr (@p addr_size bytes); "" when it
 *  had no node (uncovered slot). After exec; for the per-node breaker (DESIGN.md 12).
 *  @returns 0, or -1 (no node, or no such command). */
int sk_redis_pipe_addr(const sk_redis_pipe_t *p, int i, char *addr, size_t addr_size);
/** @brief Milliseconds the batch of command @p i's node took in the last round it was
 *  sent in (from writing the batch to reading its last reply; 0 if never sent): the
 *  latency of that node alone, for the per-node breaker (DESIGN.md 12). */
int64_t sk_redis_pipe_ms(const sk_redis_pipe_t *p, int i);
/** @brief Number of commands appended. */
int sk_redis_pipe_count(const sk_redis_pipe_t *p);
/** @brief Forget every command and reply (the pipeline can be reused). */
void sk_redis_pipe_reset(sk_redis_pipe_t *p);
/** @brief Free @p p and its replies. NULL is a no-op. */
void sk_redis_pipe_free(sk_redis_pipe_t *p);
