/* sk/txn_guard.h: the guard of `seckill-admin db migrate` over the provider
 * transaction ids stored before migration 0009_txn_id_bytes made them printable ASCII
 * compared byte for byte (DESIGN.md 15 "Hardening rules"), as a hook of the migration
 * runner (sk/migrate.h). While 0009 is pending and tb_payment holds an id that is not
 * printable ASCII (converting it would change it) or ids that would become one, the
 * run is refused before anything changes, with the list. */
#pragma once
#include <stddef.h>
#include "sk/err.h"
#include "sk/migrate.h"

/** @brief Fill @p hook (owned by the caller, must outlive the run) with the guard for
 *  sk_migrate_hooks(). Its refusal: SK_EINVAL, errstr "refused: N provider txn id(s) ...
 *  migration 0009_txn_id_bytes ..." naming up to 8 of them (bytes outside printable
 *  ASCII written as \xNN). Its queries' errors are the runner's (sk/db.h classes).
 *  No I/O here; the hook runs on the runner's thread. */
void sk_txn_guard_hook(sk_migrate_hook_t *hook);
