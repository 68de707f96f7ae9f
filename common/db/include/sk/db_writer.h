/* sk/db_writer.h: the writer choice of a multi-host SECKILL_MYSQL_URL (DESIGN.md 16).
 * A process-wide cache remembers, per host list, which node is the writer and when the
 * list was last walked from its first node; every function is thread-safe. Callers
 * outside common/db use sk_db_writer_name only; the sk__ functions are db.c's (sk/db.h:
 * every connect and reconnect goes through them). */
#pragma once
#include <stddef.h>
#include <mysql.h>
#include "sk/err.h"
#include "sk/url.h"

/* How often (ms) the list is walked again from its first node, so that a first node that
 * has rejoined is used again within about a second. */
#define SK__DB_WRITER_RECHECK_MS 1000

/* What sk__db_writer_advice tells a connection to node @p node to do before a new
 * transaction. */
typedef enum {
        SK__DB_STAY = 0,        /* keep the connection */
        SK__DB_MOVE = 1,        /* another node is the writer now: reconnect */
        SK__DB_PROBE = 2,       /* the list is due a re-check: probe the nodes before
                                 * this one (sk__db_writer_open with below = node) */
} sk__db_advice_t;

/** @brief "host:port" ("[v6]:port") of the node the process's connections of @p url
 *  (borrowed) go to, i.e. the last writer found for its host list, into @p buf.
 *  @returns 1, or 0 with "" in @p buf when no connection of that list was made yet.
 *  Thread-safe. For /readyz. */
int sk_db_writer_name(const sk_mysql_url_t *url, char *buf, size_t buf_size);

/* Connects to node @p node of @p url with the caller's options; NULL with the class in
 * *err (never SK_OK) and the reason in @p why. */
typedef MYSQL *(*sk__db_connect_fn)(void *arg, const sk_mysql_url_t *url, int node, sk_err_t *err,
                                    char *why, size_t why_size);

/* Opens a connection (made by @p connect with @p arg) to the writer of @p url: the cached
 * writer first while the cache is fresh, otherwise the nodes in list order; a node
 * counts when it answers and is writable (@@read_only = 0; with @@wsrep_on = 1 also
 * wsrep_ready = ON and wsrep_local_state = 4; mysql-galera:// refuses a node without
 * wsrep). @p below > 0: only nodes 0..below-1 are tried, in order (a re-check from a
 * connection to node @p below; NULL without an error when none qualifies).
 * @returns the connection (owned by the caller) with *node and *wsrep_on (the node's
 * @@wsrep_on, read by the writability check: 1 ON, 0 OFF or absent) set, or NULL with the class
 * in *err (SK_EAGAIN: nodes down or not writable yet; SK_EDB: refused for good, e.g. a
 * wrong password or a server without wsrep under mysql-galera://) and one line per node
 * tried in errstr (no password). */
MYSQL *sk__db_writer_open(const sk_mysql_url_t *url, sk__db_connect_fn connect, void *arg,
                          int below, int *node, int *wsrep_on, sk_err_t *err, char *errstr,
                          size_t errstr_size);

/* Opens a connection to the first node that answers and is writable (as
 * sk__db_writer_open) trying the nodes after node @p after first, in list order and
 * wrapping around, node @p after last (@p after out of range: plain list order). The
 * process-wide cache is not read; the node found becomes its writer (with the time of a
 * walk), so the other connections follow it instead of walking back to the node this one
 * stepped off (sk_db_prefer_next_node), until the re-check finds an earlier node
 * writable again. Results as sk__db_writer_open. */
MYSQL *sk__db_writer_open_after(const sk_mysql_url_t *url, sk__db_connect_fn connect, void *arg,
                                int after, int *node, int *wsrep_on, sk_err_t *err, char *errstr,
                                size_t errstr_size);

/* What a connection of @p url to node @p node should do before its next transaction
 * (see sk__db_advice_t). A one-host URL always stays. A PROBE answer claims the re-check
 * for the calling thread (others stay meanwhile). */
sk__db_advice_t sk__db_writer_advice(const sk_mysql_url_t *url, int node);
