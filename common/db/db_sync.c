/* db_sync.c: causal reads on Galera (`wsrep_sync_wait = 1`) and the node's
 * wsrep_local_state (sk/db_sync.h; DESIGN.md 16 (d), (e)). Two statements on the
 * caller's connection, sent only when the node said @@wsrep_on = 1 at connect; it
 * neither reconnects nor chooses a node (the caller does: sk_db_prefer_next_node). */
#include "sk/db_sync.h"

sk_err_t sk_db_sync_reads(sk_db_t *db, char *errstr, size_t errstr_size)
{
        if (!sk_db_wsrep_on(db))
                return SK_OK;
        return sk_db_exec(db, "SET SESSION wsrep_sync_wait = 1", errstr, errstr_size);
}

void sk_db_sync_reads_end(sk_db_t *db)
{
        if (sk_db_connected(db) && sk_db_wsrep_on(db))
                (void)sk_db_exec(db, "SET SESSION wsrep_sync_wait = DEFAULT", NULL, 0);
}

sk_err_t sk_db_node_state(sk_db_t *db, int *state, int *port, char *errstr,
                          size_t errstr_size)
{
        int64_t v[2] = { 0, 0 };
        unsigned nulls = 0;
        sk_err_t err;

        *state = SK_DB_WSREP_SYNCED;
        if (port)
                *port = 0;
        if (!sk_db_wsrep_on(db))
                return SK_OK;
        err = sk_db_row1(db, "SELECT CAST(VARIABLE_VALUE AS SIGNED), @@port FROM "
                         "information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = "
                         "'WSREP_LOCAL_STATE'", SK_NOARGS, v, 2, &nulls, errstr, errstr_size);
        if (err == SK_ENOTFOUND || (err == SK_OK && (nulls & 1u))) {
                *state = 0;     /* wsrep on but no provider state: not Synced */
                return SK_OK;
        }
        if (err != SK_OK)
                return err;
        *state = (int)v[0];
        if (port)
                *port = (int)v[1];
        return SK_OK;
}
