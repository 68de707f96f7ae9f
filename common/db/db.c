/* db.c: one MySQL/MariaDB connection (sk/db.h). Written to the client API both MariaDB
 * Connector/C 3.3 and Oracle libmysqlclient provide: mysql_options with the connect,
 * read and write timeouts, the utf8mb4 character set and MYSQL_OPT_RECONNECT off (a
 * silent reconnect inside a transaction would lose it: the caller reconnects and
 * retries the whole transaction, DESIGN.md 8). No MariaDB-only calls (no array
 * binding, no mariadb_* options).
 *
 * What it does not do: retry (only the caller knows whether a retry is safe), log or
 * exit (common/ returns a code and a reason, STYLE.md 4). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/db.h"
#include "sk/db_writer.h"

struct sk_db {
        MYSQL *conn;             /* NULL after a failed reconnect */
        sk_mysql_url_t url;
        int lock_wait_timeout_s;
        int io_timeout_s;        /* read/write timeout of the connection (s) */
        int no_database;         /* as given to sk_db_connect (kept for reconnect) */
        uint64_t generation;     /* bumped by every successful (re)connect */
        int node;                /* index in url.hosts of the node connected to */
        int wsrep_on;            /* the node's @@wsrep_on (Galera), from the writer check at connect */
        int step_after;          /* >= 0: the next (re)connect tries the nodes after this one
                                  * first (sk_db_prefer_next_node); -1: the writer choice */
        unsigned int stmt_errno; /* the error of this connection's last failed prepared
                                  * statement, 0 since the next one began: closing a
                                  * statement clears the connection's own error number */
};

#define SK_DB_CONNECT_TIMEOUT_S 5u
#define SK_DB_IO_TIMEOUT_S      30u

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init_once(void)
{
        /* mysql_library_init is not thread-safe; once per process is enough. */
        (void)mysql_library_init(0, NULL, NULL);
}

void sk_db_library_init(void)
{
        pthread_once(&lib_once, lib_init_once);
}

sk_err_t sk_db_classify(unsigned int errnum)
{
        switch (errnum) {
        case 0:
                return SK_OK;
        case 1062:                 /* ER_DUP_ENTRY */
                return SK_EEXIST;
        case 1205:                 /* ER_LOCK_WAIT_TIMEOUT */
        case 1213:                 /* ER_LOCK_DEADLOCK */
        case 2006:                 /* CR_SERVER_GONE_ERROR */
        case 2013:                 /* CR_SERVER_LOST */
        case 2002:                 /* CR_CONNECTION_ERROR (socket refused) */
        case 2003:                 /* CR_CONN_HOST_ERROR (TCP refused) */
        case 1927:                 /* ER_CONNECTION_KILLED (MariaDB) */
        case 1053:                 /* ER_SERVER_SHUTDOWN */
        case 4031:                 /* ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8) */
        case 1040:                 /* ER_CON_COUNT_ERROR: too many connections */
        case 1158:                 /* ER_NET_READ_ERROR */
        case 1159:                 /* ER_NET_READ_INTERRUPTED */
        case 1160:                 /* ER_NET_ERROR_ON_WRITE */
        case 1161:                 /* ER_NET_WRITE_INTERRUPTED */
        case 2055:                 /* CR_SERVER_LOST_EXTENDED */
        case 3058:                 /* ER_USER_LOCK_DEADLOCK (MySQL 5.7+) */
        case 1047:                 /* ER_UNKNOWN_COM_ERROR: on Galera "WSREP has not yet
                                    * prepared node for application use" (a node out of
                                    * the primary component): reconnect, next node (DESIGN.md 16) */
        case 1290:                 /* ER_OPTION_PREVENTS_STATEMENT: the server went
                                    * --read-only under us: reconnect to the writer */
        case 1615:                 /* ER_NEED_REPREPARE: a table definition changed or left the
                                    * server's table cache; the next execute re-prepares */
                return SK_EAGAIN;
        default:
                return SK_EDB;
        }
}

sk_err_t sk_db_last_err(sk_db_t *db)
{
        if (!db || !db->conn)
                return SK_EAGAIN;
        return sk_db_classify(mysql_errno(db->conn));
}

/* Set the connection's error into errstr and return its class. */
static sk_err_t conn_err(MYSQL *conn, const char *what, char *errstr, size_t errstr_size)
{
        unsigned int errnum = mysql_errno(conn);
        sk_err_t err = sk_db_classify(errnum);

        sk_seterr(errstr, errstr_size, "%s: mysql error %u: %s", what, errnum,
                  mysql_error(conn));
        /* An error path without an error number (should not happen) is still an error. */
        return err == SK_OK ? SK_EDB : err;
}

/* Run a statement on a raw connection, discarding any result set. */
static sk_err_t raw_exec(MYSQL *conn, const char *sql, char *errstr, size_t errstr_size)
{
        MYSQL_RES *res;

        if (mysql_real_query(conn, sql, (unsigned long)strlen(sql)) != 0)
                return conn_err(conn, "query", errstr, errstr_size);
        if (mysql_field_count(conn) > 0) {
                if (!(res = mysql_store_result(conn)))
                        return conn_err(conn, "store_result", errstr, errstr_size);
                mysql_free_result(res);
        }
        return SK_OK;
}

/* Run @p sql with its one BIGINT parameter @p v bound, on a raw connection. */
static sk_err_t raw_exec_i64(MYSQL *conn, const char *sql, int64_t v, char *errstr,
                             size_t errstr_size)
{
        MYSQL_STMT *st = mysql_stmt_init(conn);
        MYSQL_BIND b;
        unsigned int errnum;
        sk_err_t err = SK_OK;

        if (!st) {
                sk_seterr(errstr, errstr_size, "stmt_init: out of memory");
                return SK_ENOMEM;
        }
        memset(&b, 0, sizeof(b));
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = &v;
        if (mysql_stmt_prepare(st, sql, (unsigned long)strlen(sql)) ||
            mysql_stmt_bind_param(st, &b) || mysql_stmt_execute(st)) {
                errnum = mysql_stmt_errno(st);
                err = sk_db_classify(errnum);
                sk_seterr(errstr, errstr_size, "query: mysql error %u: %s", errnum,
                          mysql_stmt_error(st));
                if (err == SK_OK)
                        err = SK_EDB;
        }
        mysql_stmt_close(st);
        return err;
}

/* The session settings of sk/db.h on a fresh connection @p conn. */
static sk_err_t session_setup(const sk_db_t *db, MYSQL *conn, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = raw_exec(conn, "SET SESSION time_zone = '+00:00'", errstr,
                            errstr_size)) != SK_OK)
                return err;
        if ((err = raw_exec(conn,
                            "SET SESSION sql_mode = CONCAT_WS(',', "
                            "NULLIF(@@SESSION.sql_mode, ''), 'STRICT_TRANS_TABLES')",
                            errstr, errstr_size)) != SK_OK)
                return err;
        if (db->lock_wait_timeout_s > 0) {
                if ((err = raw_exec_i64(conn, "SET SESSION innodb_lock_wait_timeout = ?",
                                        db->lock_wait_timeout_s, errstr, errstr_size)) != SK_OK)
                        return err;
        }
        return raw_exec(conn, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
                        errstr, errstr_size);
}

/* TLS to the server from the URL's ssl-* options (DESIGN.md 15 "Transport"): the CA,
 * an optional client certificate, and TLS enforced; VERIFY_IDENTITY also checks the
 * chain against the CA and the host name (or IP) the URL names against the
 * certificate. MariaDB Connector/C (Debian's libmariadb) takes MYSQL_OPT_SSL_ENFORCE and
 * MYSQL_OPT_SSL_VERIFY_SERVER_CERT; Oracle's client takes MYSQL_OPT_SSL_MODE.
 * @returns 0, or -1 with the reason in @p why (an option the library refused). */
static int set_tls(MYSQL *conn, const sk_mysql_url_t *url, char *why, size_t why_size)
{
        int bad = 0;

        if (url->ssl_mode == SK_MYSQL_SSL_OFF)
                return 0;
        if (url->ssl_ca[0])
                bad |= mysql_options(conn, MYSQL_OPT_SSL_CA, url->ssl_ca) != 0;
        if (url->ssl_cert[0]) {
                bad |= mysql_options(conn, MYSQL_OPT_SSL_CERT, url->ssl_cert) != 0;
                bad |= mysql_options(conn, MYSQL_OPT_SSL_KEY, url->ssl_key) != 0;
        }
#if defined(MARIADB_PACKAGE_VERSION)
        {
                sk_my_bool on = 1, verify = url->ssl_mode == SK_MYSQL_SSL_VERIFY_IDENTITY;

                bad |= mysql_options(conn, MYSQL_OPT_SSL_ENFORCE, &on) != 0;
                bad |= mysql_options(conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify) != 0;
        }
#else
        {
                unsigned int mode = url->ssl_mode == SK_MYSQL_SSL_VERIFY_IDENTITY ? SSL_MODE_VERIFY_IDENTITY
                                                                                 : SSL_MODE_REQUIRED;

                bad |= mysql_options(conn, MYSQL_OPT_SSL_MODE, &mode) != 0;
        }
#endif
        if (bad) {
                sk_seterr(why, why_size, "the client library refused a TLS option of the URL");
                return -1;
        }
        return 0;
}

/* sk__db_connect_fn: connects @p arg (an sk_db_t) to node @p i of @p url with the
 * options of sk/db.h (timeouts, utf8mb4, no automatic reconnect). */
static MYSQL *connect_node(void *arg, const sk_mysql_url_t *url, int i, sk_err_t *err, char *why,
                           size_t why_size)
{
        const sk_db_t *db = arg;
        MYSQL *conn;
        unsigned int io_timeout_s = (unsigned int)db->io_timeout_s;
        /* A connection whose statements give up sooner gives up a silent node (one that
         * accepts the TCP connection but never greets: a frozen mariadbd) as soon. */
        unsigned int connect_timeout_s = io_timeout_s < SK_DB_CONNECT_TIMEOUT_S ?
                                         io_timeout_s : SK_DB_CONNECT_TIMEOUT_S;
        sk_my_bool reconnect = 0;

        sk_db_library_init();
        if (!(conn = mysql_init(NULL))) {
                sk_seterr(why, why_size, "mysql_init: out of memory");
                *err = SK_ENOMEM;
                return NULL;
        }
        mysql_options(conn, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout_s);
        mysql_options(conn, MYSQL_OPT_READ_TIMEOUT, &io_timeout_s);
        mysql_options(conn, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout_s);
        mysql_options(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
        /* Automatic reconnect is off by default in both libraries; we still say so where
         * the option is not deprecated (Oracle's client >= 8.0.34 prints a warning for
         * every use of it). */
#if defined(MARIADB_PACKAGE_VERSION) || !defined(MYSQL_VERSION_ID) || MYSQL_VERSION_ID < 80034
        mysql_options(conn, MYSQL_OPT_RECONNECT, &reconnect);
#else
        (void)reconnect;
#endif
        if (set_tls(conn, url, why, why_size) != 0) {
                *err = SK_EINVAL;
                mysql_close(conn);
                return NULL;
        }
        if (!mysql_real_connect(conn, url->hosts[i].host, url->user,
                                url->password[0] ? url->password : NULL,
                                db->no_database ? NULL : url->database,
                                (unsigned int)url->hosts[i].port, NULL, 0)) {
                *err = conn_err(conn, "connect", why, why_size);
                mysql_close(conn);
                return NULL;
        }
        return conn;
}

/* Open a connection to the URL's writer node (db_writer.c, DESIGN.md 16) with the
 * options and session settings of sk/db.h. */
static sk_err_t open_conn(sk_db_t *db, char *errstr, size_t errstr_size)
{
        MYSQL *conn;
        sk_err_t err;
        int node = 0, wsrep_on = 0;

        if (db->step_after >= 0) {
                conn = sk__db_writer_open_after(&db->url, connect_node, db, db->step_after, &node,
                                                &wsrep_on, &err, errstr, errstr_size);
                db->step_after = -1;   /* one reconnect only, succeeded or not */
        } else {
                conn = sk__db_writer_open(&db->url, connect_node, db, 0, &node, &wsrep_on, &err,
                                          errstr, errstr_size);
        }
        if (!conn)
                return err;
        if ((err = session_setup(db, conn, errstr, errstr_size)) != SK_OK) {
                mysql_close(conn);
                return err;
        }
        db->conn = conn;
        db->node = node;
        db->wsrep_on = wsrep_on;
        db->generation++;
        return SK_OK;
}

/* Before a new transaction: follow the process's writer choice (DESIGN.md 16). Another
 * node found writable first in the list → reconnect; a connection to a node after the
 * first one re-checks the nodes before it about once a second and moves to the first
 * that is writable again (a new generation). A failed re-check keeps the connection. */
static sk_err_t follow_writer(sk_db_t *db, char *errstr, size_t errstr_size)
{
        char why[256];
        sk_err_t err;
        MYSQL *conn;
        int node = 0, wsrep_on = 0;

        switch (sk__db_writer_advice(&db->url, db->node)) {
        case SK__DB_STAY:
                return SK_OK;
        case SK__DB_MOVE:
                return sk_db_reconnect(db, errstr, errstr_size);
        case SK__DB_PROBE:
                break;
        }
        conn = sk__db_writer_open(&db->url, connect_node, db, db->node, &node, &wsrep_on, &err,
                                  why, sizeof(why));
        if (!conn)
                return SK_OK;
        if (session_setup(db, conn, why, sizeof(why)) != SK_OK) {
                mysql_close(conn);
                return SK_OK;
        }
        mysql_close(db->conn);
        db->conn = conn;
        db->node = node;
        db->wsrep_on = wsrep_on;
        db->generation++;
        return SK_OK;
}

sk_db_t *sk_db_connect_io(const sk_mysql_url_t *url, int no_database, int lock_wait_timeout_s,
                          int io_timeout_s, char *errstr, size_t errstr_size)
{
        sk_db_t *db;

        if (!url || lock_wait_timeout_s < 0 || io_timeout_s < 1) {
                sk_seterr(errstr, errstr_size, "sk_db_connect: invalid argument");
                return NULL;
        }
        if (!(db = calloc(1, sizeof(*db)))) {
                sk_seterr(errstr, errstr_size, "sk_db_connect: out of memory");
                return NULL;
        }
        db->url = *url;
        /* A one-host URL (or a hand-made one without the list): host/port are the node. */
        if (db->url.nhosts <= 1) {
                db->url.nhosts = 1;
                memcpy(db->url.hosts[0].host, db->url.host, sizeof(db->url.host));
                db->url.hosts[0].port = db->url.port;
        }
        db->no_database = no_database ? 1 : 0;
        db->step_after = -1;
        db->lock_wait_timeout_s = lock_wait_timeout_s;
        db->io_timeout_s = io_timeout_s;
        if (open_conn(db, errstr, errstr_size) != SK_OK) {
                free(db);
                return NULL;
        }
        return db;
}

sk_db_t *sk_db_connect(const sk_mysql_url_t *url, int no_database, int lock_wait_timeout_s,
                       char *errstr, size_t errstr_size)
{
        return sk_db_connect_io(url, no_database, lock_wait_timeout_s, (int)SK_DB_IO_TIMEOUT_S,
                                errstr, errstr_size);
}

sk_err_t sk_db_reconnect(sk_db_t *db, char *errstr, size_t errstr_size)
{
        if (!db) {
                sk_seterr(errstr, errstr_size, "sk_db_reconnect: NULL handle");
                return SK_EINVAL;
        }
        if (db->conn) {
                mysql_close(db->conn);
                db->conn = NULL;
        }
        return open_conn(db, errstr, errstr_size);
}

void sk_db_prefer_next_node(sk_db_t *db)
{
        if (db)
                db->step_after = db->node;
}

void sk_db_close(sk_db_t *db)
{
        if (!db)
                return;
        if (db->conn)
                mysql_close(db->conn);
        /* Do not leave the password in freed memory. */
        memset(&db->url, 0, sizeof(db->url));
        free(db);
}

static sk_err_t check_conn(sk_db_t *db, char *errstr, size_t errstr_size)
{
        if (!db || !db->conn) {
                sk_seterr(errstr, errstr_size, "not connected (reconnect first)");
                return SK_EAGAIN;
        }
        return SK_OK;
}

sk_err_t sk_db_exec(sk_db_t *db, const char *sql, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        return raw_exec(db->conn, sql, errstr, errstr_size);
}

/* Whole-string signed base-10 64-bit integer. */
static int parse_i64(const char *s, unsigned long len, int64_t *out)
{
        int neg = 0;
        uint64_t v = 0, lim;
        unsigned long i = 0;

        if (len == 0)
                return -1;
        if (s[0] == '-' || s[0] == '+') {
                neg = s[0] == '-';
                i = 1;
                if (len == 1)
                        return -1;
        }
        lim = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
        for (; i < len; i++) {
                unsigned d;
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                d = (unsigned)(s[i] - '0');
                if (v > (lim - d) / 10u)
                        return -1;
                v = v * 10u + d;
        }
        if (neg)
                *out = v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
        else
                *out = (int64_t)v;
        return 0;
}

sk_err_t sk_db_query_row_i64(sk_db_t *db, const char *sql, int64_t *out, int ncols,
                             unsigned *null_mask, char *errstr, size_t errstr_size)
{
        MYSQL_RES *res = NULL;
        MYSQL_ROW row;
        unsigned long *lens;
        unsigned mask = 0;
        sk_err_t err;
        int i;

        if (!out || ncols < 1 || ncols > 32) {
                sk_seterr(errstr, errstr_size, "sk_db_query_row_i64: invalid argument");
                return SK_EINVAL;
        }
        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_real_query(db->conn, sql, (unsigned long)strlen(sql)) != 0)
                return conn_err(db->conn, "query", errstr, errstr_size);
        if (!(res = mysql_store_result(db->conn))) {
                if (mysql_errno(db->conn))
                        return conn_err(db->conn, "store_result", errstr, errstr_size);
                sk_seterr(errstr, errstr_size, "query returned no result set");
                return SK_EDB;
        }
        if (!(row = mysql_fetch_row(res))) {
                if (mysql_errno(db->conn)) {
                        err = conn_err(db->conn, "fetch_row", errstr, errstr_size);
                        goto done;
                }
                sk_seterr(errstr, errstr_size, "no row");
                err = SK_ENOTFOUND;
                goto done;
        }
        if (mysql_num_fields(res) < (unsigned)ncols) {
                sk_seterr(errstr, errstr_size, "query returned %u column(s), %d expected",
                          mysql_num_fields(res), ncols);
                err = SK_EDB;
                goto done;
        }
        lens = mysql_fetch_lengths(res);
        for (i = 0; i < ncols; i++) {
                if (!row[i]) {
                        out[i] = 0;
                        mask |= 1u << i;
                        continue;
                }
                if (parse_i64(row[i], lens ? lens[i] : (unsigned long)strlen(row[i]),
                              &out[i]) != 0) {
                        sk_seterr(errstr, errstr_size,
                                  "column %d is not a 64-bit integer", i + 1);
                        err = SK_EDB;
                        goto done;
                }
        }
        if (null_mask)
                *null_mask = mask;
        err = SK_OK;
done:
        mysql_free_result(res);
        return err;
}

sk_err_t sk_db_query_i64(sk_db_t *db, const char *sql, int64_t *out, int *is_null,
                         char *errstr, size_t errstr_size)
{
        unsigned mask = 0;
        sk_err_t err = sk_db_query_row_i64(db, sql, out, 1, &mask, errstr, errstr_size);

        if (err == SK_OK && is_null)
                *is_null = (int)(mask & 1u);
        return err;
}

sk_err_t sk_db_begin(sk_db_t *db, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = follow_writer(db, errstr, errstr_size)) != SK_OK)
                return err;
        return sk_db_exec(db, "START TRANSACTION", errstr, errstr_size);
}

sk_err_t sk_db_begin_snapshot(sk_db_t *db, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        /* SET TRANSACTION (no SESSION) applies to the next transaction only. */
        if ((err = sk_db_exec(db, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", errstr,
                              errstr_size)) != SK_OK)
                return err;
        return sk_db_exec(db, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", errstr,
                          errstr_size);
}

sk_err_t sk_db_commit(sk_db_t *db, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_commit(db->conn) != 0)
                return conn_err(db->conn, "commit", errstr, errstr_size);
        return SK_OK;
}

void sk_db_rollback(sk_db_t *db)
{
        /* Errors ignored: on a broken link the server rolls the transaction back. */
        if (db && db->conn)
                (void)mysql_rollback(db->conn);
}

/* ------------------------------------------------------------------ the connection,
 * for callers that use the client API's statements and result sets directly */

int sk_db_connected(const sk_db_t *db)
{
        return db && db->conn;
}

uint64_t sk_db_generation(const sk_db_t *db)
{
        return db ? db->generation : 0;
}

unsigned int sk_db_errno(sk_db_t *db)
{
        unsigned int no;

        if (!db || !db->conn)
                return 2006u; /* CR_SERVER_GONE_ERROR */
        no = mysql_errno(db->conn);
        return no ? no : db->stmt_errno;
}

const char *sk_db_error(sk_db_t *db)
{
        return db && db->conn ? mysql_error(db->conn) : "not connected";
}

sk_err_t sk_db_seterr(sk_db_t *db, const char *what, char *errstr, size_t errstr_size)
{
        if (!db || !db->conn) {
                sk_seterr(errstr, errstr_size, "%s: not connected", what);
                return SK_EAGAIN;
        }
        return conn_err(db->conn, what, errstr, errstr_size);
}

sk_err_t sk_db_stmt_seterr(sk_db_t *db, MYSQL_STMT *stmt, const char *what, char *errstr,
                           size_t errstr_size)
{
        unsigned int no = stmt ? mysql_stmt_errno(stmt) : sk_db_errno(db);
        sk_err_t err = sk_db_classify(no);

        if (db && stmt)
                db->stmt_errno = no; /* sk_db_errno still tells it once stmt is closed */

        sk_seterr(errstr, errstr_size, "%s: mysql error %u: %s", what, no,
                  stmt ? mysql_stmt_error(stmt) : sk_db_error(db));
        return err == SK_OK ? SK_EDB : err;
}

sk_err_t sk_db_stmt_init(sk_db_t *db, MYSQL_STMT **out, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        *out = NULL;
        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        db->stmt_errno = 0;
        if (!(*out = mysql_stmt_init(db->conn))) {
                sk_seterr(errstr, errstr_size, "stmt_init: out of memory");
                return SK_ENOMEM;
        }
        return SK_OK;
}

sk_err_t sk_db_prepare(sk_db_t *db, const char *sql, size_t len, MYSQL_STMT **out,
                       char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = sk_db_stmt_init(db, out, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_stmt_prepare(*out, sql, (unsigned long)len) != 0) {
                err = sk_db_stmt_seterr(db, *out, "prepare", errstr, errstr_size);
                mysql_stmt_close(*out);
                *out = NULL;
                return err;
        }
        return SK_OK;
}

sk_err_t sk_db_query(sk_db_t *db, const char *sql, size_t len, MYSQL_RES **res, char *errstr,
                     size_t errstr_size)
{
        sk_err_t err;

        *res = NULL;
        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_real_query(db->conn, sql, (unsigned long)len) != 0)
                return conn_err(db->conn, "query", errstr, errstr_size);
        if (!(*res = mysql_store_result(db->conn))) {
                if (mysql_errno(db->conn))
                        return conn_err(db->conn, "store_result", errstr, errstr_size);
                sk_seterr(errstr, errstr_size, "query returned no result set");
                return SK_EDB;
        }
        return SK_OK;
}

sk_err_t sk_db_select_db(sk_db_t *db, const char *name, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = check_conn(db, errstr, errstr_size)) != SK_OK)
                return err;
        if (mysql_select_db(db->conn, name) != 0)
                return conn_err(db->conn, "select database", errstr, errstr_size);
        return SK_OK;
}

int sk_db_ping(sk_db_t *db)
{
        return db && db->conn && mysql_ping(db->conn) == 0;
}

void sk_db_drop(sk_db_t *db)
{
        if (db && db->conn) {
                mysql_close(db->conn);
                db->conn = NULL;
        }
}

int sk_db_wsrep_on(const sk_db_t *db)
{
        return db && db->conn && db->wsrep_on;
}
