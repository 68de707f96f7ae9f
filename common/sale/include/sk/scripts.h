/* sk/scripts.h: the sale's Lua scripts (lua/, embedded at build time by
 * cmake/embed_lua.cmake): which exist, their names (the table of scripts.c), and their
 * calling conventions (DESIGN.md 4, 7, 8). The Redis layer runs them (sk_redis_evalsha:
 * EVALSHA, NOSCRIPT -> SCRIPT LOAD) over that table; it knows none of them.
 *
 * Every script takes the voucher's keys and ids as strings (never tonumber on an id).
 * All replies are arrays whose first element is a status string (a bulk string in
 * RESP), except the hot path's answers of deduct.lua and take.lua: an admission is
 * the bare entry, a rejection the bare code. Redis >= 7.0 (PEXPIREAT NX/GT).
 *
 * Arguments are validated before any write; a bad one is the error reply
 * "ERR SKARG <what>" (sk_redis_evalsha: SK_EINVAL) and nothing is written.
 *   id               canonical decimal 1..9223372036854775807 (^[1-9][0-9]*$, <= 19 digits)
 *   ts               deduct/take: ms, canonical, within +-5 s of Redis TIME
 *   expire_extra_ms  0..999999999999999 (reconcile window + 1 day, sk_expire_extra_ms())
 *   clamp_to         "" or 0..999999999999999
 *   reason           [a-z_]{1,32} (sk_reason_str())
 * Keys: one hash tag per bucket, "<prefix>:{v:ID:b}:<kind>" (a v3 key "{v:ID}" counts as
 * bucket 0); every script takes the keys of one bucket only (no CROSSSLOT on a Cluster)
 * and learns that bucket from the tag. Replies name buckets as integers 0..15.
 * Expiry: preheat and rebuild give every key of every bucket E = meta end_ms +
 * expire_extra_ms. deduct.lua and take.lua write no expiry and never create a key (any key
 * of the bucket missing: REJECT 10004, nothing written). The give-up fence f:T is the one
 * key a script creates without E (PX = max(the request deadline, 11 s)). Every other
 * script that writes follows it with PEXPIREAT E NX, then PEXPIREAT E GT
 * (rollback/claim/release/home: now + expire_extra_ms when meta is gone).
 *
 * deduct.lua   KEYS meta stock users trace of the home bucket h, and the give-up fence
 *              "<prefix>:{v:ID:h}:f:<traceId>" (sk_key_fence)
 *              ARGV traceId orderId userId voucherId ts
 *              (DESIGN.md 4 "Cost of an admission": ts = the snowflake timestamp of
 *              traceId in ms, within +-5 s of Redis TIME; ids 1-19 canonical digits; KEYS
 *              must carry "{v:<voucherId>:h}" and KEYS[5] name this traceId, else SKARG)
 *   Replies (the two answers of the hot path are bare, since Redis converts a table
 *   returned by Lua for ~5,000 instructions, a fifth of the budget; the meaning of every
 *   answer is v4's):
 *   -> entry (bulk string)    admitted: HSETNX users userId traceId, DECRBY stock 1,
 *                             HSET trace traceId entry. entry = the Kafka message
 *                             (DESIGN.md 5), concatenated by the script:
 *                             {"traceId":"..","orderId":"..","userId":"..","voucherId":"..",
 *                              "bucket":B,"home":H,"beforeQty":N,"deductQty":1,
 *                              "afterQty":N-1,"ts":MS}   (deduct: B = H = h; ts from ARGV)
 *   -> code (integer)         rejected, nothing written, in this order:
 *                             10004 users or trace missing, meta missing or without
 *                             status; 10013 status 4 (paused); 10004 begin_ms/end_ms/
 *                             buckets unreadable; 10002 now < begin_ms; 10003 now > end_ms
 *                             (now = Redis TIME); 10011 status 2; 10012 status 3; 10004
 *                             any other status but 1; 10004 stock missing; 10006
 *                             users[userId] names another trace; 10005 stock < 1, N = 1
 *   -> {"FENCED"}             f:T or T:r exists; nothing written (checked before the replay)
 *   -> {"REPLAY", entry}      T already existed and starts with this traceId, orderId and
 *                             userId: the stored entry (the front publishes it), nothing written
 *   -> {"COLLISION"}          T already existed for another purchase: an id collision,
 *                             nothing written (DESIGN.md 4: 503 and an alert)
 *   -> {"PROBING", N, h}      T:h = "probing": T overflowed and is being probed (the
 *                             front probes again with take.lua; takes replay)
 *   -> {"SETTLED", j, N, h}   T:h = j: bucket j admitted T (take.lua on j answers REPLAY)
 *   -> {"OVERFLOW", N, h}     stock < 1 and N > 1: HSET users userId traceId and
 *                             T:h "probing", nothing else written
 * take.lua     KEYS meta stock trace of bucket j != h
 *              ARGV traceId orderId userId voucherId ts home(h)
 *   -> entry (bulk string)    admitted: DECRBY stock j, HSET trace T entry (bucket j,
 *                             home h); never touches users (membership is h's)
 *   -> code (integer)         as deduct.lua's sale checks (10004 a key of j missing,
 *                             10013, 10002, 10003, 10011, 10012), or 10005: j is empty
 *   -> {"FENCED"} | {"REPLAY", entry} | {"COLLISION"} as deduct.lua, on bucket j (T:r only)
 * settle.lua   KEYS trace of h   ARGV traceId j
 *   -> {"OK"} T:h was "probing", now j | {"ALREADY", cur} T:h names bucket cur already
 *      | {"NONE"} no T:h (nothing written). The front publishes in every case.
 * home.lua     KEYS meta users trace of h [f:T of h]
 *              ARGV traceId userId bucket(""|j) repoint(""|"0"|T0) reason expire_extra_ms
 *                   [giveup_px_ms]
 *   with the 4th key and giveup_px_ms (bucket "", repoint ""): the give-up of a purchase
 *      that took nothing (DESIGN.md 4 "Give-up fence"): SET f:T PX giveup_px_ms, HDEL T:h,
 *      HDEL users[userId] if it names T -> {"OK", 1, released(0|1), 0}; no T:r.
 *   -> {"OK", fenced(0|1), released(0|1), repointed(0|1)}: when j != h or j = "" (no
 *      bucket admitted T) HSET T:r in h if missing (fenced; a late deduct of T is
 *      FENCED); then, only if users[userId] == traceId: HSET it to T0 (repoint T0:
 *      has_order, repointed), leave it (repoint "0") or HDEL it (repoint "": released).
 *      Idempotent.
 *      T:r = {"mode":"home","reason":"..","bucket":j|-1,"restored":0,"released":0,
 *             "clamped":0,"ts":MS}
 * rollback.lua KEYS meta stock users trace of the trace's bucket j
 *              ARGV traceId mode(front|consumer|reconciler) restore(0|1) release(0|1)
 *                   clamp_to(""|N) userId(""|id) reason expire_extra_ms
 *                   [home(""|h) repoint(""|T0)]
 *              h = T's "home", else ARGV home, else j.
 *   -> {"ALREADY", restore_entry_json, h}  T:r existed; nothing written
 *   -> {"CLAIMED"}            mode front and T:c exists; nothing written
 *   -> {"OK", restored(0|1), released(0|1), clamped(0|1), h, repointed(0|1)}
 *        fence T:r written:
 *        restored: restore=1, T exists and the stock key exists (INCRBY deductQty of T;
 *                  the stock key is never created; not if T:x says restored=1);
 *        released / repointed: only when h = j (this script is the home step): users
 *                  [userId] == traceId is re-pointed to T0 (repoint given) or deleted
 *                  (release=1); userId from T, else ARGV. When h != j: both 0, the
 *                  caller runs home.lua on h (after OK and after ALREADY);
 *        clamped:  clamp_to given, the stock key exists and stock > clamp_to (SET; the
 *                  TTL is re-applied).
 *      T:r = {"mode":"..","reason":"..","home":h,"restored":0|1,"released":0|1,
 *             "clamped":0|1,"ts":MS}
 * claim.lua    KEYS meta trace
 *              ARGV op expire_extra_ms traceId... :
 *              claim T | failed T | sent T partition offset | consume T1 T2 ...
 *              (partition 0..999999999; offset canonical 0..2^63-1, kept as a string)
 *              T:c = {"redrives":N,"failed":N,"consumed":0|1,"partition":"P","offset":"O"}
 *              (a member left out reads as 0 or ""; consume of a trace without a record
 *              writes {"consumed":1})
 *              (partition/offset "" until a "sent"; "failed" resets them to "": the
 *              counted re-drive is settled, its offset must not be counted again)
 *   -> claim/failed/sent: {"OK", redrives, failed, consumed(0|1), partition|"", offset|""}
 *                         (integers, then two strings) after the update,
 *                         or {"RESTORED"} (T:r exists; nothing written)
 *   -> consume: {"OK", r1, r2, ...} with ri = 1 if Ti is RESTORED (fenced; its T:c is
 *      left alone), else 0 (T:c.consumed set to 1)
 * release.lua  KEYS meta stock users trace of the order's bucket j
 *              ARGV traceId userId(""|id) by(cancel|close|reconciler) expire_extra_ms
 *                   [home(""|h)]    (h = T's "home", else ARGV home, else j)
 *   -> {"OK", restored(0|1), released(0|1), h}   T:x written now: restored = INCRBY
 *        stock 1 (only if T exists, the stock key exists and no T:r says restored=1)
 *   -> {"ALREADY", release_entry_json, released(0|1), h}  T:x existed: nothing restored
 *      Both then ran the home step when h = j: released = users[userId] named T and was
 *      deleted. When h != j released is 0: the caller runs home.lua on h.
 *      T:x = {"by":"..","restored":0|1,"ts":MS}
 *      rollback.lua restores nothing for a trace whose T:x says restored=1.
 */
#pragma once
#include <stddef.h>
#include "sk/err.h"
#include "sk/redis.h"

/* The sale's scripts, one per lua/NAME.lua; the index of each in the table of scripts.c. */
typedef enum { SK_SCRIPT_DEDUCT = 0, SK_SCRIPT_ROLLBACK = 1, SK_SCRIPT_CLAIM = 2,
               SK_SCRIPT_RELEASE = 3, SK_SCRIPT_TAKE = 4, SK_SCRIPT_SETTLE = 5,
               SK_SCRIPT_HOME = 6, SK_SCRIPT__N } sk_script_t;

/** @brief sk_redis_evalsha() of the sale's script @p s: same arguments, ownership and
 *  errors (SK_EINVAL also for an @p s out of range). Not thread-safe per @p r. */
sk_err_t sk_script_eval(sk_redis_t *r, sk_script_t s, int nkeys, const char **keys, int nargs,
                        const char **args, redisReply **reply, char *errstr,
                        size_t errstr_size);
/** @brief SCRIPT LOAD every script of the sale on every master (sk_redis_load_scripts()).
 *  Idempotent. Errors as sk_redis_load_scripts(). Not thread-safe per @p r. */
sk_err_t sk_scripts_load(sk_redis_t *r, char *errstr, size_t errstr_size);
/** @brief 1 if every script of the sale is loaded on every master, 0 if not (or one was
 *  never loaded by this process), <0 error (sk_redis_scripts_loaded()). */
int sk_scripts_loaded(sk_redis_t *r);
/** @brief @p s's SHA1 as 40 lowercase hex characters, NULL before its first successful
 *  SCRIPT LOAD in this process (sk_redis_script_sha()). Static; thread-safe. */
const char *sk_script_sha(sk_script_t s);
