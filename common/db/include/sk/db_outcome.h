/* sk/db_outcome.h: a COMMIT or an autocommit write whose outcome is not known, and how a
 * writer finds out (DESIGN.md 16 "Errors", in the classes of DESIGN.md 8).
 *
 *   1213 (deadlock, Galera certification failure) and 1205 (lock wait) at COMMIT or in
 *        an autocommit write: the server rolled it back: transient, retry the whole
 *        transaction (SK_EAGAIN);
 *   any other error, or a lost connection, at COMMIT or during an autocommit write:
 *        the outcome is unknown (SK_EUNKNOWN). The writer then calls
 *        sk_db_resolve_begin (a fresh connection to the writer node; on Galera
 *        `SET SESSION wsrep_sync_wait = 1`, so its reads see every write set the
 *        cluster committed before them), reads what its transaction wrote by its unique
 *        keys, calls sk_db_resolve_end, and continues from what it found; nothing found:
 *        it runs the same transaction again with the same keys. It never answers a
 *        buyer from a guess.
 *
 * Failpoints (DESIGN.md 11), evaluated by sk_db_commit_outcome only, so a test can drive
 * both branches on a standalone server:
 *   db.before_commit        `error`: rolled back, SK_EAGAIN; `sleep(MS)` holds the COMMIT;
 *   db.commit_lost          `error`: the COMMIT is applied, then the connection is closed
 *                           and 2013 (lost connection) reported: SK_EUNKNOWN;
 *   db.commit_lost_before   `error`: the connection is closed instead of sending COMMIT
 *                           (the server rolls back), 2013 reported: SK_EUNKNOWN.
 * Nothing here logs or retries. Not thread-safe per connection (as sk/db.h). */
#pragma once
#include <stddef.h>
#include "sk/db.h"
#include "sk/err.h"

/** @brief COMMIT the open transaction of @p db with the classes above (DESIGN.md 16).
 *  @returns SK_OK (committed); SK_EAGAIN (1213/1205, or no connection when COMMIT was
 *  due: rolled back by the server, retry from BEGIN; sk_db_errno tells 1213 from 1205
 *  until the caller's sk_db_rollback); SK_EUNKNOWN (any other error or a lost link: the
 *  connection is dropped, sk_db_connected is 0; resolve with sk_db_resolve_begin). The
 *  reason in errstr ("commit: mysql error N: text"). Not thread-safe per @p db. */
sk_err_t sk_db_commit_outcome(sk_db_t *db, char *errstr, size_t errstr_size);

/** @brief The class of MySQL error @p errnum met by an autocommit write (DESIGN.md 16):
 *  SK_OK for 0; SK_EEXIST for 1062 (a duplicate key: not applied); SK_EAGAIN for the
 *  errors that refuse a statement before it applies (1213, 1205, 1047 node not ready,
 *  1290 read-only, 1040 too many connections, 1615 re-prepare); SK_EUNKNOWN for every
 *  other error (a lost link, a killed query, anything the server may have applied).
 *  Pure, thread-safe. */
sk_err_t sk_db_write_class(unsigned int errnum);

/** @brief Start the resolution reads after an SK_EUNKNOWN: close whatever is left of the
 *  connection, reconnect (to the writer node, sk/db.h) and, when the node says
 *  @@wsrep_on = 1, `SET SESSION wsrep_sync_wait = 1` (reads wait until the node has
 *  applied every write set committed before them). @returns SK_OK, or the connect or
 *  statement error (SK_EAGAIN transient: try again later; the outcome stays unknown).
 *  Not thread-safe per @p db. */
sk_err_t sk_db_resolve_begin(sk_db_t *db, char *errstr, size_t errstr_size);

/** @brief End the resolution reads: `SET SESSION wsrep_sync_wait = DEFAULT` when it was
 *  set (errors ignored: a broken link is reconnected with a fresh session anyway). */
void sk_db_resolve_end(sk_db_t *db);
