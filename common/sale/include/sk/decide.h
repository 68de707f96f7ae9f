/* sk/decide.h: "record FAILED, compare ids on a duplicate, follow CREATED or FAILED"
 * (DESIGN.md 7), written once for every process that gives up on a purchase (consumer,
 * reconciler, rebuild), and the rollback.lua step that follows a FAILED decision with
 * the sold_out clamp protocol of DESIGN.md 4 and 8:
 *
 *   1. FAILED is committed in its own transaction (sk_outcome_fail) BEFORE any Redis
 *      write; a duplicate key means someone decided first: the stored row's order_id,
 *      user_id and voucher_id are compared with the message (a mismatch is an id
 *      collision: no decision, no rollback) and the row is followed (CREATED: nothing to
 *      undo; FAILED: rollback.lua with the stored reason's flags).
 *   2. sold_out: a second transaction updates bucket j's row (SET version = version + 1,
 *      DESIGN.md 16 (3): a write, so it conflicts across Galera nodes where a FOR SHARE
 *      read would not) and reads its stock (on Galera with wsrep_sync_wait = 1, DESIGN.md
 *      16 (d)), runs rollback.lua with clamp-to that value, and ends only after
 *      rollback.lua answered, so a concurrent restock cannot be clamped away on one
 *      server; on Galera a restock certified first on another node aborts our COMMIT
 *      instead, and the failed COMMIT writes a drift mark (sk/drift_mark.h) that makes the
 *      reconciler's next pass rebuild the bucket at once. A stock that cannot be
 *      read (after the retries) means rollback.lua is NOT run: no RESTORE fence claims a
 *      clamp that was not applied; the FAILED row without a fence is what the reconciler
 *      retries.
 *   3. rollback.lua is idempotent per traceId: a failed or unknown attempt is retried
 *      (with backoff) up to sk_decider_t.attempts times, each attempt re-reading the stock.
 *
 * The stock row is the trace's bucket row (tb_seckill_stock, msg->bucket; DESIGN.md 6),
 * and rollback.lua runs on that bucket's keys.
 *
 * Ownership: every pointer in sk_decider_t is borrowed. Thread-safety: none beyond the
 * caller's (one decider per thread, like its connections). */
#pragma once
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"
#include "sk/msg.h"
#include "sk/outcome.h"
#include "sk/redis.h"

typedef struct sk_decider {
        sk_db_t *db;                 /* no transaction open between calls */
        sk_redis_t *r;               /* used when redis_get is NULL */
        const char *prefix;          /* SECKILL_REDIS_PREFIX */
        const char *mode;            /* rollback.lua mode: "consumer" or "reconciler" */
        int64_t expire_extra_ms;     /* sk_expire_extra_ms(reconcile window) */
        int attempts;                /* stock reads and rollback.lua runs, >= 1 (0 = 3) */
        const char *failpoint;       /* evaluated before each rollback.lua attempt; NULL none */
        /* Optional hooks, all called with @p arg; NULL = the default in brackets. */
        int (*proceed)(void *arg);           /* 0 = stop now, before any write [go on] */
        sk_redis_t *(*redis_get)(void *arg); /* connection for the next attempt [r] */
        void (*redis_failed)(void *arg, sk_err_t err);  /* after a failed attempt [-] */
        void (*db_failed)(void *arg, sk_err_t err);     /* after a failed stock read
                                                         * [reconnect d->db if transient] */
        void (*backoff)(void *arg, int attempt);        /* between attempts (attempt 1..):
                                                         * [sleep, capped exponential + jitter] */
        void (*clamp_lost)(void *arg, const sk_order_msg_t *msg, int marked,
                           const char *why);            /* the clamp's COMMIT failed after
                                                         * rollback.lua ran: marked = 1 when
                                                         * the drift mark was written
                                                         * (DESIGN.md 16 (d)) [-] */
        int (*give_up)(void *arg, int64_t voucher_id);  /* after a failed attempt: 1 = no
                                                         * more attempts, the FAILED row's
                                                         * rollback is the reconciler's
                                                         * (DESIGN.md 12: voucher in state
                                                         * draining or db) [0] */
        void *arg;
} sk_decider_t;

typedef enum {
        SK_DECIDED_NONE = 0,         /* nothing committed by anyone we know of */
        SK_DECIDED_RECORDED,         /* our FAILED row committed */
        SK_DECIDED_FOLLOWED_CREATED, /* someone created the order first: nothing to undo */
        SK_DECIDED_FOLLOWED_FAILED,  /* someone recorded FAILED first: its reason followed */
        SK_DECIDED_COLLISION,        /* the row names other ids: alert, never a decision */
} sk_decided_t;

typedef struct sk_decision {
        sk_decided_t how;
        sk_outcome_t row;            /* the stored row followed (FOLLOWED_* and COLLISION) */
        sk_reason_t reason;          /* the reason whose flags rollback.lua ran with */
        int rolled_back;             /* rollback.lua answered: res is valid */
        sk_rollback_res_t res;
        int64_t clamp_to;            /* stock the clamp used, -1 none */
} sk_decision_t;

/** @brief Record FAILED(@p reason) for @p msg (@p detail for the RESTORE log row, may be
 *  NULL) and run its rollback, or follow whatever was decided first (DESIGN.md 7).
 *  @returns SK_OK when the decision is settled (out->how says which; rollback done if
 *  one was due); SK_EEXIST with how = COLLISION on an id collision (nothing written);
 *  SK_ESTOP when proceed() said stop. When out->how is RECORDED or FOLLOWED_FAILED but
 *  the rollback did not finish the error of the rollback is returned (SK_EAGAIN,
 *  SK_EUNKNOWN, SK_EREDIS, SK_EFAIL...): the FAILED row stays without its fence for the
 *  reconciler. how = NONE: nothing committed; SK_EAGAIN transient, SK_EDB/SK_EINVAL
 *  permanent. */
sk_err_t sk_decide_failed(const sk_decider_t *d, const sk_order_msg_t *msg, sk_reason_t reason,
                          const char *detail, sk_decision_t *out, char *errstr,
                          size_t errstr_size);

/** @brief Follow the stored outcome @p row of @p msg (a duplicate key or a row read
 *  later): compare ids (mismatch: SK_EEXIST, how = COLLISION), CREATED: SK_OK, FAILED:
 *  rollback.lua with the stored reason's flags (an unknown reason: SK_EINVAL, a human
 *  decides). Errors of the rollback as sk_decide_failed. */
sk_err_t sk_decide_follow(const sk_decider_t *d, const sk_order_msg_t *msg,
                          const sk_outcome_t *row, sk_decision_t *out, char *errstr,
                          size_t errstr_size);

/** @brief rollback.lua for the committed FAILED(@p reason) of @p msg, with the sold_out
 *  clamp protocol (header comment, steps 2-3). *res and *clamp_to (-1 none) describe the
 *  successful attempt. @returns SK_OK, SK_ESTOP, or the last attempt's error (a stock
 *  read that failed every time: its DB error, and rollback.lua never ran). */
sk_err_t sk_decide_rollback(const sk_decider_t *d, const sk_order_msg_t *msg,
                            sk_reason_t reason, sk_rollback_res_t *res, int64_t *clamp_to,
                            char *errstr, size_t errstr_size);
