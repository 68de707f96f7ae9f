/* sk/db.h: one MySQL/MariaDB connection (MariaDB Connector/C or Oracle libmysqlclient,
 * pkg-config mysqlclient), utf8mb4, connect/read/write timeouts, no automatic reconnect
 * (a reconnect inside a transaction would silently lose it), session
 * innodb_lock_wait_timeout. Not thread-safe: one sk_db_t per thread.
 * Call sk_db_library_init() once in main() before starting threads.
 *
 * Session settings made by every connect (and reconnect), in this order:
 *   SET SESSION time_zone = '+00:00'   every DATETIME(3) column holds UTC, and
 *                                      CURRENT_TIMESTAMP(3)/FROM_UNIXTIME/UNIX_TIMESTAMP
 *                                      convert with UTC whatever the server's zone;
 *   SET SESSION sql_mode = <server's> + STRICT_TRANS_TABLES  (an oversized or invalid
 *                                      value is an error, never a silent truncation;
 *                                      DESIGN.md 8 "other DB errors");
 *   SET SESSION innodb_lock_wait_timeout = N  when N > 0 (DESIGN.md 8: well below the
 *                                      consumer's max.poll.interval.ms);
 *   SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED.
 * Why READ COMMITTED: every write of the pipeline is decided by a unique key (outcome
 * trace_id, order (voucher_id, user_id)) or by a conditional UPDATE
 * (stock = stock - n WHERE stock >= n), which lock and read the latest committed row
 * under any isolation level; REPEATABLE READ would only add gap/next-key locks on
 * those unique-key checks (more 1213 deadlocks between concurrent inserts) and stale
 * snapshots for long-lived readers (the reconciler). A reader that needs several
 * figures consistent with each other reads them in ONE statement (sub-queries share
 * the statement's read view) or locks the rows. The standard
 * "SET SESSION TRANSACTION ISOLATION LEVEL" form is used because the variable is
 * tx_isolation on MariaDB < 11.1 and transaction_isolation on MySQL 8. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <mysql.h>
#include "sk/err.h"
#include "sk/conf.h"

/* my_bool exists in MariaDB Connector/C and old libmysqlclient; MySQL 8 uses bool. */
#if defined(MARIADB_BASE_VERSION) || defined(MARIADB_PACKAGE_VERSION) || (defined(MYSQL_VERSION_ID) && MYSQL_VERSION_ID < 80000)
typedef my_bool sk_my_bool;
#else
typedef bool sk_my_bool;
#endif

/* Opaque: the connection is reached only through the functions below (the statement
 * and result-set users through the "connection" functions at the end). */
typedef struct sk_db sk_db_t;

/** @brief mysql_library_init once (thread-safe via pthread_once). */
void sk_db_library_init(void);

/** @brief Connect to @p url (copied). @p no_database: connect without selecting the
 *  database (for CREATE DATABASE). @p lock_wait_timeout_s: session
 *  innodb_lock_wait_timeout (1..), 0 = server default. Timeouts 5 s connect, 30 s I/O.
 *  Writer choice (DESIGN.md 16): the connection goes to the first node of url->hosts
 *  that answers and is writable (@@read_only = 0; when @@wsrep_on = 1 also
 *  wsrep_ready = ON and wsrep_local_state = 4, Synced; mysql-galera:// refuses a node
 *  without wsrep). A process-wide cache per host list remembers the node found and
 *  walks the list from its first node again about once a second; reconnects choose the
 *  same way (sk/db_writer.h; sk_db_writer_name names the node). For a one-host URL
 *  (nhosts 0 or 1) url->host and url->port name the node. Thread-safe (the
 *  cache has its own lock).
 *  @returns owned handle or NULL with the reason (one "host:port: why" per node tried
 *  for a list); transient errors are not distinguished here (the caller retries
 *  connects with backoff). */
sk_db_t *sk_db_connect(const sk_mysql_url_t *url, int no_database, int lock_wait_timeout_s,
                       char *errstr, size_t errstr_size);
/** @brief sk_db_connect with read and write timeouts of @p io_timeout_s (>= 1) seconds
 *  instead of 30, and a connect timeout of the smaller of 5 s and @p io_timeout_s (the
 *  wait for the server's greeting included: a frozen node accepts TCP connections and
 *  never answers); both kept for reconnects. For a connection whose statements must give
 *  up sooner, e.g. the worker-id lease renewals (DESIGN.md 2). */
sk_db_t *sk_db_connect_io(const sk_mysql_url_t *url, int no_database, int lock_wait_timeout_s,
                          int io_timeout_s, char *errstr, size_t errstr_size);
/** @brief Close and reopen the same connection (same URL, database choice and session
 *  settings; the node chosen as by sk_db_connect, so possibly another node of the list).
 *  Session state (an open transaction) is lost.
 *  @returns SK_OK, or SK_EAGAIN/SK_EDB as classified (the handle is then not connected,
 *  sk_db_connected() is 0, and every other call fails with SK_EAGAIN until a reconnect
 *  succeeds). */
sk_err_t sk_db_reconnect(sk_db_t *db, char *errstr, size_t errstr_size);
/** @brief Make the next reconnect of @p db (sk_db_reconnect, sk_db_resolve_begin) try
 *  the nodes of its URL after the one it was connected to first, in list order and
 *  wrapping around, that node last (a one-host URL reconnects to its one node). That
 *  reconnect does not read the process-wide writer cache, and the node it finds becomes
 *  the process's writer: the other connections follow at their next transaction rather
 *  than walk back to the silent node, and the once-a-second re-check returns them to an
 *  earlier node once it answers and is writable (DESIGN.md 16). For a connection whose
 *  statement failed or timed out on a node that may be frozen, dead or cut off: it steps
 *  to the next node at once instead of walking the list from a first node that may be
 *  the silent one (the worker-id lease renewals, DESIGN.md 2; a consumer worker's lost
 *  link). Later reconnects choose as sk_db_connect again. Not thread-safe per @p db;
 *  NULL: no-op. */
void sk_db_prefer_next_node(sk_db_t *db);
/** @brief Close and free @p db. NULL is a no-op. */
void sk_db_close(sk_db_t *db);

/** @brief Classify MySQL error number @p errnum: SK_OK for 0; SK_EAGAIN for the
 *  transient ones of DESIGN.md 8 (1205 lock wait, 1213 deadlock, 2006 gone, 2013 lost,
 *  2002/2003 refused, 1927 killed, 1053 shutdown, 4031 idle disconnect) and their
 *  close relatives (1040 too many connections, 1158-1161 network read/write errors,
 *  2055 lost at system error, 3058 user-lock deadlock, 1615 statement needs re-prepare
 *  (a busy server's table definition cache evicted its table), 1047 a Galera node not
 *  ready (DESIGN.md 16: reconnect to the next node), 1290 the server went read-only); SK_EEXIST for 1062 (duplicate
 *  key); SK_EDB otherwise (not known to be transient). Pure, thread-safe. */
sk_err_t sk_db_classify(unsigned int errnum);
/** @brief The classification of the connection's last error. */
sk_err_t sk_db_last_err(sk_db_t *db);

/** @brief Run one finished statement without values (mysql_real_query; a statement with
 *  values takes them bound: sk_db_exec_args); a result set, if any, is read and
 *  discarded. Errors as classified by sk_db_classify, the server's text in errstr. */
sk_err_t sk_db_exec(sk_db_t *db, const char *sql, char *errstr, size_t errstr_size);
/** @brief Run @p sql, a finished statement without parameters (text protocol), whose
 *  first column of the first row is an integer (or NULL); a statement with values in it
 *  takes them bound: sk_db_i64.
 *  @returns SK_OK (*out set, *is_null set if non-NULL; a NULL value gives *out = 0),
 *  SK_ENOTFOUND for no row, SK_EDB if the value is not a 64-bit integer, or the
 *  classified error of the query. */
sk_err_t sk_db_query_i64(sk_db_t *db, const char *sql, int64_t *out, int *is_null,
                         char *errstr, size_t errstr_size);
/** @brief Run @p sql (a finished statement without parameters; with them: sk_db_row1)
 *  and read the first @p ncols (1..32) columns of its first row as
 *  64-bit integers into out[0..ncols-1] (caller-owned). A NULL value gives 0 and sets
 *  bit i of *null_mask (may be NULL; written on SK_OK only). Further rows are ignored.
 *  @returns SK_OK, SK_ENOTFOUND for no row, SK_EINVAL (bad arguments), SK_EDB if a
 *  value is not a 64-bit integer or the query has fewer columns, or the classified
 *  error of the query (SK_EAGAIN transient, SK_EDB otherwise). Same thread rule as
 *  every call on @p db. */
sk_err_t sk_db_query_row_i64(sk_db_t *db, const char *sql, int64_t *out, int ncols,
                             unsigned *null_mask, char *errstr, size_t errstr_size);
/** @brief START TRANSACTION / COMMIT / ROLLBACK. Before START TRANSACTION, a connection
 *  of a multi-host URL follows the writer (DESIGN.md 16): when the process's writer is
 *  another node, or (at most once a second per process) an earlier node of the list is
 *  writable again, it reconnects there first (sk_db_generation changes: statements
 *  prepared before sk_db_begin must be checked against it). A failed move is the
 *  classified connect error (SK_EAGAIN: transient). Errors as classified (a COMMIT that
 *  fails with 2006/2013 has an unknown outcome: the caller re-checks by its idempotency
 *  key). ROLLBACK errors are ignored (the server rolls back on a broken link). */
sk_err_t sk_db_begin(sk_db_t *db, char *errstr, size_t errstr_size);
sk_err_t sk_db_commit(sk_db_t *db, char *errstr, size_t errstr_size);
void sk_db_rollback(sk_db_t *db);
/** @brief Start a read-only transaction whose reads all see one snapshot (REPEATABLE
 *  READ, WITH CONSISTENT SNAPSHOT: the MariaDB/InnoDB consistent read), no locks taken;
 *  the session stays READ COMMITTED for the transactions after it. End it with
 *  sk_db_commit or sk_db_rollback. For figures that must agree with each other, e.g. a
 *  bucket's stock and the outcomes of its traces (DESIGN.md 14). Errors as
 *  sk_db_exec (SK_EAGAIN transient). */
sk_err_t sk_db_begin_snapshot(sk_db_t *db, char *errstr, size_t errstr_size);

/* No GET_LOCK here: it is node-local on Galera (DESIGN.md 16). Advisory locks are
 * rows of tb_lock: sk/dblock.h. */

/** @brief Bind helpers for prepared statements (the MYSQL_BIND is zeroed first).
 *  i64: a signed BIGINT (MYSQL_TYPE_LONGLONG) input/output at *v (borrowed).
 *  str: a string at @p s of capacity @p cap bytes, length in/out at *len (borrowed). */
void sk_db_bind_i64(MYSQL_BIND *b, int64_t *v);
void sk_db_bind_str(MYSQL_BIND *b, char *s, unsigned long *len, size_t cap);

/* The connection for callers that use the client API's prepared statements and result
 * sets directly (the handle itself stays opaque). Same thread rule as every call. */

/** @brief 1 if @p db has an open connection (0 after a failed reconnect, or NULL). */
int sk_db_connected(const sk_db_t *db);
/** @brief A number bumped by every successful connect and reconnect: prepared
 *  statements made under an older generation belong to a closed connection and must
 *  be dropped (a new connection may even reuse the old handle's address). 0 for NULL. */
uint64_t sk_db_generation(const sk_db_t *db);
/** @brief The connection's last error number and text (2006 / "not connected" when
 *  there is no connection). The number of a failed prepared statement (sk_db_exec_args,
 *  the one-row readers, sk_db_rows) is kept after its statement is closed, until the
 *  next statement begins; the text is the connection's own. The text is owned by the
 *  connection, valid until the next call on @p db. */
unsigned int sk_db_errno(sk_db_t *db);
const char *sk_db_error(sk_db_t *db);
/** @brief Write the connection's last error as "@p what: mysql error N: text" into
 *  errstr. @returns its class (sk_db_classify; SK_EDB when the number is 0, SK_EAGAIN
 *  when not connected), never SK_OK. */
sk_err_t sk_db_seterr(sk_db_t *db, const char *what, char *errstr, size_t errstr_size);
/** @brief The one statement-error text: the last error of @p stmt (borrowed; NULL: the
 *  connection's, e.g. after a failed mysql_stmt_init) as "@p what: mysql error N: text"
 *  into errstr, the format of sk_db_seterr. @returns its class (sk_db_classify; SK_EDB
 *  when the number is 0), never SK_OK. Not thread-safe per @p db. */
sk_err_t sk_db_stmt_seterr(sk_db_t *db, MYSQL_STMT *stmt, const char *what, char *errstr,
                           size_t errstr_size);
/** @brief mysql_stmt_init on the connection: *out is owned by the caller
 *  (mysql_stmt_close), valid while sk_db_generation is unchanged.
 *  @returns SK_OK, SK_EAGAIN (not connected), SK_ENOMEM. */
sk_err_t sk_db_stmt_init(sk_db_t *db, MYSQL_STMT **out, char *errstr, size_t errstr_size);
/** @brief sk_db_stmt_init + mysql_stmt_prepare of @p sql (@p len bytes). On failure
 *  the statement is closed and *out is NULL. @returns SK_OK or the classified error. */
sk_err_t sk_db_prepare(sk_db_t *db, const char *sql, size_t len, MYSQL_STMT **out,
                       char *errstr, size_t errstr_size);
/** @brief Run @p sql (@p len bytes) and store its whole result set in *res (owned by the
 *  caller: mysql_free_result). @returns SK_OK; SK_EDB if the statement returns no
 *  result set; else the classified error (*res NULL). */
sk_err_t sk_db_query(sk_db_t *db, const char *sql, size_t len, MYSQL_RES **res, char *errstr,
                     size_t errstr_size);
/** @brief Make @p name the connection's default database (mysql_select_db; a reconnect
 *  returns to the one of the URL). @returns SK_OK or the classified error. */
sk_err_t sk_db_select_db(sk_db_t *db, const char *name, char *errstr, size_t errstr_size);
/** @brief 1 if the connection answers a ping now, else 0 (no reconnect is attempted). */
int sk_db_ping(sk_db_t *db);
/** @brief Close the connection without opening another (the handle stays: sk_db_connected
 *  is 0 until sk_db_reconnect). The server rolls back an open transaction. For a link
 *  whose state is not known any more (sk/db_outcome.h). NULL: no-op. */
void sk_db_drop(sk_db_t *db);
/** @brief 1 when the connected node said @@wsrep_on = 1 at connect (Galera, DESIGN.md 16),
 *  0 otherwise (standalone, MySQL, not connected). Read once per (re)connect. */
int sk_db_wsrep_on(const sk_db_t *db);

/** @brief sk_db_exec_args with @p n (0..8) BIGINT parameters @p params; *@p affected
 *  (may be NULL) = rows changed. @returns SK_OK; SK_EAGAIN
 *  (transient: no connection, deadlock, lock wait, gone), SK_EDB or the classified
 *  error with "errno message" in errstr; SK_EINVAL for n > 8. Not thread-safe per @p db. */
sk_err_t sk_db_exec_i64(sk_db_t *db, const char *sql, const int64_t *params, int n,
                        int64_t *affected, char *errstr, size_t errstr_size);
/** @brief Run @p sql (a prepared statement, borrowed) with the caller's @p n parameter
 *  binds @p b (borrowed; e.g. sk_db_bind_i64 / sk_db_bind_str, ids MYSQL_TYPE_LONGLONG);
 *  *@p affected (may be NULL) = rows changed. Errors as sk_db_exec_i64. Not thread-safe
 *  per @p db. */
sk_err_t sk_db_exec_bound(sk_db_t *db, const char *sql, MYSQL_BIND *b, int n, int64_t *affected,
                          char *errstr, size_t errstr_size);

/* ------------------------------------------------------------------ bound parameters
 * Every value a statement needs goes to the server as a bound parameter of a prepared
 * statement (a `?` in the SQL), never as text spliced into the SQL: the statements below
 * take a list of typed arguments, written at the call site as
 *     sk_db_i64(db, "SELECT stock FROM tb_seckill_stock WHERE voucher_id = ? AND bucket = ?",
 *               SK_ARGS(SK_I64(voucher_id), SK_I64(bucket)), &stock, NULL, errstr, size);
 * An identifier (a database name) cannot be bound: sk_db_exec_ident is the one place one
 * is spliced, after validation. Each call prepares, executes and closes its statement
 * (one round trip more than a text query; the hot paths keep their own prepared
 * statements, consumer/apply.c). Errors of every call below, with the reason in errstr
 * as "prepare|execute|fetch: mysql error N: text":
 *   SK_EINVAL   a bad argument, or @p nargs differs from the statement's `?` count
 *               (a programming error: retrying will not help);
 *   SK_EAGAIN   transient (sk_db_classify): no connection, 1213 deadlock, 1205 lock wait,
 *               a lost link (2006/2013), ...; inside a transaction the caller retries the
 *               whole transaction. For an autocommit write a lost link leaves the outcome
 *               unknown: sk_db_write_class(sk_db_errno(db)) tells, sk/db_outcome.h;
 *   SK_EEXIST   1062, a duplicate key (the write did not apply);
 *   SK_EDB      any other server error (permanent).
 * Not thread-safe per @p db (as every call on it); the argument and column lists are
 * borrowed for the call only. */

/** @brief The type of one bound argument (sk_db_arg_t). */
typedef enum {
        SK_DB_ARG_NULL = 0,     /* SQL NULL */
        SK_DB_ARG_I64,          /* a signed BIGINT, bound as MYSQL_TYPE_LONGLONG */
        SK_DB_ARG_STR,          /* a string of len bytes (the connection's utf8mb4) */
} sk_db_arg_type_t;

/** @brief One bound argument: build it with SK_I64, SK_STR, SK_STRN or SK_NULL. The
 *  string is borrowed until the call that takes the argument returns. */
typedef struct sk_db_arg {
        sk_db_arg_type_t type;
        int64_t i64;
        const char *s;
        size_t len;
} sk_db_arg_t;

static inline sk_db_arg_t sk_db_arg_i64(int64_t v)
{
        sk_db_arg_t a = { SK_DB_ARG_I64, v, NULL, 0 };
        return a;
}

/* A NULL pointer binds SQL NULL. */
static inline sk_db_arg_t sk_db_arg_strn(const char *s, size_t len)
{
        sk_db_arg_t a = { s ? SK_DB_ARG_STR : SK_DB_ARG_NULL, 0, s, s ? len : 0 };
        return a;
}

static inline sk_db_arg_t sk_db_arg_str(const char *s)
{
        return sk_db_arg_strn(s, s ? strlen(s) : 0);
}

#define SK_I64(v)       sk_db_arg_i64(v)
#define SK_STR(s)       sk_db_arg_str(s)
#define SK_STRN(s, n)   sk_db_arg_strn((s), (n))
#define SK_NULL         sk_db_arg_strn(NULL, 0)
/* SK_ARGS(a, b, ...): the two parameters `args, nargs` of the calls below, for a list
 * written in place (sizeof does not evaluate its operand: each argument is built once). */
#define SK_ARGS(...)    (const sk_db_arg_t[]){ __VA_ARGS__ }, \
                        (int)(sizeof((const sk_db_arg_t[]){ __VA_ARGS__ }) / sizeof(sk_db_arg_t))
#define SK_NOARGS       NULL, 0
#define SK_DB_ARGS_MAX  16      /* arguments of one statement */

/** @brief One result column of sk_db_row1_cols: an integer into *i64 (set i64, leave s
 *  NULL), or text into s[0..size) (NUL-terminated, a longer value cut to size - 1 bytes).
 *  Build it with SK_COL_I64 / SK_COL_STR. */
typedef struct sk_db_col {
        int64_t *i64;
        char *s;
        size_t size;
} sk_db_col_t;

#define SK_COL_I64(p)           ((sk_db_col_t){ (p), NULL, 0 })
#define SK_COL_STR(buf, n)      ((sk_db_col_t){ NULL, (buf), (n) })

/** @brief Prepare @p sql (borrowed), bind @p args[0..nargs) (0..SK_DB_ARGS_MAX) to its
 *  placeholders, execute it; a result set, if any, is discarded. *@p affected (may be
 *  NULL) = rows changed. @returns SK_OK or an error of the list above. */
sk_err_t sk_db_exec_args(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                         int64_t *affected, char *errstr, size_t errstr_size);

/** @brief The first row of @p sql with @p args bound, its first @p ncols (1..32) columns
 *  into @p cols (caller-owned buffers, sk_db_col_t); further rows and columns are read
 *  and ignored. A NULL value gives 0 or "" and sets bit i of *@p null_mask (may be NULL;
 *  written on SK_OK only). @returns SK_OK; SK_ENOTFOUND for no row; SK_EDB when the
 *  statement has fewer columns or an integer column holds a value that is not a 64-bit
 *  integer (the text reader's rule); else an error of the list above. */
sk_err_t sk_db_row1_cols(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                         const sk_db_col_t *cols, int ncols, unsigned *null_mask,
                         char *errstr, size_t errstr_size);

/** @brief sk_db_row1_cols with every column an integer: out[0..ncols) (caller-owned). */
sk_err_t sk_db_row1(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                    int64_t *out, int ncols, unsigned *null_mask, char *errstr,
                    size_t errstr_size);

/** @brief One integer: the first column of the first row into *out (0 for NULL; *is_null,
 *  may be NULL, set on SK_OK). @returns as sk_db_row1 (SK_ENOTFOUND for no row). */
sk_err_t sk_db_i64(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                   int64_t *out, int *is_null, char *errstr, size_t errstr_size);

/** @brief The one statement with a spliced identifier: run @p head `@p ident` @p tail,
 *  where @p ident is 1..64 bytes of [A-Za-z0-9_] (sk_db_ident_ok; written between
 *  backquotes), e.g. CREATE DATABASE. @returns SK_EINVAL for any other identifier (nothing
 *  run), else as sk_db_exec. */
sk_err_t sk_db_exec_ident(sk_db_t *db, const char *head, const char *ident, const char *tail,
                          char *errstr, size_t errstr_size);
/** @brief 1 if @p ident is 1..64 bytes of [A-Za-z0-9_] (a name that needs no quoting
 *  and cannot end a backquoted identifier), else 0. Pure, thread-safe. */
int sk_db_ident_ok(const char *ident);

/** @brief Internal to common/db (the readers of db_rows.c): prepare @p sql, bind @p args
 *  and execute; *out (owned by the caller: mysql_stmt_close) holds the result, if any.
 *  Errors as sk_db_exec_args. */
sk_err_t sk__db_stmt_run(sk_db_t *db, const char *sql, const sk_db_arg_t *args, int nargs,
                         MYSQL_STMT **out, char *errstr, size_t errstr_size);

/** @brief Row callback of sk_db_rows: @p cols[0..ncols) are the row's values,
 *  @p nulls[i] non-zero for a NULL (value 0). Return 0 to continue, non-zero to stop. */
typedef int (*sk_rows_cb)(void *arg, const int64_t *cols, const int *nulls, int ncols);

/** @brief Prepare @p sql (borrowed; placeholders bound to @p params[0..nparams), each a
 *  BIGINT as MYSQL_TYPE_LONGLONG), execute it and call @p cb (may be NULL) with @p arg for
 *  each row; every column (1..16 of them) is read as a signed 64-bit integer. For small
 *  integer reads (reconciler, verify, rebuild, the order lifecycle, admin).
 *  @returns SK_OK; SK_EINVAL for bad arguments; SK_EAGAIN without a connection; else the
 *  classified DB error (transient ones SK_EAGAIN). Not thread-safe per @p db. */
sk_err_t sk_db_rows(sk_db_t *db, const char *sql, const int64_t *params, int nparams,
                    int ncols, sk_rows_cb cb, void *arg, char *errstr, size_t errstr_size);
