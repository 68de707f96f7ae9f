/* worker.h: the state of one consumer worker thread and the binary-local modules that
 * work on it (design in main.c; the files and their jobs: consumer/README.md). One
 * concern per file, each owning its part of the state below (the struct is shared so
 * the loop can hand a worker to each module).
 * Not thread-safe: a worker_t belongs to its thread; only the metrics are shared. */
#pragma once
#include <stdint.h>
#include "consumer.h"

/* One polled message and what became of it in this batch. */
typedef struct cmsg {
        rd_kafka_message_t *rkm;   /* owned */
        sk_order_msg_t msg;
        int parsed;                /* msg valid */
        int settled;               /* decided in the DB or PERSISTED to the DLQ */
        int claimed;               /* claim.lua consume ran for it */
        int fenced;                /* claim.lua: RESTORED (the front fenced first) */
        int db_errors;             /* non-transient DB errors so far */
        int applied;               /* this worker created the order now: cache it */
        int grouped;
        struct cmsg *dup_of;       /* an earlier copy of the same traceId in the group */
} cmsg_t;

/* flow.c: partitions paused while retrying and the messages that arrived meanwhile. */
typedef struct cons_flow {
        rd_kafka_message_t **carry;  /* owned messages, oldest first */
        int ncarry, carry_cap;
        rd_kafka_topic_partition_list_t *paused;  /* owned; NULL when nothing paused */
        rd_kafka_t *serve;         /* polled while waiting: the DLQ producer (dlq.c), borrowed */
} cons_flow_t;

/* dlq.c: the lazily created DLQ producer and the state of its one copy in flight. */
typedef struct cons_dlq {
        rd_kafka_t *rk;
        volatile int status;       /* -2 pending, -1 error, else rd_kafka_msg_status_t */
        volatile intptr_t seq;
} cons_dlq_t;

/* claimer.c: claim.lua for the NEXT voucher group runs on a second Redis connection
 * while this group's DB transaction runs; its reply is read when that group starts. */
typedef struct cons_claimer {
        sk_redis_t *r;             /* the prefetch connection (owned) */
        cmsg_t **next_g;           /* the group after the one being settled, or NULL */
        int next_n;
        cmsg_t **pf_g;             /* members whose claim is in flight (NULL: none) */
        int *pf_which;             /* indexes into pf_g of the traceIds sent, in order */
        int pf_cnt;
        redisContext *pf_ctx;      /* the node the in-flight claim went to (its slot's master) */
        int64_t *ids;              /* scratch: traceIds of one call */
        int *fenced;               /* scratch: its reply */
} cons_claimer_t;

/* offsets.c: per partition, the group's committed offset read on assignment (-1 if
 * unknown) raised by every offset this worker stored since. */
typedef struct cons_offsets {
        int64_t *floor;            /* indexed by partition */
        int nfloor;
} cons_offsets_t;

typedef struct worker {
        const cons_ctx_t *ctx;
        const sk_conf_t *conf;
        const cons_opts_t *opts;
        cons_metrics_t *m;
        int idx;
        rd_kafka_t *rk;
        sk_db_t *db;
        sk_redis_t *redis;
        int redis_broken;
        cons_apply_t *ap;
        uint64_t rng;
        cmsg_t *batch;             /* batch_max */
        int nbatch;
        const sk_order_msg_t **msgs; /* scratch: batch_max pointers */
        cmsg_t **grp;                /* scratch: batch_max group members, group by group */
        int *gstart, *gcount;        /* scratch: where each group starts, its size */
        sk_outcome_t *known;         /* scratch: batch_max outcomes of the pre-check */
        int chunk;                   /* messages per transaction of the group being settled
                                        (0: all; halved by a 1213, DESIGN.md 16) */
        int unresolved;              /* 1: a COMMIT's outcome is unknown, read it first */
        int precheck_left;           /* groups that still run the outcome pre-check
                                        (--precheck-groups after a decided traceId was
                                        last found; group.c) */
        int64_t next_gauge_ms;
        cons_flow_t flow;
        cons_dlq_t dlq;
        cons_claimer_t claimer;
        cons_offsets_t offs;
} worker_t;

/* ---- conn.c ---- */
/** @brief 1 once a stop was requested (drain or abandon). Any thread. */
int cons_stopping(void);
/** @brief Make sure the worker's DB link answers; reconnect (dropping the prepared
 *  statements) if not. Logs the result; never fails. */
void cons_worker_ensure_db(worker_t *w);
/** @brief The worker's Redis connection, reconnected if it was marked broken; NULL if
 *  Redis cannot be reached now (logged). Borrowed. */
sk_redis_t *cons_worker_redis(worker_t *w);
/** @brief Count a Redis error @p err; an I/O-class one marks the connection broken. */
void cons_worker_redis_failed(worker_t *w, sk_err_t err);

/* ---- flow.c ---- */
/** @brief 1 if @p rkm is a message; an error event is logged, destroyed, and 0. */
int cons_flow_is_message(worker_t *w, rd_kafka_message_t *rkm);
/** @brief Poll the consumer once for up to @p ms (group membership, rebalances); a
 *  message that arrives is kept on the carry list with its partition paused. */
void cons_flow_poll_once(worker_t *w, int ms);
/** @brief Pause every assigned partition, then poll for @p attempt's backoff
 *  (capped exponential with jitter, --backoff-cap-ms). DESIGN.md 8 transient rows. */
void cons_flow_backoff(worker_t *w, int attempt);
/** @brief Resume whatever is paused. */
void cons_flow_resume_all(worker_t *w);
/** @brief Move the oldest carried message into *rkm (owned by the caller). @returns 0
 *  when the carry list is empty. */
int cons_flow_take(worker_t *w, rd_kafka_message_t **rkm);
/** @brief Lowest carried offset of @p partition, or INT64_MAX. */
int64_t cons_flow_min_offset(const worker_t *w, int32_t partition);
/** @brief Number of carried messages. */
int cons_flow_carried(const worker_t *w);
/** @brief Resume and give every carried message back (before the handle closes). */
void cons_flow_close(worker_t *w);

/* ---- dlq.c ---- */
/** @brief Copy @p c to the DLQ with @p kind and @p reason headers (DESIGN.md 5, 8);
 *  returns once the copy is PERSISTED (SK_OK, c->settled = 1) or the worker is stopping
 *  (SK_ESTOP). Retries with backoff, polling the consumer meanwhile. */
sk_err_t cons_dlq_send(worker_t *w, cmsg_t *c, const char *kind, const char *reason);
/** @brief Flush (bounded) and destroy the DLQ producer. */
void cons_dlq_close(worker_t *w);

/* ---- claimer.c ---- */
/** @brief Allocate the claimer's scratch for batch_max messages. @returns 0 or -1. */
int cons_claimer_init(worker_t *w);
/** @brief Close the prefetch connection and free the scratch. */
void cons_claimer_close(worker_t *w);
/** @brief claim.lua consume for the unsettled, unclaimed members of group @p g (one
 *  voucher), reading first the prefetched reply if one is in flight, then sending the
 *  next group's prefetch (set by cons_claim_set_next). Marks claimed / fenced.
 *  @returns SK_OK, or SK_EAGAIN (Redis error: back off and retry; nothing decided). */
sk_err_t cons_claim_group(worker_t *w, cmsg_t **g, int n);
/** @brief DESIGN.md 12, consumers during an outage: 1 if voucher @p voucher_id is in
 *  state draining or db (no front writes Redis for it: a consumer that cannot reach
 *  Redis commits without claim.lua and leaves the Redis rollbacks to the reconciler and
 *  the recovery rebuild); 0 in state redis or rebuilding, or when the switch row cannot
 *  be read (one SELECT on the worker's DB connection). */
int cons_voucher_degraded(worker_t *w, int64_t voucher_id);
/** @brief The group to prefetch when the current one starts (NULL: none). */
void cons_claim_set_next(worker_t *w, cmsg_t **g, int n);
/** @brief Read and drop any in-flight prefetch (nothing stays in flight across batches). */
void cons_claim_drain(worker_t *w);

/* ---- decide.c ---- */
/** @brief Record FAILED (@p reason) for @p c in its own transaction, then run
 *  rollback.lua (sold_out: clamp-to read in a second transaction that bumps the bucket
 *  row's version first, DESIGN.md 16 (3)).
 *  DESIGN.md 7, 8. @returns SK_OK (settled), SK_EAGAIN (transient), SK_EDB (retry
 *  later), SK_ESTOP. */
sk_err_t cons_decide_failed(worker_t *w, cmsg_t *c, sk_reason_t reason, const char *detail);
/** @brief Someone decided first: compare ids (a mismatch is a collision: DLQ), follow
 *  CREATED (nothing) or FAILED (rollback.lua for its reason). DESIGN.md 7. */
sk_err_t cons_decide_follow(worker_t *w, cmsg_t *c, const sk_outcome_t *o);
/** @brief An id collision: alert metric, log, DLQ (@p what is the reason header). */
sk_err_t cons_decide_collision(worker_t *w, cmsg_t *c, const char *what);
/** @brief A non-transient DB error on @p c: SK_EDB while --max-db-retries allows,
 *  then the DLQ (SK_OK once PERSISTED). DESIGN.md 8 "other DB errors". */
sk_err_t cons_decide_db_error(worker_t *w, cmsg_t *c, const char *errstr);
/** @brief Count and log a transient DB error for @p what; @returns SK_EAGAIN. */
sk_err_t cons_decide_transient(worker_t *w, const char *what, int64_t id, const char *errstr);

/* ---- group.c ---- */
/** @brief Settle group @p g (all @p n messages of one voucher in this batch), retrying
 *  transient failures from BEGIN with backoff until settled or stopping. */
void cons_group_settle(worker_t *w, cmsg_t **g, int n);

/* ---- offsets.c ---- */
/** @brief librdkafka rebalance callback (opaque = worker): on assignment read the
 *  group's committed offsets (the floors), then assign; on revocation forget them. */
void cons_offsets_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *parts, void *opaque);
/** @brief Store, per partition of the batch, the lowest unsettled offset (batch or
 *  carry) or the highest settled + 1, never below the partition's floor. DESIGN.md 5. */
void cons_offsets_store(worker_t *w);
/** @brief Free the floors. */
void cons_offsets_close(worker_t *w);

/* ---- ordercache.c ---- */
/** @brief SET the order JSON (EX 60) of every order this batch created, pipelined;
 *  failures only cost a cache miss. */
void cons_order_cache(worker_t *w);

/* ---- gauges.c ---- */
/** @brief At most once a second: this worker's lag and @p carried (the length of its
 *  carry list, cons_flow_carried) into the shared gauges (sums over the workers). */
void cons_gauges_update(worker_t *w, int carried);
