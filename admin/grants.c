/* admin/grants.c: `seckill-admin db grants --app USER --admin USER [--host H]`
 * (DESIGN.md 17): prints the GRANT statements of the least-privilege users
 * (sk/grants.h) for the database named by SECKILL_MYSQL_URL. It connects to nothing:
 * the output is piped into the mysql client by whoever may grant. */
#include <stdio.h>
#include <stdlib.h>

#include "admin.h"
#include "sk/grants.h"

#define PROG "seckill-admin"

int sk_admin_db_grants(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512], *sql = NULL;
        sk_err_t err;

        err = sk_grants_sql(conf->mysql.database, o->app[0] ? o->app : NULL,
                            o->admin[0] ? o->admin : NULL, o->host[0] ? o->host : NULL, &sql,
                            errstr, sizeof(errstr));
        if (err != SK_OK) {
                fprintf(stderr, PROG ": db grants: %s (see " PROG " db grants --help)\n", errstr);
                return err == SK_EINVAL ? 2 : 1;
        }
        fputs(sql, stdout);
        free(sql);
        return fflush(stdout) == 0 ? 0 : 1;
}
