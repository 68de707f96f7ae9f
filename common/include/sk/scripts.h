/* sk/scripts.h: the Lua scripts of lua/, embedded at build time (cmake/embed_lua.cmake),
 * and their calling conventions (DESIGN.md 4, 7, 8). Every script takes the voucher's
 * keys and ids as strings (never tonumber on an id). All replies are arrays whose first
 * element is a status string (a bulk string in RESP). Redis >= 7.0 (PEXPIREAT NX/GT).
 *
 * Arguments are validated before any write; a bad one is the error reply
 * "ERR SKARG <what>" (sk_redis_evalsha: SK_EINVAL) and nothing is written.
 *   id               canonical decimal 1..9223372036854775807 (^[1-9][0-9]*$, <= 19 digits)
 *   qty              1..999999
 *   expire_extra_ms  0..999999999999999 (reconcile window + 1 day, sk_expire_extra_ms())
 *   clamp_to         "" or 0..999999999999999
 *   reason           [a-z_]{1,32} (sk_reason_str())
 * Expiry: every key a script writes gets PEXPIREAT E NX, then PEXPIREAT E GT, with
 * E = meta end_ms + expire_extra_ms (rollback/claim: now + expire_extra_ms when meta is
 * gone). deduct.lua also applies it to meta when it admits.
 *
 * deduct.lua   KEYS meta stock users trace
 *              ARGV traceId orderId userId voucherId qty expire_extra_ms
 *              (KEYS[1] must contain "{v:<voucherId>:", else SKARG)
 *   -> {"FENCED"}             T:r exists; nothing written (checked before the replay)
 *   -> {"REPLAY", msg_json}   T already existed with this userId and orderId: the
 *                             stored entry, nothing written
 *   -> {"COLLISION"}          T already existed for another purchase (its userId or
 *                             orderId differs, or it cannot be read): an id collision,
 *                             nothing written (DESIGN.md 4: 503 and an alert)
 *   -> {"REJECT", code}       code (integer), nothing written, in this order:
 *                             10004 meta has no status; 10013 status 4 (paused);
 *                             10004 begin_ms/end_ms unreadable; 10002 now < begin_ms;
 *                             10003 now > end_ms (now = Redis TIME); 10011 status 2;
 *                             10012 status 3; 10004 any other status but 1;
 *                             10006 users has userId; 10005 stock missing or < qty
 *   -> {"OK", msg_json}       admitted: DECRBY stock, HSET users userId traceId,
 *                             HSET trace traceId msg_json. msg_json = the DEDUCT entry =
 *                             the Kafka message, field order of sk/msg.h:
 *                             {"traceId":"..","orderId":"..","userId":"..","voucherId":"..",
 *                              "beforeQty":N,"deductQty":N,"afterQty":N,"ts":MS}
 * rollback.lua KEYS meta stock users trace
 *              ARGV traceId mode(front|consumer|reconciler) restore(0|1) release(0|1)
 *                   clamp_to(""|N) userId(""|id) reason expire_extra_ms
 *   -> {"ALREADY", restore_entry_json}  T:r existed; nothing written
 *   -> {"CLAIMED"}            mode front and T:c exists; nothing written
 *   -> {"OK", restored(0|1), released(0|1), clamped(0|1)}  fence T:r written:
 *        restored: restore=1, T exists and the stock key exists (INCRBY deductQty of T;
 *                  the stock key is never created);
 *        released: release=1 and users[userId] == traceId (HDEL); userId from T, else ARGV;
 *        clamped:  clamp_to given, the stock key exists and stock > clamp_to (SET; the
 *                  TTL is re-applied).
 *      T:r = {"mode":"..","reason":"..","restored":0|1,"released":0|1,"clamped":0|1,"ts":MS}
 * claim.lua    KEYS meta trace
 *              ARGV op expire_extra_ms traceId... :
 *              claim T | failed T | sent T partition offset | consume T1 T2 ...
 *              (partition 0..999999999; offset canonical 0..2^63-1, kept as a string)
 *              T:c = {"redrives":N,"failed":N,"consumed":0|1,"partition":"P","offset":"O"}
 *              (partition/offset "" until a "sent"; "failed" resets them to "": the
 *              counted re-drive is settled, its offset must not be counted again)
 *   -> claim/failed/sent: {"OK", redrives, failed, consumed(0|1), partition|"", offset|""}
 *                         (integers, then two strings) after the update,
 *                         or {"RESTORED"} (T:r exists; nothing written)
 *   -> consume: {"OK", r1, r2, ...} with ri = 1 if Ti is RESTORED (fenced; its T:c is
 *      left alone), else 0 (T:c.consumed set to 1)
 * release.lua  KEYS meta stock users trace (the trace's bucket, today also the home)
 *              ARGV traceId userId(""|id) by(cancel|close|reconciler) expire_extra_ms
 *   -> {"OK", restored(0|1), released(0|1)}   T:x written now: restored = INCRBY stock 1
 *        (only if T exists, the stock key exists and no T:r says restored=1)
 *   -> {"ALREADY", release_entry_json, released(0|1)}  T:x existed: nothing restored
 *      Both then ran the home step: released = users[userId] named T and was deleted.
 *      T:x = {"by":"..","restored":0|1,"ts":MS}
 *      rollback.lua restores nothing for a trace whose T:x says restored=1.
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
               SK_SCRIPT_RELEASE = 3, SK_SCRIPT__N } sk_script_t;

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
