/* producer/req.h: one HTTP request of seckill-front and its single answer (DESIGN.md 3,
 * 8): reference counting, answer-once, the pending list whose order is the deadline
 * order, suspension of the connection, the in-flight count and the shutdown level.
 * Every other part of the front (HTTP, deduct, publish, rollback, lookup, deadline)
 * answers through this API; none of them answers through another pipeline stage. */
#pragma once
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <microhttpd.h>

#include "sk/ids.h"
#include "sk/queue_room.h"

/* What a request is waiting for. */
typedef enum {
        FR_KIND_QUICK = 0,      /* answered synchronously by the HTTP thread */
        FR_KIND_PURCHASE,       /* POST .../seckill: the purchase pipeline */
        FR_KIND_ORDERS_ME,      /* GET .../orders/me: lookup pool */
        FR_KIND_ORDER_GET,      /* GET /api/v1/orders/{id}: lookup pool */
        FR_KIND_ORDER_ACTION,   /* POST /api/v1/orders/{id}/cancel: lookup pool */
        FR_KIND_PAYMENT,        /* POST /api/v1/payments/callback: the payment pool */
        FR_KIND_ROOM,           /* GET /api/v1/vouchers/{id}, POST|GET …/queue: room pool */
} fr_kind_t;

/* Lookup-pool jobs. */
typedef enum { FR_LOOKUP_ORDERS_ME = 1, FR_LOOKUP_ORDER_GET, FR_LOOKUP_VOUCHER,
               FR_LOOKUP_CANCEL } fr_lookup_t;

/* One HTTP request. Ownership: reference counted. The HTTP layer holds one reference
 * from the first handler call until MHD's completed notification; an asynchronous
 * pipeline (purchase, lookup) holds a second one until fr_req_done(). The answer is
 * written exactly once (fr_answer(), under req.c's lock); later answers are dropped,
 * so the deadline timer, delivery reports and shutdown may race safely. */
typedef struct fr_req {
        atomic_int refs;
        fr_kind_t kind;
        struct MHD_Connection *conn;    /* borrowed; valid while MHD holds its reference */
        int64_t start_mono_ms;
        int64_t deadline_mono_ms;
        int64_t produced_mono_ms;       /* when the (first) produce was issued */

        /* Guarded by req.c's lock. */
        int suspended;                  /* MHD_suspend_connection() was called */
        int answered;
        int queued;                     /* the answer was handed to MHD */
        struct fr_req *prev, *next;     /* pending list (FIFO = deadline order) */
        int in_list;

        /* The answer (owned; body is malloc'd and given to MHD). */
        int status;
        char *body;
        size_t body_len;
        int retry_after_s;              /* > 0: Retry-After header */
        const char *allow;              /* Allow header for 405, static */
        const char *ctype;              /* Content-Type, static; NULL = application/json */
        const char *www_auth;           /* WWW-Authenticate of a 401, static; NULL = none */

        int body_seen;                  /* a request body arrived (413) */
        /* The request body of the one route that takes one (the payment callback,
         * DESIGN.md 15), kept by the HTTP thread up to in_cap bytes. */
        char *in_body;                  /* owned, NUL-terminated; NULL = none */
        size_t in_len, in_cap;          /* in_cap > 0: this request may carry a body */
        int in_over;                    /* more than in_cap bytes arrived (413) */
        void *pay;                      /* owned: the callback's sk_payment_t (payment.c) */
        int routed;                     /* the final handler call routed it (HTTP thread only) */
        size_t uri_cstr_len;            /* strlen() of the URI before libmicrohttpd cut
                                         * its query (strict.c; HTTP thread only) */
        int close;                      /* answer with Connection: close (HTTP thread only) */
        int page;                       /* the buyer page's headers: CSP, nosniff, no-cache
                                         * (page.c, DESIGN.md 18; HTTP thread only) */
        int soldout;                    /* the answer is the shared sold-out response
                                         * (http.c; body NULL; HTTP thread only) */

        /* Purchase / lookup data, written before the pipeline starts. */
        int64_t voucher_id, user_id, order_id, trace_id;
        int64_t dsw_epoch;              /* DB-only purchase: the switch epoch it runs under */
        char sv[SK_ID_STRLEN], su[SK_ID_STRLEN], so[SK_ID_STRLEN], st[SK_ID_STRLEN];
        /* Buckets (DESIGN.md 4), written by the deduct worker before deduct.lua, then by
         * the stage that owns the request (probe.c, publish.c, rollback.c). */
        int buckets;                    /* the voucher's bucket count N (0 until known) */
        int home;                       /* h = sk_home_bucket(user, N): deduct.lua's bucket */
        int bucket;                     /* j: the bucket whose stock admitted (or may hold)
                                         * the purchase (Kafka key "V:j"); -1 none (the
                                         * rollback worker then runs only the home step) */
        char *msg;                      /* owned: msg_json of deduct.lua (identical bytes on re-produce) */
        size_t msg_len;
        int deduct_attempts;            /* EVALSHA attempts with an unknown outcome */
        int possibly_persisted;         /* an earlier copy was POSSIBLY_PERSISTED */
        atomic_int nothing_taken;       /* deduct.lua took nothing and never will: a
                                         * deadline/shutdown 503 has no state */
        int reproduced;                 /* the one identical re-produce was issued */
        fr_lookup_t lookup;
        int inflight_counted;
        int vflight;                    /* counted in vflight.c (guarded by its lock):
                                         * from before the degrade state is read until
                                         * the purchase can no longer reach Kafka */

        /* Overflow probing (DESIGN.md 4), with buckets/home/bucket above. */
        int overflowed;                 /* deduct.lua answered OVERFLOW, PROBING or
                                         * SETTLED: the home step follows a give-up */
        int settled;                    /* SETTLED bucket: take.lua on it replays */

        /* The waiting room (DESIGN.md 18; room_routes.c), written by the HTTP thread
         * before the pipeline starts, q_used by the deduct worker. */
        int room_op;                    /* FR_ROOM_OP_* of a room route */
        int64_t q_pos;                  /* a queued purchase's admitted position, 0 = none */
        char q_gen[17];                 /* its token's generation */
        sk_qroom_t q_room;              /* its room (prefix borrowed from g_fr) */
        int q_used;                     /* the used bit was set for this purchase */

        struct fr_req *qnext;           /* list link (queue.h): a pool's queue, parked
                                         * re-produces, the rollback backlog */
        int rb_tries;                   /* background fence tries while in the backlog */
} fr_req_t;

/** A new request holding the HTTP layer's reference (start time = now). NULL on ENOMEM. */
fr_req_t *fr_req_new(void);
void fr_req_ref(fr_req_t *req);
/** Drop a reference; the last one frees the request (body, msg). NULL is a no-op. */
void fr_req_unref(fr_req_t *req);

/** Called by fr_answer with the answer's status once it is the answer (NULL = none):
 *  the waiting room clears a purchase's used bit after a 503 (room_routes.c sets it at
 *  start-up, before any thread). */
extern void (*fr_req_answer_hook)(fr_req_t *req, int status);

/** Answer @p req once with @p status and @p body (taken, malloc'd; may be NULL) and
 *  Retry-After @p retry_after_s (s, 0 = none). Unlinks it from the pending list and
 *  resumes its suspended connection. Thread-safe. @returns 1 if this was the answer,
 *  0 if it had been answered already (@p body is freed). */
int fr_answer(fr_req_t *req, int status, char *body, int retry_after_s);
/** {"code":C,"message":"M"} (malloc'd, NULL on ENOMEM). @p msg is a literal (not escaped). */
char *fr_json_err(int code, const char *msg);
/** 503/10013 + Retry-After (DESIGN.md 3, 8) with a @p cause (overload, kafka, redis,
 *  lease, paused, pending, failed, shutdown, db, meta_missing, collision, timeout) and,
 *  once ids were minted, the purchase @p state the front established (PENDING, FAILED;
 *  NULL = none: nothing taken). Counts the answer actually sent by cause/state.
 *  Thread-safe. @returns as fr_answer. */
int fr_answer_503(fr_req_t *req, const char *cause, const char *state, const char *msg);
/** A synchronous answer of the HTTP thread, with no pipeline behind it (kind QUICK, so
 *  the final handler call hands it to libmicrohttpd at once): fr_answer with @p body
 *  (taken) and Retry-After 1 s on a 503 or a 429. Thread-safe. @returns as fr_answer. */
int fr_quick(fr_req_t *req, int status, char *body);
/** The same as a 503 with @p cause and @p msg and no purchase state (fr_answer_503). */
int fr_quick_503(fr_req_t *req, const char *cause, const char *msg);
/** The pipeline (purchase or lookup) is finished with @p req: releases its in-flight
 *  slot and drops its reference. Thread-safe; once per pipeline reference. */
void fr_req_done(fr_req_t *req);
/** The state a deadline or shutdown 503 reports: "PENDING" for a purchase that may have
 *  taken stock, NULL once deduct.lua took nothing (or for lookups). */
const char *fr_req_unanswered_state(fr_req_t *req);

/** Admission (DESIGN.md 8, before deduct.lua): take an in-flight slot for @p req unless
 *  @p max are taken. @returns 0 taken, -1 cap reached. Thread-safe. */
int fr_inflight_acquire(fr_req_t *req, int max);
/** Give the slot back before the pipeline started (a 503 at admission); also ends the
 *  purchase's per-voucher count (vflight.h), as does the last unref. */
void fr_inflight_release(fr_req_t *req);
/** Purchases between admission and done. */
int fr_inflight(void);

/** Shutdown level: 0 serving, 1 refuse new purchases, 2 nothing is suspended any more
 *  (requests are answered 503 at once). Thread-safe. */
int fr_stopping(void);
void fr_set_stopping(int level);

/** Hand @p req to an asynchronous pipeline: pending list (deadline = start + the
 *  front's deadline), the pipeline's reference, suspension of @p conn, all under the
 *  lock fr_answer takes, so an answer can never come before the suspension. At stopping
 *  level 2 nothing is suspended: @p req is answered 503 at once (shutdown) and released
 *  from the in-flight count. @returns 0 suspended (submit it now), -1 answered. */
int fr_req_suspend(fr_req_t *req, struct MHD_Connection *conn);
/** The oldest pending request if its deadline is at or before @p now_ms (monotonic
 *  ms), with a reference the caller drops; NULL otherwise. */
fr_req_t *fr_pending_expired(int64_t now_ms);
/** Answer every pending request 503 with @p cause (shutdown), state as
 *  fr_req_unanswered_state(). */
void fr_pending_flush(const char *cause);

/** HTTP side: take the answer body for MHD (sets queued). *len its length; NULL if
 *  the answer had no body. Thread-safe. */
char *fr_req_take_body(fr_req_t *req, size_t *len);
/** 1 if @p req has its answer (e.g. the deadline's 503), 0 if not yet. Thread-safe. */
int fr_req_is_answered(fr_req_t *req);
/** 1 if @p req is answered and the answer not handed to MHD yet. Thread-safe. */
int fr_req_answer_ready(fr_req_t *req);
