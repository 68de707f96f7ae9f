/* sk/traceset.h: one voucher's Redis trace hash (DESIGN.md 4) read into memory and
 * joined by traceId with the database (DESIGN.md 6-7): the outcome row, the order row
 * and the DEDUCT reconcile-log row of each trace. Used by seckill-reconciler (the join
 * of DESIGN.md 8) and by sk_verify_voucher (invariant 3 of DESIGN.md 9).
 *
 * What it does not do: decide anything, write anything, or log. The scan is HSCAN
 * until the cursor is 0; HSCAN may return a field more than once (duplicates are
 * merged) and may miss fields added during the scan (the caller re-checks what it acts
 * on). Not thread-safe: one set per thread; connections are borrowed. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"
#include "sk/db.h"
#include "sk/redis.h"
#include "sk/msg.h"
#include "sk/outcome.h"

typedef struct sk_trace_entry {
        int64_t trace_id;
        char *deduct;          /* field T: the DEDUCT entry JSON (owned), NULL if absent */
        char *restore;         /* field T:r: the RESTORE entry JSON (owned), or NULL */
        char *claim;           /* field T:c: the claim record JSON (owned), or NULL */
        char *home_st;         /* field T:h (home bucket only): "probing" or the bucket j
                                * that admitted T (owned), or NULL (DESIGN.md 4) */
        char *release;         /* field T:x: the release record JSON (owned), or NULL */
        sk_order_msg_t msg;    /* deduct parsed (sk_msg_parse) when msg_ok */
        int msg_ok;            /* 1 if deduct parsed as a valid order message */

        /* Database facts, filled by sk_traceset_load_db() for entries with a deduct. */
        int db_loaded;         /* 1 once looked up */
        int outcome;           /* 0 none, SK_OUTCOME_CREATED, SK_OUTCOME_FAILED */
        sk_outcome_t oc;       /* the outcome row when outcome != 0 */
        int64_t order_id;      /* tb_voucher_order.id with this trace_id, 0 = no row */
        int64_t order_user_id, order_voucher_id;
        int order_status;      /* 1 active */
        int log_status;        /* DEDUCT reconcile-log row (log_type -1) status, 0 = none */
        int skip;              /* set by a caller: already handled, not judged again */
} sk_trace_entry_t;

typedef struct sk_traceset {
        sk_trace_entry_t *v;   /* entries, in scan order */
        size_t n, cap;
        size_t *slots;         /* open-addressing index into v (+1; 0 = empty) */
        size_t nslots;
} sk_traceset_t;

/** @brief Zero @p set (no allocation). */
void sk_traceset_init(sk_traceset_t *set);
/** @brief Free everything @p set owns and zero it. NULL is a no-op. */
void sk_traceset_free(sk_traceset_t *set);
/** @brief Find or add the entry of @p trace_id.
 *  @returns the entry (owned by @p set; invalid after the next add), or NULL on ENOMEM. */
sk_trace_entry_t *sk_traceset_get(sk_traceset_t *set, int64_t trace_id, int create);

/** @brief HSCAN the trace hash @p trace_key (COUNT @p count_hint per call) until the
 *  cursor is 0, adding every field "T", "T:r", "T:c" (field names that are not a
 *  canonical id with an optional ":r"/":c"/":c:*" suffix are ignored). DEDUCT entries
 *  are parsed with sk_msg_parse (msg_ok). A missing key is an empty set.
 *  @returns SK_OK, SK_ENOMEM, or the sk_redis_cmd error (SK_EUNKNOWN/SK_EAGAIN are
 *  transient: rescan). */
sk_err_t sk_traceset_scan(sk_redis_t *r, const char *trace_key, int count_hint,
                          sk_traceset_t *set, char *errstr, size_t errstr_size);

/** @brief Look up, by batches of prepared IN (?, ...) statements (BIGINT bound as
 *  MYSQL_TYPE_LONGLONG), the outcome row, the order row (by trace_id) and the DEDUCT
 *  reconcile-log status of every entry with a deduct whose db_loaded is 0 (or of every
 *  entry with a deduct when @p reload is 1). Rows read in separate batches come from
 *  separate statements (READ COMMITTED): an outcome can only appear, never vanish.
 *  @returns SK_OK, or the classified DB error (SK_EAGAIN transient). */
sk_err_t sk_traceset_load_db(sk_db_t *db, sk_traceset_t *set, int reload,
                             char *errstr, size_t errstr_size);

/** @brief Same lookup for the @p n entries pointed to by @p ids (trace ids present in
 *  @p set; others are skipped). Always reloads them. */
sk_err_t sk_traceset_load_db_ids(sk_db_t *db, sk_traceset_t *set, const int64_t *ids,
                                 size_t n, char *errstr, size_t errstr_size);

/** @brief The claim record of @p e (T:c, DESIGN.md 4 / lua/claim.lua):
 *  {"redrives":N,"failed":N,"consumed":0|1,"partition":"P","offset":"O"}.
 *  Missing record or fields give 0 and partition = offset = -1 ("" in the record). */
typedef struct sk_claim_rec {
        int64_t redrives, failed;
        int consumed;
        int32_t partition;     /* -1 = no re-drive sent */
        int64_t offset;        /* -1 = no re-drive sent */
} sk_claim_rec_t;
void sk_claim_parse(const char *json, sk_claim_rec_t *out);

/** @brief Run @p sql_head followed by "(?, ...)" for the @p n ids (batches of prepared
 *  statements, each id a BIGINT bound as MYSQL_TYPE_LONGLONG; a short last batch
 *  repeats its last id), e.g. "UPDATE t SET c = 4 WHERE trace_id IN ". Each batch is
 *  its own autocommitted statement. *affected (may be NULL) receives the total of
 *  affected rows. @returns SK_OK or the classified DB error of the failing batch. */
sk_err_t sk_traceset_exec_in(sk_db_t *db, const char *sql_head, const int64_t *ids, size_t n,
                             int64_t *affected, char *errstr, size_t errstr_size);
