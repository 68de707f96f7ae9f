/* sk/db.h: one MySQL/MariaDB connection (MariaDB Connector/C or Oracle libmysqlclient,
 * pkg-config mysqlclient), utf8mb4, connect/read/write timeouts, no automatic reconnect
 * (a reconnect inside a transaction would silently lose it), session
 * innodb_lock_wait_timeout. Not thread-safe: one sk_db_t per thread.
 * Call sk_db_library_init() once in main() before starting threads. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mysql.h>
#include "sk/err.h"
#include "sk/conf.h"

/* my_bool exists in MariaDB Connector/C and old libmysqlclient; MySQL 8 uses bool. */
#if defined(MARIADB_BASE_VERSION) || defined(MARIADB_PACKAGE_VERSION) || (defined(MYSQL_VERSION_ID) && MYSQL_VERSION_ID < 80000)
typedef my_bool sk_my_bool;
#else
typedef bool sk_my_bool;
#endif

typedef struct sk_db {
        MYSQL *conn;
        sk_mysql_url_t url;
        int lock_wait_timeout_s;
} sk_db_t;

/** @brief mysql_library_init once (thread-safe via pthread_once). */
void sk_db_library_init(void);

/** @brief Connect to @p url (copied). @p no_database: connect without selecting the
 *  database (for CREATE DATABASE). @p lock_wait_timeout_s: session
 *  innodb_lock_wait_timeout (1..), 0 = server default. Timeouts 5 s connect, 30 s I/O.
 *  @returns owned handle or NULL with the reason; transient errors are not
 *  distinguished here (the caller retries connects with backoff). */
sk_db_t *sk_db_connect(const sk_mysql_url_t *url, int no_database, int lock_wait_timeout_s,
                       char *errstr, size_t errstr_size);
/** @brief Close and reopen the same connection. */
sk_err_t sk_db_reconnect(sk_db_t *db, char *errstr, size_t errstr_size);
void sk_db_close(sk_db_t *db);

/** @brief Classify MySQL error number @p errnum: SK_EAGAIN for the transient ones of
 *  DESIGN.md 8 (1205 lock wait, 1213 deadlock, 2006 gone, 2013 lost, 2002/2003
 *  refused, 1927 killed, 1053 shutdown, 4031 idle disconnect), SK_EEXIST for 1062,
 *  SK_EDB otherwise. */
sk_err_t sk_db_classify(unsigned int errnum);
/** @brief The classification of the connection's last error. */
sk_err_t sk_db_last_err(sk_db_t *db);

/** @brief Run one statement without results (mysql_real_query). Errors as classified. */
sk_err_t sk_db_exec(sk_db_t *db, const char *sql, char *errstr, size_t errstr_size);
/** @brief Run @p sql whose first column of the first row is an integer (or NULL).
 *  @returns SK_OK (*out set, *is_null set if non-NULL), SK_ENOTFOUND for no row. */
sk_err_t sk_db_query_i64(sk_db_t *db, const char *sql, int64_t *out, int *is_null,
                         char *errstr, size_t errstr_size);
/** @brief BEGIN / COMMIT / ROLLBACK. ROLLBACK errors are ignored on a broken link. */
sk_err_t sk_db_begin(sk_db_t *db, char *errstr, size_t errstr_size);
sk_err_t sk_db_commit(sk_db_t *db, char *errstr, size_t errstr_size);
void sk_db_rollback(sk_db_t *db);

/** @brief GET_LOCK(name, timeout_s) on this session. @returns SK_OK (held), SK_EAGAIN
 *  (held by someone else after the timeout), or an error. RELEASE_LOCK with unlock. */
sk_err_t sk_db_lock(sk_db_t *db, const char *name, int timeout_s, char *errstr, size_t errstr_size);
sk_err_t sk_db_unlock(sk_db_t *db, const char *name, char *errstr, size_t errstr_size);

/** @brief Bind helpers for prepared statements: a signed BIGINT input/output. */
void sk_db_bind_i64(MYSQL_BIND *b, int64_t *v);
void sk_db_bind_str(MYSQL_BIND *b, char *s, unsigned long *len, size_t cap);
