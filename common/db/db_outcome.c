/* db_outcome.c: COMMIT and autocommit-write outcomes, and the resolution reads after an
 * unknown one (sk/db_outcome.h, DESIGN.md 16 "Errors"). Built on sk/db.h only: the
 * COMMIT is sent as a statement so its error number is the connection's. */
#include <string.h>

#include "sk/db_outcome.h"
#include "sk/failpoint.h"

/* Report a lost link the way the client library would (2013), connection dropped. */
static sk_err_t lost(sk_db_t *db, const char *why, char *errstr, size_t errstr_size)
{
        sk_db_drop(db);
        sk_seterr(errstr, errstr_size, "commit: mysql error 2013: Lost connection to server "
                  "during query (%s)", why);
        return SK_EUNKNOWN;
}

sk_err_t sk_db_commit_outcome(sk_db_t *db, char *errstr, size_t errstr_size)
{
        unsigned int no;

        if (!sk_db_connected(db)) {
                /* The link broke before COMMIT was sent: the server rolled back. */
                sk_seterr(errstr, errstr_size, "commit: not connected (rolled back)");
                return SK_EAGAIN;
        }
        if (SK_FAILPOINT("db.before_commit")) {
                sk_db_rollback(db);
                sk_seterr(errstr, errstr_size, "commit: failpoint db.before_commit");
                return SK_EAGAIN;
        }
        if (SK_FAILPOINT("db.commit_lost_before"))
                return lost(db, "failpoint db.commit_lost_before: not sent", errstr, errstr_size);
        if (sk_db_exec(db, "COMMIT", errstr, errstr_size) == SK_OK) {
                if (SK_FAILPOINT("db.commit_lost"))
                        return lost(db, "failpoint db.commit_lost: applied", errstr, errstr_size);
                return SK_OK;
        }
        no = sk_db_errno(db);
        if (no == 1213 || no == 1205)
                return SK_EAGAIN; /* rolled back by the server; sk_db_errno still tells which */
        /* Anything else: the server may have applied it. The session is not trusted
         * any more; the resolution reads use a fresh one. */
        sk_db_drop(db);
        return SK_EUNKNOWN;
}

sk_err_t sk_db_write_class(unsigned int errnum)
{
        switch (errnum) {
        case 0:
                return SK_OK;
        case 1062:      /* ER_DUP_ENTRY */
                return SK_EEXIST;
        case 1213:      /* deadlock / certification failure: rolled back */
        case 1205:      /* lock wait timeout: the statement rolled back */
        case 1047:      /* Galera node not ready: refused before it ran */
        case 1290:      /* read-only: refused */
        case 1040:      /* too many connections: never ran */
        case 1615:      /* needs re-prepare: never ran */
                return SK_EAGAIN;
        default:
                return SK_EUNKNOWN;
        }
}

sk_err_t sk_db_resolve_begin(sk_db_t *db, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = sk_db_reconnect(db, errstr, errstr_size)) != SK_OK)
                return err;
        if (!sk_db_wsrep_on(db))
                return SK_OK;
        return sk_db_exec(db, "SET SESSION wsrep_sync_wait = 1", errstr, errstr_size);
}

void sk_db_resolve_end(sk_db_t *db)
{
        if (sk_db_connected(db) && sk_db_wsrep_on(db))
                (void)sk_db_exec(db, "SET SESSION wsrep_sync_wait = DEFAULT", NULL, 0);
}
