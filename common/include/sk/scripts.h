/* sk/scripts.h: the Lua scripts of lua/, embedded at build time (cmake/embed_lua.cmake),
 * and their calling conventions. Every script takes the voucher's keys and ids as
 * strings (never tonumber on an id). All replies are arrays whose first element is a
 * status string.
 *
 * deduct.lua   KEYS meta stock users trace
 *              ARGV traceId orderId userId voucherId qty expire_extra_ms
 *              (expire_extra_ms = reconcile window + 1 day; E = end_ms + it)
 *   -> {"OK", msg_json}       admitted; msg_json = the DEDUCT entry = the Kafka message
 *   -> {"REPLAY", msg_json}   T already existed: the stored entry
 *   -> {"FENCED"}             T:r exists; nothing written
 *   -> {"REJECT", code}       code (integer) 10004 meta missing, 10013 paused, 10002,
 *                             10003, 10011, 10012, 10006, 10005; nothing written
 *   -> error reply "ERR SKARG ..." for an invalid argument (nothing written)
 * rollback.lua KEYS meta stock users trace
 *              ARGV traceId mode(front|consumer|reconciler) restore(0|1) release(0|1)
 *                   clamp_to(""|N) userId(""|id) reason expire_extra_ms
 *   -> {"OK", restored(0|1), released(0|1), clamped(0|1)}  fence T:r written
 *   -> {"ALREADY", restore_entry_json}
 *   -> {"CLAIMED"}            mode front and T:c exists; nothing written
 * claim.lua    KEYS meta trace
 *              ARGV op expire_extra_ms traceId... :
 *              claim T | failed T | sent T partition offset | consume T1 T2 ...
 *   -> claim/failed/sent: {"OK", redrives, failed, consumed(0|1), partition|"", offset|""}
 *                         or {"RESTORED"} (T:r exists; nothing written)
 *   -> consume: {"OK", r1, r2, ...} with ri = 1 if Ti is RESTORED (fenced), else 0
 */
#pragma once
#include <stddef.h>

typedef struct sk_script_src {
        const char *name;   /* file name without .lua */
        const char *body;
        size_t len;
} sk_script_src_t;

extern const sk_script_src_t sk_script_srcs[]; /* NULL-name terminated */
extern const size_t sk_script_nsrcs;

typedef enum { SK_SCRIPT_DEDUCT = 0, SK_SCRIPT_ROLLBACK = 1, SK_SCRIPT_CLAIM = 2,
               SK_SCRIPT__N } sk_script_t;

/** @brief Source of @p s. @returns NULL if the build did not embed it. */
const sk_script_src_t *sk_script_get(sk_script_t s);
/** @brief The script's SHA1 as 40 lowercase hex chars: the one SCRIPT LOAD returned
 *  to this process (we do not hash the source ourselves). NULL before the first
 *  successful SCRIPT LOAD of @p s in this process (sk_redis_load_scripts(), or the
 *  first sk_redis_evalsha(), which loads it). The returned string is static and never
 *  changes once set. Thread-safe. */
const char *sk_script_sha(sk_script_t s);
/** @brief Internal (redis.c): record the SHA SCRIPT LOAD returned (@p len must be 40).
 *  First writer wins. Thread-safe. */
void sk__script_set_sha(sk_script_t s, const char *sha, size_t len);
