/* sk/redis_error.h: what a Redis error reply means, decided once (DESIGN.md 8): the
 * first word of the error text, matched as a whole word ("READONLY" matches "READONLY"
 * and "READONLY You can't write...", never "READONLYX" or "XREADONLY"), and the class
 * of words that say the command did not run. Used by the client (redis_node.c,
 * redis_redirect.c, redis_pipe.c, redis_script.c), the front's deduct replies and
 * breaker, and the consumer's claimer.
 * What it does not do: I/O, allocation or logging. Pure; thread-safe. */
#pragma once
#include <stddef.h>
#include <hiredis/hiredis.h>

/** @brief 1 if the error text @p s (@p len bytes, borrowed, need not be NUL-terminated)
 *  starts with the whole word @p word (a NUL-terminated constant such as "MOVED"):
 *  the text is @p word alone or @p word followed by a space; else 0. @p s may be NULL
 *  (then 0). */
int sk_redis_error_is(const char *s, size_t len, const char *word);

/** @brief 1 if the first word of the error text @p s / @p len says the command did not
 *  run, so a retry cannot apply it twice: BUSY, LOADING, READONLY, OOM, MASTERDOWN,
 *  NOREPLICAS, TRYAGAIN, CLUSTERDOWN, NOSCRIPT (the SK_EAGAIN class of DESIGN.md 8);
 *  else 0. Whole words, as sk_redis_error_is. */
int sk_redis_error_not_run(const char *s, size_t len);

/** @brief 1 if @p reply (borrowed; may be NULL) is an error reply whose first word is
 *  @p word (sk_redis_error_is), else 0. */
int sk_redis_reply_is(const redisReply *reply, const char *word);
