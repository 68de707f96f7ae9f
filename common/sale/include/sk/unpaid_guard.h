/* sk/unpaid_guard.h: the guard of `seckill-admin db migrate` over orders left UNPAID by
 * binaries that predate the payment callback (DESIGN.md "Upgrading from earlier
 * contracts"), as a hook of the migration runner (sk/migrate.h). While migration
 * 0008_payments is pending and an order is UNPAID (status 1 with a pay_deadline: an
 * order from before 0003 has none, and 0003 makes it PAID), the run is refused before
 * anything changes, unless allow_unpaid; then, once 0008's statements ran and before it
 * is recorded, those orders keep amount 0 (the column's default) and get the currency of
 * the options, so a re-run after a crash in between sets it again. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"
#include "sk/migrate.h"

/** The guard's options and what it found; owned by the caller, must outlive the run. */
typedef struct sk_unpaid_guard {
        int allow_unpaid;       /* --allow-unpaid: migrate despite UNPAID orders */
        const char *currency;   /* SECKILL_CURRENCY, 3 letters A-Z, borrowed; NULL = "CNY" */
        int64_t unpaid;         /* out: the UNPAID orders found while 0008_payments was
                                 * pending (0 when it was recorded); valid once the run
                                 * returned SK_OK */
} sk_unpaid_guard_t;

/** @brief Fill @p hook with the guard over @p g (borrowed, written during the run) for
 *  sk_migrate_hooks(). Its refusal: SK_EINVAL, errstr "refused: N order(s) UNPAID and
 *  migration 0008_payments ... pending ... --allow-unpaid ...". Its queries' errors are
 *  the runner's (sk/db.h classes).
 *  @returns SK_OK; SK_EINVAL for an invalid currency with allow_unpaid (nothing done).
 *  No I/O; the hook runs on the runner's thread. */
sk_err_t sk_unpaid_guard_hook(sk_unpaid_guard_t *g, sk_migrate_hook_t *hook, char *errstr,
                              size_t errstr_size);
