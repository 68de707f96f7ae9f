/* sk/queue_room.h: the waiting room in Redis (DESIGN.md 4 `{q:ID}` keys, 18): join,
 * advance and the used bit, each one EVALSHA of its script (lua/queue_join.lua,
 * queue_advance.lua, queue_use.lua, with lua/lib/queue.lua) on the room's one hash tag,
 * routed by the Redis layer like every script (Cluster: one slot); the poll, plain
 * pipelined reads on the room's master (no script: §18 "Polling costs little"); and the
 * member state of §18 decided from a view.
 * What it does not do: sign tokens (sk/queue_token.h), read the database (the caller
 * passes the DB facts: units held, held until, closed) or keep state between calls.
 * Errors: as sk_redis_evalsha (SK_EAGAIN transient, SK_EUNKNOWN unknown outcome: join and
 * advance are safe to repeat, a repeated use "set" answers USED; SK_EINVAL a bad
 * argument, nothing written; SK_EREDIS). Thread-safety: as the sk_redis_t given (one
 * handle per thread); the script objects are shared and thread-safe. */
#pragma once
#include <stdint.h>
#include "sk/err.h"
#include "sk/queue.h"
#include "sk/redis.h"

/** One room: the voucher, its times, its settings and the key expiry E (DESIGN.md 4:
 *  end_ms + reconcile window + 1 day). @p prefix borrowed for the call. */
typedef struct sk_qroom {
        const char *prefix;             /* SECKILL_REDIS_PREFIX */
        int64_t voucher_id;
        int64_t begin_ms, end_ms;       /* the sale's window */
        sk_queue_conf_t conf;
        int64_t expire_at_ms;           /* E */
        /* > 0 when the caller saw a generation of this room before: a state a join has to
         * create at or after begin (the old one was lost) draws the joins of its first
         * redraw_ms at random, like a pre-queue (DESIGN.md 18 "Outage"); 0 = no draw. */
        int64_t redraw_ms;
        int64_t use_bound_ms;           /* sk_qroom_use set: the latest a deduct can follow
                                         * its used bit (0: SK_QROOM_USE_BOUND_MS) */
} sk_qroom_t;

#define SK_QROOM_USE_BOUND_MS 60000     /* use_bound_ms when the caller gives none */

typedef enum {
        SK_QVIEW_MEMBER = 0,    /* the caller is a member (view of its place) */
        SK_QVIEW_REJOINED,      /* join: a new place at the end of the line */
        SK_QVIEW_NOTMEMBER,     /* poll: not a member */
        SK_QVIEW_NOROOM,        /* poll: the room has no state (nobody joined, or lost) */
        SK_QVIEW_NOTOPEN,       /* join: before the pre-queue opens (Redis time) */
        SK_QVIEW_ENDED,         /* join: the sale has ended (Redis time) */
        SK_QVIEW_CLOSED,        /* join: the room is closed (every unit PAID) */
} sk_qview_tag_t;

/** What a join or poll script saw (Redis time; -1 = none). */
typedef struct sk_qroom_view {
        sk_qview_tag_t tag;
        int64_t now_ms;
        char generation[17];
        int begun;
        int64_t npre, seq;              /* |pre-queue|, arrivals after begin */
        int64_t up_to;                  /* admitted up to this position */
        int64_t position;               /* 0 = a pre-queue member before begin; -1 none */
        int used;                       /* the position's used bit */
        int64_t admit_ms;               /* Redis time the position was admitted, -1 */
        int64_t units_left, units_held, held_until_ms;
        int closed;
        int64_t exp_up_to;
} sk_qroom_view_t;

/** @brief Join (DESIGN.md 18): @p uid becomes a member (pre-queue key drawn here from
 *  the OS CSPRNG, a collision redraws; a new room gets a new generation, whose first
 *  room->redraw_ms after begin are a pre-queue when set); a repeat
 *  changes nothing; an expired member (or a used one with @p rejoin_used) gets a new
 *  place. *v receives the view. Errors above; SK_EAGAIN too when the OS gave no
 *  randomness. */
sk_err_t sk_qroom_join(sk_redis_t *r, const sk_qroom_t *room, int64_t uid, int rejoin_used,
                       sk_qroom_view_t *v, char *errstr, size_t errstr_size);
/** @brief Poll (read only): @p uid's view, the one lib/queue.lua's q_view builds, read with
 *  plain commands on the room's master (sk_redis_ctx_key of the state key): one round of
 *  TIME, HMGET of the state, ZCARD of the pre-queue, ZSCORE in post and ZRANK in pre; a
 *  second (GETBIT, the admission tick) only for an admitted position. Not one atomic
 *  snapshot: each read is the room at its moment (the token and queue_use.lua decide a
 *  purchase, never a poll). Errors: SK_EAGAIN (the master unreachable, a connection
 *  lost, an error reply such as MOVED, LOADING: nothing written, the caller may close
 *  @p r and retry), SK_EREDIS (a malformed reply), SK_EINVAL (prefix too long). */
sk_err_t sk_qroom_poll(sk_redis_t *r, const sk_qroom_t *room, int64_t uid,
                       sk_qroom_view_t *v, char *errstr, size_t errstr_size);

/** What one advance did. */
typedef struct sk_qroom_adv {
        int noroom;                     /* no state: nothing done */
        int64_t now_ms, up_to, live, window, members, expired, used, admitted_now;
        int64_t units_left;
        int closed;
        char generation[17];
        int begun;                      /* the room's state after the advance: */
        int64_t npre;                   /* |pre-queue| */
        int64_t units_held, held_until_ms;
} sk_qroom_adv_t;

/** @brief Advance the line (DESIGN.md 18 "The window") with the stock reading
 *  (@p units, taken at Redis time @p read_ms; an older reading than the last accepted is
 *  ignored), and, when @p units_held >= 0, the DB facts (units held, held until ms) and
 *  @p closed (set once, never cleared). *out receives what the script did. */
sk_err_t sk_qroom_advance(sk_redis_t *r, const sk_qroom_t *room, int64_t units, int64_t read_ms,
                          int64_t units_held, int64_t held_until_ms, int closed,
                          sk_qroom_adv_t *out, char *errstr, size_t errstr_size);

typedef enum {
        SK_QUSE_OK = 0,         /* set (or cleared) now */
        SK_QUSE_USED,           /* set: already used (or the position is gone): 10014 */
        SK_QUSE_OTHERGEN,       /* a token of another generation: buys, not counted */
        SK_QUSE_NOROOM,         /* the room's state is gone: treated as OTHERGEN */
} sk_quse_t;

/** What sk_qroom_use does to a position (lua/queue_use.lua). */
#define SK_QUSE_CLEAR 0 /* after a 503: the bit cleared, the use no longer counted */
#define SK_QUSE_SET 1   /* before the deduct: the bit set (already set: SK_QUSE_USED) */
#define SK_QUSE_DONE 2  /* the purchase was answered (not 503): its deduct, if any, applied;
                         * a stock reading taken after this shows it (invariant 8) */

/** @brief "A token buys once" (DESIGN.md 18): @p op SK_QUSE_SET sets position @p pos's
 *  used bit of generation @p gen (borrowed) before the deduct (counted against the stock
 *  only by a reading taken after the DONE, at the latest room->use_bound_ms after the
 *  set), SK_QUSE_DONE marks its purchase answered, SK_QUSE_CLEAR clears it after a 503.
 *  *res receives the verdict. Returns SK_OK; SK_EUNKNOWN, SK_EAGAIN (Redis), SK_EREDIS,
 *  SK_EINVAL (a bad argument). */
sk_err_t sk_qroom_use(sk_redis_t *r, const sk_qroom_t *room, const char *gen, int64_t pos,
                      int op, sk_quse_t *res, char *errstr, size_t errstr_size);

/** The member states of DESIGN.md 18 (GET …/queue). */
typedef enum {
        SK_QSTATE_NONE = 0,     /* not a member: 404 10016 */
        SK_QSTATE_PREQUEUE,
        SK_QSTATE_WAITING,
        SK_QSTATE_ADMITTED,
        SK_QSTATE_USED,
        SK_QSTATE_EXPIRED,
        SK_QSTATE_SOLD_OUT,
        SK_QSTATE_ENDED,
} sk_qstate_t;

/** @brief The member state of view @p v for a room whose admissions live @p ttl_s and
 *  whose sale ends at @p end_ms: not a member → NONE; ended → ENDED; before begin →
 *  PREQUEUE; a position admitted → USED (its bit), ADMITTED (before admit + ttl;
 *  *admit_until_ms set), else EXPIRED; a position not yet admitted → SOLD_OUT when the
 *  room is closed or no unit is left, else WAITING. Pure. */
sk_qstate_t sk_qroom_state(const sk_qroom_view_t *v, int ttl_s, int64_t end_ms,
                           int64_t *admit_until_ms);
/** @brief The state's name as §3 writes it ("prequeue", "sold_out", ...). */
const char *sk_qstate_name(sk_qstate_t s);
