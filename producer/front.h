/* producer/front.h: shared state of seckill-front (the HTTP front of DESIGN.md 3).
 * The threading model is described atop producer/main.c. This header is private to
 * the binary: every function here is fr_-prefixed and documented at its definition
 * where ownership or threads matter. */
#pragma once
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <microhttpd.h>
#include <librdkafka/rdkafka.h>

#include "sk/conf.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/lease.h"
#include "sk/metrics.h"
#include "sk/msg.h"

/* What a request is waiting for. */
typedef enum {
        FR_KIND_QUICK = 0,      /* answered synchronously by the HTTP thread */
        FR_KIND_PURCHASE,       /* POST .../seckill: the purchase pipeline */
        FR_KIND_ORDERS_ME,      /* GET .../orders/me: lookup pool */
        FR_KIND_ORDER_GET,      /* GET /api/v1/orders/{id}: lookup pool */
        FR_KIND_ORDER_ACTION,   /* POST /api/v1/orders/{id}/pay|cancel: lookup pool */
} fr_kind_t;

/* Lookup-pool jobs. */
typedef enum { FR_LOOKUP_ORDERS_ME = 1, FR_LOOKUP_ORDER_GET, FR_LOOKUP_VOUCHER,
               FR_LOOKUP_PAY, FR_LOOKUP_CANCEL } fr_lookup_t;

/* One HTTP request. Ownership: reference counted. The HTTP layer holds one reference
 * from the first handler call until MHD's completed notification; an asynchronous
 * pipeline (purchase, lookup) holds a second one until fr_req_done(). The answer is
 * written exactly once (fr_answer(), under fr_t.pend_mu); later answers are dropped,
 * so the deadline timer, delivery reports and shutdown may race safely. */
typedef struct fr_req {
        atomic_int refs;
        fr_kind_t kind;
        struct MHD_Connection *conn;    /* borrowed; valid while MHD holds its reference */
        int64_t start_mono_ms;
        int64_t deadline_mono_ms;
        int64_t produced_mono_ms;       /* when the (first) produce was issued */

        /* Guarded by fr_t.pend_mu. */
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

        int body_seen;                  /* a request body arrived (413) */
        int routed;                     /* the final handler call routed it (HTTP thread only) */

        /* Purchase / lookup data, written before the pipeline starts. */
        int64_t voucher_id, user_id, order_id, trace_id;
        char sv[SK_ID_STRLEN], su[SK_ID_STRLEN], so[SK_ID_STRLEN], st[SK_ID_STRLEN];
        char *msg;                      /* owned: msg_json of deduct.lua (identical bytes on re-produce) */
        size_t msg_len;
        int deduct_attempts;            /* EVALSHA attempts with an unknown outcome */
        int possibly_persisted;         /* an earlier copy was POSSIBLY_PERSISTED */
        atomic_int nothing_taken;       /* deduct.lua rejected it (nothing written, nothing
                                         * will be): a deadline/shutdown 503 has no state */
        int reproduced;                 /* the one identical re-produce was issued */
        fr_lookup_t lookup;
        int inflight_counted;

        struct fr_req *qnext;           /* work-queue link */
} fr_req_t;

/* A small MPMC FIFO of requests (mutex + condvar). */
typedef struct fr_queue {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        fr_req_t *head, *tail;
        size_t len;
        int closed;
} fr_queue_t;

/* One librdkafka producer. Replaced (never freed before exit) after a fatal error:
 * retired producers stay in a list polled by the poll thread so their delivery
 * reports are still served. */
typedef struct fr_prod {
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        struct fr_prod *retired_next;
} fr_prod_t;

typedef struct fr_metrics {
        sk_metrics_t *reg;
        sk_metric_t *req_by_code[12];   /* index by fr_code_idx() */
        sk_metric_t *latency;           /* purchase latency, seconds */
        sk_metric_t *deduct_lat;        /* request start -> deduct reply, seconds */
        sk_metric_t *deliv_lat;         /* produce -> delivery report, seconds */
        sk_metric_t *deliv_persisted, *deliv_not, *deliv_possibly;
        sk_metric_t *rb_ok, *rb_already, *rb_claimed, *rb_error;
        sk_metric_t *inflight;
        sk_metric_t *u_overload, *u_kafka, *u_redis, *u_lease, *u_paused, *u_pending,
                    *u_failed, *u_shutdown, *u_db, *u_meta;
        sk_metric_t *reproduce, *producer_replaced, *deduct_retry;
} fr_metrics_t;

typedef struct fr {
        sk_conf_t conf;
        int http_threads, redis_workers, lookup_threads, pipeline_max;
        int64_t expire_extra_ms;
        char expire_extra_s[24];        /* decimal string of expire_extra_ms */
        int64_t deadline_ms;            /* 2 x delivery timeout + 1 s */

        struct MHD_Daemon *mhd;
        sk_idgen_t *idgen;

        _Atomic(fr_prod_t *) prod;      /* current producer */
        fr_prod_t *retired;             /* guarded by prod_mu */
        fr_req_t *defer_head, *defer_tail; /* guarded by prod_mu: POSSIBLY_PERSISTED copies
                                         * whose re-produce waits for the replacement of a
                                         * fatal producer (linked by qnext) */
        int defer_closed;               /* guarded by prod_mu: shutdown, no more deferral */
        pthread_mutex_t prod_mu;
        atomic_int prod_fatal;          /* error_cb saw a fatal error */

        atomic_int kafka_ok;            /* broker metadata ok and producer not fatal */
        atomic_int redis_ok, noeviction_ok, scripts_ok, topics_ok;
        atomic_int inflight;            /* purchases between admission and done */
        atomic_int stopping;            /* 1: refuse new purchases (shutdown) */
        atomic_int purged;              /* the queue was purged (shutdown) */
        atomic_int threads_stop;        /* worker threads exit */

        pthread_mutex_t pend_mu;        /* answer state and pending list */
        fr_req_t *pend_head, *pend_tail;

        fr_queue_t q_deduct, q_rollback, q_lookup;

        pthread_t *t_redis, *t_lookup, t_poll, t_rollback, t_timer, t_health;
        fr_metrics_t m;
} fr_t;

extern fr_t g_fr;

/* main.c / pipeline.c */
void fr_queue_init(fr_queue_t *q);
/** Append @p req. @returns 0, or -1 when @p q is closed (nothing queued: the caller
 *  still owns the reference it meant to hand over). */
int fr_queue_push(fr_queue_t *q, fr_req_t *req);
/** Pop up to @p max requests (linked by qnext). Blocks up to @p wait_ms; NULL on timeout
 *  or when closed and empty. */
fr_req_t *fr_queue_pop(fr_queue_t *q, int max, int wait_ms);
void fr_queue_close(fr_queue_t *q);
/** 1 once @p q is closed and empty (a worker may exit). */
int fr_queue_drained(fr_queue_t *q);

fr_req_t *fr_req_new(void);
void fr_req_ref(fr_req_t *req);
void fr_req_unref(fr_req_t *req);
/** Answer @p req once with @p status and @p body (taken, malloc'd; may be NULL).
 *  Resumes the suspended connection. Thread-safe. @returns 1 if this was the answer. */
int fr_answer(fr_req_t *req, int status, char *body, int retry_after_s);
/** JSON helpers: every answer body is built here (malloc'd). */
char *fr_json_err(int code, const char *msg);
/** 503 for a purchase with a state (PENDING/FAILED or NULL) and a cause. */
int fr_answer_503(fr_req_t *req, const char *cause, const char *state, const char *msg);
/** The pipeline (purchase or lookup) is finished with @p req: drops its reference. */
void fr_req_done(fr_req_t *req);
/** Add @p req to the pending list (deadline now + g_fr.deadline_ms). */
void fr_pending_add(fr_req_t *req);
/** Answer every pending request 503 (shutdown). */
void fr_pending_flush(const char *cause);

int fr_pipeline_start(char *errstr, size_t errstr_size);
void fr_pipeline_stop(void);
/** Start a purchase whose ids are set: enqueue the deduct. */
void fr_purchase_submit(fr_req_t *req);
/** Kafka: purge the queue of every producer (shutdown). */
void fr_kafka_purge_queue(void);
int fr_kafka_outq_len(void);
void fr_kafka_destroy_all(void);

/* lookup.c */
int fr_lookup_start(char *errstr, size_t errstr_size);
void fr_lookup_submit(fr_req_t *req);
void fr_lookup_stop(void);

/* orders.c: pay and cancel (DESIGN.md 13) */
/** Register the lifecycle metrics in g_fr.m.reg (once, from fr_metrics_init). */
void fr_orders_metrics_init(void);
/** Serve a pay or cancel request on a lookup thread's connections (*db and *r are
 *  connected lazily, closed and set to NULL after an error). Answers @p req once. */
struct sk_db;
struct sk_redis;
void fr_order_action(fr_req_t *req, struct sk_db **db, struct sk_redis **r);

/* http.c */
int fr_http_start(char *errstr, size_t errstr_size);
void fr_http_quiesce(void);
void fr_http_stop(void);
int fr_code_idx(int status);

/* metrics */
void fr_metrics_init(void);
