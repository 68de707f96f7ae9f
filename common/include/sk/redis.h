/* sk/redis.h: one hiredis connection (one per thread; hiredis contexts are not
 * thread-safe) with connect and command timeouts, and EVALSHA of the embedded scripts
 * (NOSCRIPT -> SCRIPT LOAD, retry once; DESIGN.md 4).
 * Error classes (DESIGN.md 8): SK_EAGAIN = the command did not run (error replies
 * BUSY, LOADING, READONLY, OOM, MASTERDOWN, NOREPLICAS, TRYAGAIN, CLUSTERDOWN; NOSCRIPT
 * twice; connect refused / reconnect failed before sending); SK_EUNKNOWN = I/O error,
 * EOF or timeout after the command was handed to hiredis: outcome unknown, the
 * connection is dropped; the next command on the handle reconnects first (or call
 * sk_redis_reconnect() explicitly). Other error replies: SK_EREDIS.
 * Not thread-safe: one handle per thread. */
#pragma once
#include <stddef.h>
#include <hiredis/hiredis.h>
#include "sk/err.h"
#include "sk/conf.h"
#include "sk/scripts.h"

typedef struct sk_redis sk_redis_t;

/** @brief Connect to @p url (copied) with @p timeout_ms for connect and each command;
 *  AUTH and SELECT as the URL says. @returns owned handle, or NULL with the reason. */
sk_redis_t *sk_redis_connect(const sk_redis_url_t *url, int timeout_ms,
                             char *errstr, size_t errstr_size);
/** @brief Drop the current connection and open a fresh one (AUTH, SELECT).
 *  @returns SK_OK or SK_EAGAIN. */
sk_err_t sk_redis_reconnect(sk_redis_t *r, char *errstr, size_t errstr_size);
/** @brief The hiredis context (borrowed; invalid after a reconnect or after a command
 *  on @p r returned SK_EUNKNOWN). If the connection was dropped, reconnects first;
 *  NULL if that fails. For pipelining (redisAppendCommandArgv + redisGetReply): the
 *  caller classifies those replies itself. */
redisContext *sk_redis_ctx(sk_redis_t *r);

/** @brief Run a command (argv style, binary safe). *reply is owned by the caller
 *  (freeReplyObject); an error reply is returned as SK_EREDIS/SK_EAGAIN with the text in
 *  errstr and *reply = NULL. */
sk_err_t sk_redis_cmd(sk_redis_t *r, redisReply **reply, int argc, const char **argv,
                      const size_t *argvlen, char *errstr, size_t errstr_size);
/** @brief printf-style convenience (hiredis redisCommand). Same errors as sk_redis_cmd. */
sk_err_t sk_redis_cmdf(sk_redis_t *r, redisReply **reply, char *errstr, size_t errstr_size,
                       const char *fmt, ...);

/** @brief EVALSHA @p s with @p nkeys keys and @p nargs args (NUL-terminated strings,
 *  borrowed; 3 + nkeys + nargs <= 64). When this process has no SHA for @p s yet it
 *  runs SCRIPT LOAD first (and caches the returned SHA, see sk_script_sha()).
 *  NOSCRIPT -> SCRIPT LOAD and retry once; NOSCRIPT again -> SK_EAGAIN. The scripts'
 *  argument errors ("ERR SKARG ...") are SK_EINVAL (nothing written); other error
 *  replies SK_EREDIS or SK_EAGAIN as above. *reply (owned by the caller) on SK_OK. */
sk_err_t sk_redis_evalsha(sk_redis_t *r, sk_script_t s, int nkeys, const char **keys,
                          int nargs, const char **args, redisReply **reply,
                          char *errstr, size_t errstr_size);
/** @brief SCRIPT LOAD every embedded script and cache the SHAs. Idempotent. */
sk_err_t sk_redis_load_scripts(sk_redis_t *r, char *errstr, size_t errstr_size);
/** @brief 1 if every embedded script is loaded (SCRIPT EXISTS of the cached SHAs),
 *  0 if not (or never loaded by this process), <0 error. */
int sk_redis_scripts_loaded(sk_redis_t *r);
/** @brief 1 if maxmemory-policy is noeviction, 0 if not, <0 on error (CONFIG GET). */
int sk_redis_noeviction(sk_redis_t *r);
/** @brief Close and free @p r. NULL is a no-op. */
void sk_redis_close(sk_redis_t *r);
