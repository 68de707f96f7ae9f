/* sk/db_sync.h: reads that must see what the whole Galera cluster committed, and the
 * node's own state (DESIGN.md 16 "Answers after an unknown COMMIT" (d), (e)).
 *
 * Galera applies another node's write sets asynchronously: a plain read on one node may
 * not yet see a row certified on another, and a node that is not Synced (a Donor or a
 * desynced node: wsrep_local_state 2; a Joiner: 1, 3) may lag without flow control. The
 * readers that decide from what they read (the degrade follower's switch read, the
 * sold_out confirmation and the clamp's stock read) set `wsrep_sync_wait = 1` on their
 * session, so a read waits until the node has applied every write set the cluster
 * committed before it, and the follower counts a read as fresh only from a Synced node.
 * On a server without wsrep (standalone MariaDB, MySQL) both are no-ops: no statement
 * is sent, the node counts as Synced.
 *
 * Not thread-safe per connection (as sk/db.h); nothing here logs. */
#pragma once
#include <stddef.h>
#include "sk/db.h"
#include "sk/err.h"

#define SK_DB_WSREP_SYNCED 4    /* wsrep_local_state of a Synced node */

/** @brief On a Galera node (sk_db_wsrep_on), `SET SESSION wsrep_sync_wait = 1` on @p db
 *  (borrowed): every later read of the session waits for the cluster's earlier commits
 *  (until a reconnect, which starts a fresh session: call again after one). No-op
 *  without wsrep. @returns SK_OK or the classified error (SK_EAGAIN: connection lost or
 *  node not ready, reconnect and call again). DESIGN.md 16 (d), (e). */
sk_err_t sk_db_sync_reads(sk_db_t *db, char *errstr, size_t errstr_size);

/** @brief End sk_db_sync_reads: `SET SESSION wsrep_sync_wait = DEFAULT` on a Galera node
 *  (errors ignored: a broken link is reconnected with a fresh session anyway). No-op
 *  without wsrep or without a connection. */
void sk_db_sync_reads_end(sk_db_t *db);

/** @brief The node's wsrep_local_state into *@p state (1 Joining, 2 Donor/Desynced, 3
 *  Joined, 4 Synced), read now on @p db (borrowed); SK_DB_WSREP_SYNCED without wsrep.
 *  *@p port (may be NULL) = the node's @@port, to name it in a log line (0 without
 *  wsrep). @returns SK_OK or the classified error. DESIGN.md 16 (e). */
sk_err_t sk_db_node_state(sk_db_t *db, int *state, int *port, char *errstr,
                          size_t errstr_size);
