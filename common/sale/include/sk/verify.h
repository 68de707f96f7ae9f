/* sk/verify.h: `seckill-admin verify VOUCHER_ID` (DESIGN.md 9): invariants 1, 2, 3, the
 * DB part of 4 for cancelled/closed orders, 6 and active <= init checked on live state,
 * with the figures that explain a failure.
 * Also used by seckill-reconciler to decide which vouchers `--repair` rebuilds.
 *
 * Invariant 3 is judged with the purchases still in flight accounted for: Redis stock
 * must equal DB stock - the quantity held by undecided DEDUCTs (a DEDUCT entry T with
 * no RESTORE T:r and no CREATED outcome), and the users hash must equal the DB's
 * active buyers + the users of those DEDUCTs. After quiescence and a reconciler pass
 * nothing is held, and this is exactly DESIGN.md 9's "Redis stock = DB stock and the
 * users hash = the users with active orders". For a bucketed voucher the users hashes
 * are compared together, and an entry outside its user's home bucket is drift too.
 *
 * Consistency of the figures: the Redis side is read under WATCH (stock, users, trace)
 * and retried while it changes (redis_stable = 0 after the retries: traffic is flowing
 * and invariant 3 is reported as not judged); the DB side (stock, active orders with
 * their traces, the outcomes of the held traces) is read afterwards in one transaction
 * holding a shared lock on the voucher row, so no order commits in between. Orders
 * committed between the two reads belong to DEDUCTs that ran after the Redis snapshot:
 * their trace is in Redis now but was not in the snapshot, so they are recognised
 * (HMGET) and left out of the comparison (late_orders), never reported as drift.
 * Not thread-safe per connection. */
#pragma once
#include <stdio.h>
#include <stdint.h>
#include "sk/err.h"
#include "sk/conf.h"
#include "sk/db.h"
#include "sk/redis.h"
#include "sk/keys.h"

typedef struct sk_verify_report {
        int64_t voucher_id;
        int64_t init_stock;         /* tb_seckill_voucher.init_stock */
        int64_t db_stock;           /* Σ tb_seckill_stock.stock over the buckets */
        int buckets;                /* tb_seckill_voucher.buckets (DESIGN.md 14) */
        int bucket_rows;            /* rows found in tb_seckill_stock */
        int64_t bucket_init[SK_BUCKETS_MAX], bucket_stock[SK_BUCKETS_MAX];
        int64_t bucket_active[SK_BUCKETS_MAX]; /* active orders whose bucket is b */
        int64_t bucket_init_sum;    /* Σ bucket init_stock (= init_stock, invariant 1) */
        int inv1_buckets_ok;        /* per bucket init - stock = active of b, one row per
                                       bucket 0..N-1, and Σ bucket init = init_stock */
        int64_t redis_stock;        /* GET stock; -1 when the key is missing */
        int64_t redis_bucket_stock[SK_BUCKETS_MAX]; /* each bucket's, -1 missing */
        int redis_stock_missing;    /* 1 when the stock key does not exist */
        int meta_status;            /* Redis meta status, 0 when missing */
        int64_t active_orders;      /* active orders: UNPAID or PAID (status 1, 2) */
        int64_t active_buyers;      /* distinct users with an active order */
        int64_t duplicate_users;    /* users with more than one active order */
        int64_t users_in_hash;      /* HLEN users */
        int64_t users_not_active;   /* in the hash, neither an active buyer nor held by an undecided DEDUCT */
        int64_t active_not_in_hash; /* active buyers missing from the hash */
        int64_t users_wrong_home;   /* users entries in a bucket that is not their home
                                       bucket (DESIGN.md 4, 9 invariant 3) */
        int64_t undecided_traces;   /* DEDUCTs (T, no T:r) without any outcome */
        int64_t pending_rollbacks;  /* DEDUCTs (T, no T:r) with a FAILED outcome */
        int64_t held_qty;           /* units held in Redis by the two kinds above */
        int64_t expected_redis_stock; /* db_stock - held_qty */
        int64_t trace_entries;      /* DEDUCT entries in the trace hash */
        int64_t late_orders;        /* orders committed after the Redis snapshot (their
                                       DEDUCT ran after it): left out of the comparison */
        int64_t ended_orders;       /* CANCELLED + CLOSED orders (DESIGN.md 13) */
        int64_t ended_no_restore;   /* of those, without their RESTORE row (business_type 4/5) */
        int64_t restore_not_ended;  /* RESTORE rows of type 4/5 whose order is not ended */
        int64_t ended_no_release;   /* ended orders whose trace has no release T:x in Redis
                                       yet (reported only: the closer or the reconciler
                                       finishes it; expired keys never get one) */
        int64_t paid_and_ended;     /* orders with a payment that are CANCELLED/CLOSED, or
                                       paid after their deadline (invariant 6) */
        int redis_stable;           /* 1 if the Redis snapshot was taken without changes */
        int inv1_ok;                /* init_stock - stock = active_orders */
        int inv2_ok;                /* duplicate_users = 0 */
        int inv3_ok;                /* Redis stock and users hash agree (see above) */
        int inv3_stock_ok, inv3_users_ok;
        int active_le_init_ok;      /* active_orders <= init_stock */
        int inv4_ok;                /* every ended order has its RESTORE row, exactly one;
                                       its unit back in the DB stock is invariant 1 (active
                                       counts UNPAID + PAID only) */
        int inv6_ok;                /* paid_and_ended = 0 */
        int live_ok;                /* 1, 2, active <= init, 4, 6: what `verify` judges
                                       on a live sale (DESIGN.md 9) */
        int inv3_quiesced_ok;       /* 3 as `verify --quiesced` judges it (DESIGN.md 9.3):
                                       inv3_ok, nothing held or late, and each bucket's
                                       Redis stock = its DB stock */
        int ok;                     /* live_ok and inv3_ok (in-flight purchases
                                       accounted for) */
} sk_verify_report_t;

/** @brief Verify voucher @p voucher_id with fresh connections made from @p conf (DB
 *  and Redis URLs, key prefix). Fills *rep (zeroed first).
 *  @returns SK_OK when the figures were read (rep->ok says whether the invariants hold),
 *  SK_ENOTFOUND when the voucher is not in the DB, SK_EINVAL for a bad id, or the
 *  connection/query error (SK_EAGAIN transient) with the reason in @p errstr. */
sk_err_t sk_verify_voucher(const sk_conf_t *conf, int64_t voucher_id, sk_verify_report_t *rep,
                           char *errstr, size_t errstr_size);

/** @brief Same on caller-owned connections @p db and @p r (borrowed). @p prefix is the
 *  Redis key prefix. @p max_tries (>= 1) bounds the WATCH retries of the Redis read. */
sk_err_t sk_verify_voucher_conn(sk_db_t *db, sk_redis_t *r, const char *prefix,
                                int64_t voucher_id, int max_tries, sk_verify_report_t *rep,
                                char *errstr, size_t errstr_size);

/** @brief Print @p rep to @p out: a human block (one figure per line, then PASS/FAIL of
 *  each invariant) or, when @p json is non-zero, one JSON object on one line (ids as
 *  strings, figures as integers, invariants as booleans). @p quiesced: invariant 3 is
 *  judged as sk_verify_passed(rep, 1) does; 0: it is shown as not judged. */
void sk_verify_print(FILE *out, const sk_verify_report_t *rep, int json, int quiesced);

/** @brief The verdict of `seckill-admin verify` (DESIGN.md 9): invariants 1, 2, active
 *  <= init, 4 and 6 on the live state, and with @p quiesced also invariant 3 in its
 *  quiesced form (rep->inv3_quiesced_ok). @returns 1 when they hold. Pure. */
int sk_verify_passed(const sk_verify_report_t *rep, int quiesced);
