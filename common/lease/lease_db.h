/* lease_db.h (private to common/lease): the tb_worker_lease protocol of DESIGN.md 2 —
 * take, renew and release a worker id by conditional UPDATEs judged by the database's
 * NOW(3). The generator, its renewal thread and the stamp clock are lease.c's; this
 * is only the SQL (lease_db.c). Not thread-safe: one caller per sk_lease_db_t (its
 * connection), as for sk_db_t. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/db.h"
#include "sk/err.h"

typedef struct sk_lease_db {
        sk_db_t *db;          /* owned by the caller */
        char holder[128];     /* host:pid:start_ms, plain characters only (bound) */
        int lease_ms;         /* lease period (ms) */
        int fixed_id;         /* the id to take; -1 = the lowest usable one */
        char role[16];        /* front | consumer | admin | reconciler (bound) */
        int64_t front_grace_ms; /* D of DESIGN.md 12 (2 x delivery timeout + 1 s): a row whose
                                 * role is front is free only once lease_until + D < NOW(3) */
} sk_lease_db_t;

/* The result of a take or renewal. */
typedef struct sk_lease_read {
        int64_t from_ms, until_ms;   /* mint window of stamp values (inclusive) */
        int64_t db_now_ms, mono_ms;  /* NOW(3) read back, local monotonic ms at the reply */
} sk_lease_read_t;

/** @brief Write a holder "host:pid:start_ms" into @p out: host reduced to
 *  [A-Za-z0-9._-] (others become '_'), start_ms the wall clock made unique per process
 *  (two generators of one process never share a holder). Thread-safe. */
void sk_lease_db_make_holder(char *out, size_t size);
/** @brief Take ld->fixed_id, or (when -1) the lowest free id (free: lease_until < NOW(3),
 *  or, when the row's role is front, lease_until + ld->front_grace_ms < NOW(3), so no
 *  front whose purchases may still be in flight leaves the table, DESIGN.md 2, 12) whose mint_until is past,
 *  else the lowest free one whose mint_until is at most one lease ahead (further ahead:
 *  skipped, a clock step). A take is one compare-and-set UPDATE on the id's old
 *  mint_until M: holder = ours, lease_until = NOW(3) + lease, mint_until =
 *  GREATEST(mint_until, NOW(3) + 2/3 lease); the window is (M, new mint_until].
 *  @returns SK_OK with *id and *r, or SK_OK with *id = -1 (reason in errstr) when
 *  there is nothing to take (the fixed id is held by another process, or no id is
 *  usable); SK_EAGAIN / SK_EDB: the classified DB error (SK_EDB also when the table or
 *  the id's row is missing: run `db migrate`). */
sk_err_t sk_lease_db_take(sk_lease_db_t *ld, sk_lease_read_t *r, int *id, char *errstr,
                          size_t errstr_size);
/** @brief Renew @p id: the same SET as a take (role included), only WHERE holder is still ours; then
 *  read back. @returns SK_OK with *ours (0: another holder, the lease is lost; 1:
 *  r->until_ms is the new window end), or the classified DB error (nothing known). */
sk_err_t sk_lease_db_renew(sk_lease_db_t *ld, int id, sk_lease_read_t *r, int *ours, char *errstr,
                           size_t errstr_size);
/** @brief Free @p id if it is still ours (lease_until just past; holder, role and
 *  mint_until stay). @p quiet: the holder will send nothing more anywhere (a front whose
 *  purchases are all settled): lease_until is set ld->front_grace_ms further back, so the
 *  id is free at once and the drain of DESIGN.md 12 does not wait for this holder.
 *  Errors ignored: the lease then ends by itself at lease_until. */
void sk_lease_db_release(sk_lease_db_t *ld, int id, int quiet);
