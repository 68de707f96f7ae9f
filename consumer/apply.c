/* apply.c: the database statements of seckill-consumer (DESIGN.md 6-8).
 *
 * One transaction per (voucher, bucket) and poll batch (DESIGN.md 5: the merged
 * decrement hits the bucket's own row):
 *   SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = ?  -- once
 *   INSERT INTO tb_seckill_outcome ... VALUES (CREATED) x n   -- the idempotency check
 *   UPDATE tb_seckill_stock SET stock = stock - k WHERE voucher_id = ? AND bucket = ? AND stock >= k
 *   INSERT INTO tb_voucher_order ... x n   -- UNPAID + pay_deadline, the voucher's price
 *                                          -- (DESIGN.md 13); never INSERT IGNORE
 *   INSERT INTO tb_voucher_order_router ... x n
 *   INSERT INTO tb_voucher_reconcile_log ... x n               -- log_type -1, pending
 *   COMMIT
 * The price and currency the order rows copy (DESIGN.md 13) are read once per
 * transaction and bound as values: a price sub-query per row made every row two more
 * primary-key lookups and two more sub-queries for the server to optimise at each
 * execution (docs/SCALING.md "What one batch costs the database").
 * k is the sum of deductQty of the n outcome rows this statement inserted (a multi-row
 * INSERT without IGNORE inserts all rows or none). Any duplicate key, a short stock or
 * another error rolls the whole transaction back and the caller falls back to
 * cons_apply_one() per message, which tells the cases apart. Before it, the caller
 * asks which traceIds already have an outcome (cons_apply_known: one SELECT ... IN).
 * The sold_out clamp's stock read is sk/decide.h's (decide.c).
 *
 * Every id is bound as MYSQL_TYPE_LONGLONG. Multi-row statements are N-placeholder
 * prepared statements (portable to MariaDB Connector/C and libmysqlclient; no array
 * binding), cached per (statement, n) in a small LRU so the steady state of full
 * batches prepares nothing. The cache belongs to one connection: a reconnect (new
 * MYSQL *) empties it.
 *
 * Failpoints: consumer.between_statements (after the outcome insert),
 * consumer.before_commit, consumer.after_commit. `error` is reported as a transient
 * failure (the transaction is rolled back, or for after_commit the caller retries and
 * finds its own outcome: the duplicate path). Not thread-safe: one per worker.
 * Length: a little over 600 lines because every statement shares the per-connection
 * statement cache and bind buffers defined here (splitting them would export both). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sk/clock.h"
#include "sk/db_outcome.h"
#include "sk/db_sync.h"
#include "sk/failpoint.h"
#include "sk/ids.h"
#include "sk/log.h"
#include "sk/model.h"
#include "consumer.h"

enum { K_OUTCOME, K_ORDER, K_ORDER_PAID, K_ROUTER, K_LOG, K_STOCK, K_GETSTOCK, K_KNOWN, K_PRICE,
       K__N };

#define ORDER_HEAD "INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id, bucket, " \
        "amount_minor, currency, status, pay_deadline, paid_at) VALUES "
#define ROW_MAX 96      /* bytes of the longest row of sqls[] (checked by cons_apply_new) */

static const struct {
        const char *head;  /* up to VALUES */
        const char *row;   /* one row's placeholders */
        const char *tail;  /* after the rows */
        int cols;          /* placeholders per row */
} sqls[K__N] = {
        [K_OUTCOME] = { "INSERT INTO tb_seckill_outcome (trace_id, order_id, user_id, voucher_id, bucket, outcome) VALUES ",
                        "(?,?,?,?,?," SK_SQL_OUTCOME_CREATED ")", "", 5 },
        /* The order rows (DESIGN.md 13): price and currency are the voucher's, read by
         * K_PRICE in the same transaction and bound per row. UNPAID with pay_deadline =
         * creation + the pay timeout (the last placeholder, in seconds) on the DB's
         * clock, or PAID at creation (see order_kind). */
        [K_ORDER] = { ORDER_HEAD, "(?,?,?,?,?,?,?," SK_SQL_ORDER_UNPAID ",NOW(3) + INTERVAL ? SECOND,NULL)",
                      "", 8 },
        [K_ORDER_PAID] = { ORDER_HEAD, "(?,?,?,?,?,?,?," SK_SQL_ORDER_PAID ",NULL,NOW(3))", "", 7 },
        [K_ROUTER] = { "INSERT INTO tb_voucher_order_router (order_id, user_id, voucher_id) VALUES ",
                       "(?,?,?)", "", 3 },
        /* The ledger rows of sk/ledger.h, batched: a DEDUCT row left by an earlier
         * attempt is kept (uk_trace_type). */
        [K_LOG] = { "INSERT INTO tb_voucher_reconcile_log (order_id, user_id, voucher_id, message_id, "
                    "before_qty, change_qty, after_qty, trace_id, log_type, business_type, "
                    "reconciliation_status, detail) VALUES ",
                    "(?,?,?,?,?,?,?,?," SK_SQL_LOG_DEDUCT "," SK_SQL_BIZ_OK "," SK_SQL_RECON_PENDING
                    ",'order created')", " ON DUPLICATE KEY UPDATE id = id", 8 },
        [K_STOCK] = { "UPDATE tb_seckill_stock SET stock = stock - ? WHERE voucher_id = ? AND bucket = ?"
                      " AND stock >= ?", NULL, NULL, 4 },
        [K_GETSTOCK] = { "SELECT stock FROM tb_seckill_stock WHERE voucher_id = ? AND bucket = ?", NULL, NULL, 2 },
        [K_KNOWN] = { "SELECT trace_id, order_id, user_id, voucher_id, outcome, COALESCE(reason, '') "
                      "FROM tb_seckill_outcome WHERE trace_id IN (", "?", ")", 1 },
        [K_PRICE] = { "SELECT price_minor, currency FROM tb_seckill_voucher WHERE voucher_id = ?",
                      NULL, NULL, 1 },
};

/* The pay timeout of a new order (DESIGN.md 13), set once at start-up by
 * cons_apply_set_pay_timeout() before any worker runs: > 0, every order is UNPAID with
 * that window; 0, a price-0 order is created PAID and a priced one is still UNPAID with
 * the default window (an order that costs money is never created PAID). */
static int order_free_paid;
static int64_t order_pay_timeout_s = 900;

void cons_apply_set_pay_timeout(int pay_timeout_s)
{
        order_free_paid = pay_timeout_s <= 0;
        order_pay_timeout_s = pay_timeout_s <= 0 ? SK_PAY_TIMEOUT_PRICED_S : pay_timeout_s;
}

#define CACHE_SLOTS 24

typedef struct cache_ent {
        int kind, n;
        MYSQL_STMT *stmt;
        uint64_t used;
} cache_ent_t;

struct cons_apply {
        sk_db_t *db;
        uint64_t conn_gen;           /* sk_db_generation the cached statements belong to (0: none) */
        cache_ent_t cache[CACHE_SLOTS];
        uint64_t tick;
        int cap;                     /* rows the buffers hold */
        MYSQL_BIND *binds;           /* cap * 8 */
        int64_t *vals;               /* cap * 8 */
        char (*mids)[SK_ID_STRLEN];  /* message_id strings */
        unsigned long *mid_lens;
        int64_t price_minor;         /* the voucher's price and currency (K_PRICE), bound */
        char currency[8];            /* into every order row of the transaction */
        unsigned long currency_len;
        char *sqlbuf;
        size_t sqlbuf_size;
        unsigned int last_errno;     /* MySQL error number of the last failed step (0: none) */
        int outcome_exists;          /* the last batch met an existing outcome row (1062) */
        uint64_t prepares, executes;  /* statistics, logged at destroy (debug) */
        int64_t prepare_us;
};

cons_apply_t *cons_apply_new(sk_db_t *db, int batch_max)
{
        cons_apply_t *ap = calloc(1, sizeof(*ap));

        if (!ap)
                return NULL;
        for (int k = 0; k < K__N; k++)
                if (sqls[k].row && strlen(sqls[k].row) + 2 > ROW_MAX) {
                        free(ap);
                        return NULL; /* a row longer than the buffers below: a bug */
                }
        ap->db = db;
        ap->cap = batch_max < 1 ? 1 : batch_max;
        ap->binds = calloc((size_t)ap->cap * 8, sizeof(*ap->binds));
        ap->vals = calloc((size_t)ap->cap * 8, sizeof(*ap->vals));
        ap->mids = calloc((size_t)ap->cap, sizeof(*ap->mids));
        ap->mid_lens = calloc((size_t)ap->cap, sizeof(*ap->mid_lens));
        ap->sqlbuf_size = 512 + (size_t)ap->cap * ROW_MAX;
        ap->sqlbuf = malloc(ap->sqlbuf_size);
        if (!ap->binds || !ap->vals || !ap->mids || !ap->mid_lens || !ap->sqlbuf) {
                cons_apply_destroy(ap);
                return NULL;
        }
        return ap;
}

void cons_apply_reset(cons_apply_t *ap)
{
        int i;

        for (i = 0; i < CACHE_SLOTS; i++) {
                if (ap->cache[i].stmt)
                        mysql_stmt_close(ap->cache[i].stmt);
                memset(&ap->cache[i], 0, sizeof(ap->cache[i]));
        }
        ap->conn_gen = 0;
}

void cons_apply_destroy(cons_apply_t *ap)
{
        if (!ap)
                return;
        SK_LOG(SK_DEBUG, "apply_stats", "prepares=%llu executes=%llu prepare_ms=%lld",
               (unsigned long long)ap->prepares, (unsigned long long)ap->executes,
               (long long)(ap->prepare_us / 1000));
        cons_apply_reset(ap);
        free(ap->binds);
        free(ap->vals);
        free(ap->mids);
        free(ap->mid_lens);
        free(ap->sqlbuf);
        free(ap);
}

static int64_t sk_mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static sk_err_t conn_err(cons_apply_t *ap, MYSQL_STMT *stmt, const char *what,
                         char *errstr, size_t errstr_size)
{
        sk_err_t err = sk_db_stmt_seterr(ap->db, stmt, what, errstr, errstr_size);

        ap->last_errno = stmt ? mysql_stmt_errno(stmt) : sk_db_errno(ap->db);
        /* A broken statement or connection invalidates the cache. */
        if (err == SK_EAGAIN)
                cons_apply_reset(ap);
        return err;
}

/* The prepared statement for (kind, n), from the cache or freshly prepared. */
static MYSQL_STMT *get_stmt(cons_apply_t *ap, int kind, int n, sk_err_t *err,
                            char *errstr, size_t errstr_size)
{
        cache_ent_t *victim = NULL;
        MYSQL_STMT *stmt;
        size_t len = 0;
        int i;

        if (!sk_db_connected(ap->db)) {
                sk_seterr(errstr, errstr_size, "no database connection");
                *err = SK_EAGAIN;
                return NULL;
        }
        /* Statements prepared on an earlier connection are gone with it (a reconnect
         * may even reuse the old handle's address, so compare generations). */
        if (ap->conn_gen != sk_db_generation(ap->db)) {
                cons_apply_reset(ap);
                ap->conn_gen = sk_db_generation(ap->db);
        }
        if (!sqls[kind].row)
                n = 1;
        for (i = 0; i < CACHE_SLOTS; i++) {
                if (ap->cache[i].stmt && ap->cache[i].kind == kind && ap->cache[i].n == n) {
                        ap->cache[i].used = ++ap->tick;
                        return ap->cache[i].stmt;
                }
                /* Victim: an empty slot, else the least recently used one. */
                if (!ap->cache[i].stmt) {
                        if (!victim || victim->stmt)
                                victim = &ap->cache[i];
                } else if (!victim || (victim->stmt && ap->cache[i].used < victim->used)) {
                        victim = &ap->cache[i];
                }
        }

        if (sqls[kind].row) {
                const char *row = sqls[kind].row;
                size_t rowlen = strlen(row);
                len = (size_t)snprintf(ap->sqlbuf, ap->sqlbuf_size, "%s", sqls[kind].head);
                for (i = 0; i < n && len + rowlen + 2 < ap->sqlbuf_size; i++) {
                        if (i)
                                ap->sqlbuf[len++] = ',';
                        memcpy(ap->sqlbuf + len, row, rowlen);
                        len += rowlen;
                }
                len += (size_t)snprintf(ap->sqlbuf + len, ap->sqlbuf_size - len, "%s", sqls[kind].tail);
        } else {
                len = (size_t)snprintf(ap->sqlbuf, ap->sqlbuf_size, "%s", sqls[kind].head);
        }
        if (sk_db_stmt_init(ap->db, &stmt, NULL, 0) != SK_OK) {
                *err = conn_err(ap, NULL, "stmt_init", errstr, errstr_size);
                return NULL;
        }
        ap->prepares++;
        {
                int64_t t0 = sk_mono_us();
                int rc = mysql_stmt_prepare(stmt, ap->sqlbuf, (unsigned long)len);
                ap->prepare_us += sk_mono_us() - t0;
                if (rc) {
                        *err = conn_err(ap, stmt, "prepare", errstr, errstr_size);
                        mysql_stmt_close(stmt);
                        return NULL;
                }
        }
        if (victim->stmt)
                mysql_stmt_close(victim->stmt);
        victim->kind = kind;
        victim->n = n;
        victim->stmt = stmt;
        victim->used = ++ap->tick;
        return stmt;
}

/* Fill binds/vals for @p n messages of statement @p kind. */
static void bind_rows(cons_apply_t *ap, int kind, const sk_order_msg_t *const *msgs, int n)
{
        int i, c = 0;

        memset(ap->binds, 0, sizeof(*ap->binds) * (size_t)n * (size_t)sqls[kind].cols);
        for (i = 0; i < n; i++) {
                const sk_order_msg_t *m = msgs[i];
                int64_t *v = &ap->vals[c];

                switch (kind) {
                case K_OUTCOME:
                        v[0] = m->trace_id; v[1] = m->order_id; v[2] = m->user_id; v[3] = m->voucher_id;
                        v[4] = m->bucket;
                        break;
                case K_ORDER:
                case K_ORDER_PAID:
                        v[0] = m->order_id; v[1] = m->user_id; v[2] = m->voucher_id; v[3] = m->trace_id;
                        v[4] = m->bucket;
                        v[5] = ap->price_minor;
                        v[6] = 0; /* currency: string bind below */
                        if (kind == K_ORDER)
                                v[7] = order_pay_timeout_s;
                        break;
                case K_ROUTER:
                        v[0] = m->order_id; v[1] = m->user_id; v[2] = m->voucher_id;
                        break;
                case K_KNOWN:
                        v[0] = m->trace_id;
                        break;
                case K_LOG:
                        v[0] = m->order_id; v[1] = m->user_id; v[2] = m->voucher_id;
                        v[3] = 0; /* message_id: string bind below */
                        v[4] = m->before_qty; v[5] = m->deduct_qty; v[6] = m->after_qty;
                        v[7] = m->trace_id;
                        ap->mid_lens[i] = sk_id_format(m->trace_id, ap->mids[i]);
                        break;
                }
                for (int j = 0; j < sqls[kind].cols; j++) {
                        if (kind == K_LOG && j == 3)
                                sk_db_bind_str(&ap->binds[c + j], ap->mids[i], &ap->mid_lens[i],
                                               sizeof(ap->mids[i]));
                        else if ((kind == K_ORDER || kind == K_ORDER_PAID) && j == 6)
                                sk_db_bind_str(&ap->binds[c + j], ap->currency, &ap->currency_len,
                                               sizeof(ap->currency));
                        else
                                sk_db_bind_i64(&ap->binds[c + j], &v[j]);
                }
                c += sqls[kind].cols;
        }
}

/* Execute a multi-row insert. *dup_key receives the key name of a 1062 when asked. */
static sk_err_t exec_rows(cons_apply_t *ap, int kind, const sk_order_msg_t *const *msgs, int n,
                          char *dup_key, size_t dup_key_size, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        MYSQL_STMT *stmt = get_stmt(ap, kind, n, &err, errstr, errstr_size);
        static const char *names[] = { [K_OUTCOME] = "insert outcome", [K_ORDER] = "insert order",
                                       [K_ORDER_PAID] = "insert order", [K_ROUTER] = "insert router",
                                       [K_LOG] = "insert log" };

        if (!stmt)
                return err;
        bind_rows(ap, kind, msgs, n);
        ap->executes++;
        if (mysql_stmt_bind_param(stmt, ap->binds) || mysql_stmt_execute(stmt)) {
                err = conn_err(ap, stmt, names[kind], errstr, errstr_size);
                if (err == SK_EEXIST && dup_key) {
                        /* "Duplicate entry '..' for key 'uk_voucher_user'" (MariaDB) or
                         * "for key 'tb_voucher_order.uk_voucher_user'" (MySQL 8). */
                        const char *msg = mysql_stmt_error(stmt);
                        const char *k = strstr(msg, "for key '");
                        dup_key[0] = '\0';
                        if (k) {
                                const char *dot, *end;
                                k += 9;
                                end = strchr(k, '\'');
                                dot = memchr(k, '.', end ? (size_t)(end - k) : strlen(k));
                                if (dot)
                                        k = dot + 1;
                                snprintf(dup_key, dup_key_size, "%.*s",
                                         end ? (int)(end - k) : (int)strlen(k), k);
                        }
                }
        }
        return err;
}

/* UPDATE bucket row stock = stock - k WHERE voucher_id = ? AND bucket = ? AND stock >= k;
 * *affected set. */
static sk_err_t exec_decrement(cons_apply_t *ap, int64_t voucher_id, int bucket, int64_t k,
                               int *affected, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        MYSQL_STMT *stmt = get_stmt(ap, K_STOCK, 1, &err, errstr, errstr_size);
        MYSQL_BIND b[4];
        int64_t v[4] = { k, voucher_id, bucket, k };

        if (!stmt)
                return err;
        memset(b, 0, sizeof(b));
        for (int i = 0; i < 4; i++)
                sk_db_bind_i64(&b[i], &v[i]);
        if (mysql_stmt_bind_param(stmt, b) || mysql_stmt_execute(stmt))
                return conn_err(ap, stmt, "decrement stock", errstr, errstr_size);
        *affected = (int)mysql_stmt_affected_rows(stmt);
        return SK_OK;
}

static sk_err_t failpoint_err(const char *name, char *errstr, size_t errstr_size)
{
        if (SK_FAILPOINT(name)) {
                sk_seterr(errstr, errstr_size, "failpoint %s", name);
                return SK_EFAIL;
        }
        return SK_OK;
}

/* BEGIN. A transient error means a broken connection, which invalidates the cached
 * prepared statements (as in conn_err): drop them. */
static sk_err_t txn_begin(cons_apply_t *ap, char *errstr, size_t errstr_size)
{
        sk_err_t err = sk_db_begin(ap->db, errstr, errstr_size);

        if (err == SK_EAGAIN)
                cons_apply_reset(ap);
        return err;
}

/* The consumer.before_commit failpoint, then COMMIT with the classes of DESIGN.md 16
 * (sk/db_outcome.h): SK_EAGAIN 1213/1205, rolled back (ap->last_errno tells which);
 * SK_EUNKNOWN any other error or a lost link (the connection is dropped: the cached
 * statements with it). On an error the caller rolls back (a no-op when dropped). */
static sk_err_t txn_commit(cons_apply_t *ap, char *errstr, size_t errstr_size)
{
        sk_err_t err;

        if ((err = failpoint_err("consumer.before_commit", errstr, errstr_size)))
                return err;
        err = sk_db_commit_outcome(ap->db, errstr, errstr_size);
        if (err != SK_OK) {
                ap->last_errno = sk_db_connected(ap->db) ? sk_db_errno(ap->db) : 2013u;
                cons_apply_reset(ap);
        }
        return err;
}

unsigned int cons_apply_last_errno(const cons_apply_t *ap)
{
        return ap->last_errno;
}

int cons_apply_outcome_exists(const cons_apply_t *ap)
{
        return ap->outcome_exists;
}

/* Binds @p in and @p out to @p stmt, executes it and fetches its first row. @returns the
 * fetch's code (0, MYSQL_NO_DATA or MYSQL_DATA_TRUNCATED; the caller then frees the
 * result), or -1 with *err set by conn_err (@p what names the statement in the message;
 * the result is freed already). */
static int exec_fetch_first(cons_apply_t *ap, MYSQL_STMT *stmt, MYSQL_BIND *in, MYSQL_BIND *out,
                            const char *what, sk_err_t *err, char *errstr, size_t errstr_size)
{
        int rc;

        if (mysql_stmt_bind_param(stmt, in) || mysql_stmt_execute(stmt) ||
            mysql_stmt_bind_result(stmt, out)) {
                *err = conn_err(ap, stmt, what, errstr, errstr_size);
                return -1;
        }
        rc = mysql_stmt_fetch(stmt);
        if (rc == 1) {
                *err = conn_err(ap, stmt, what, errstr, errstr_size);
                mysql_stmt_free_result(stmt);
                return -1;
        }
        return rc;
}

/* The stock of bucket @p bucket of @p voucher_id by statement @p kind (K_GETSTOCK). */
static sk_err_t read_stock(cons_apply_t *ap, int kind, int64_t voucher_id, int bucket,
                           int64_t *stock, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        MYSQL_STMT *stmt = get_stmt(ap, kind, 1, &err, errstr, errstr_size);
        MYSQL_BIND in[2], out[1];
        int64_t vid = voucher_id, bk = bucket, s = 0;
        int rc;

        if (!stmt)
                return err;
        memset(in, 0, sizeof(in));
        memset(out, 0, sizeof(out));
        sk_db_bind_i64(&in[0], &vid);
        sk_db_bind_i64(&in[1], &bk);
        sk_db_bind_i64(&out[0], &s);
        rc = exec_fetch_first(ap, stmt, in, out, "read stock", &err, errstr, errstr_size);
        if (rc == -1)
                return err;
        if (rc == MYSQL_NO_DATA) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " bucket %d not in tb_seckill_stock",
                          voucher_id, bucket);
                err = SK_ENOTFOUND;
        } else {
                *stock = s;
                err = SK_OK;
        }
        mysql_stmt_free_result(stmt);
        return err;
}

sk_err_t cons_apply_stock(cons_apply_t *ap, int64_t voucher_id, int bucket, int64_t *stock,
                          char *errstr, size_t errstr_size)
{
        return read_stock(ap, K_GETSTOCK, voucher_id, bucket, stock, errstr, errstr_size);
}

/* The price and currency of @p voucher_id into ap->price_minor and ap->currency (K_PRICE,
 * one primary-key read in the caller's transaction; both are fixed at the voucher's
 * creation, DESIGN.md 13). @returns SK_OK, SK_ENOTFOUND (no voucher row), or the classes
 * of conn_err. */
static sk_err_t read_price(cons_apply_t *ap, int64_t voucher_id, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        MYSQL_STMT *stmt = get_stmt(ap, K_PRICE, 1, &err, errstr, errstr_size);
        MYSQL_BIND in[1], out[2];
        int64_t vid = voucher_id, price = 0;
        char cur[sizeof(ap->currency)];
        unsigned long cur_len = 0;
        int rc;

        if (!stmt)
                return err;
        memset(in, 0, sizeof(in));
        memset(out, 0, sizeof(out));
        sk_db_bind_i64(&in[0], &vid);
        sk_db_bind_i64(&out[0], &price);
        sk_db_bind_str(&out[1], cur, &cur_len, sizeof(cur));
        rc = exec_fetch_first(ap, stmt, in, out, "read price", &err, errstr, errstr_size);
        if (rc == -1)
                return err;
        if (rc == MYSQL_NO_DATA) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " not in tb_seckill_voucher",
                          voucher_id);
                err = SK_ENOTFOUND;
        } else if (rc == MYSQL_DATA_TRUNCATED || cur_len >= sizeof(ap->currency)) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 ": currency longer than %zu bytes",
                          voucher_id, sizeof(ap->currency) - 1);
                err = SK_EDB;
        } else {
                ap->price_minor = price;
                memcpy(ap->currency, cur, cur_len);
                ap->currency[cur_len] = '\0';
                ap->currency_len = cur_len;
                err = SK_OK;
        }
        mysql_stmt_free_result(stmt);
        return err;
}

/* The order statement for the price just read (DESIGN.md 13): PAID at creation only
 * with a pay timeout of 0 and a price of 0, else UNPAID with a deadline. */
static int order_kind(const cons_apply_t *ap)
{
        return order_free_paid && ap->price_minor == 0 ? K_ORDER_PAID : K_ORDER;
}

/* Fetch the rows of the K_KNOWN statement into @p out. */
static sk_err_t fetch_known(cons_apply_t *ap, MYSQL_STMT *stmt, sk_outcome_t *out, int cap,
                            int *nout, char *errstr, size_t errstr_size)
{
        MYSQL_BIND res[6];
        int64_t v[5] = { 0 };
        char reason[64];
        unsigned long reason_len = 0;
        int rc;

        memset(res, 0, sizeof(res));
        for (int i = 0; i < 5; i++)
                sk_db_bind_i64(&res[i], &v[i]);
        sk_db_bind_str(&res[5], reason, &reason_len, sizeof(reason));
        if (mysql_stmt_bind_result(stmt, res))
                return conn_err(ap, stmt, "outcome pre-check", errstr, errstr_size);
        while ((rc = mysql_stmt_fetch(stmt)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
                sk_outcome_t *o = &out[*nout];
                if (*nout == cap)
                        break;
                memset(o, 0, sizeof(*o));
                o->trace_id = v[0]; o->order_id = v[1]; o->user_id = v[2]; o->voucher_id = v[3];
                o->outcome = (int)v[4];
                snprintf(o->reason_str, sizeof(o->reason_str), "%.*s",
                         (int)(reason_len < sizeof(reason) ? reason_len : sizeof(reason) - 1), reason);
                if (!o->reason_str[0] || sk_reason_parse(o->reason_str, &o->reason) != 0)
                        o->reason = SK_REASON_NONE;
                (*nout)++;
        }
        if (rc == 1)
                return conn_err(ap, stmt, "outcome pre-check", errstr, errstr_size);
        return SK_OK;
}

sk_err_t cons_apply_known(cons_apply_t *ap, const sk_order_msg_t *const *msgs, int n,
                          sk_outcome_t *out, int *nout, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;
        MYSQL_STMT *stmt;

        *nout = 0;
        if (n < 1 || n > ap->cap) {
                sk_seterr(errstr, errstr_size, "pre-check of %d (max %d)", n, ap->cap);
                return SK_EINVAL;
        }
        if (!(stmt = get_stmt(ap, K_KNOWN, n, &err, errstr, errstr_size)))
                return err;
        bind_rows(ap, K_KNOWN, msgs, n);
        ap->executes++;
        if (mysql_stmt_bind_param(stmt, ap->binds) || mysql_stmt_execute(stmt))
                return conn_err(ap, stmt, "outcome pre-check", errstr, errstr_size);
        err = fetch_known(ap, stmt, out, n, nout, errstr, errstr_size);
        mysql_stmt_free_result(stmt);
        return err;
}

sk_err_t cons_apply_batch(cons_apply_t *ap, const sk_order_msg_t *const *msgs, int n,
                          char *errstr, size_t errstr_size)
{
        int64_t k = 0;
        int affected = 0, i;
        sk_err_t err;

        ap->last_errno = 0;
        ap->outcome_exists = 0;
        if (n < 1 || n > ap->cap) {
                sk_seterr(errstr, errstr_size, "batch of %d (max %d)", n, ap->cap);
                return SK_EINVAL;
        }
        for (i = 0; i < n; i++) {
                /* Checked before summing: the merged decrement never overflows. */
                if (msgs[i]->deduct_qty < 1 || msgs[i]->deduct_qty > INT64_MAX - k) {
                        sk_seterr(errstr, errstr_size, "deductQty %" PRId64 " of message %d out of range",
                                  msgs[i]->deduct_qty, i);
                        return SK_EINVAL;
                }
                k += msgs[i]->deduct_qty;
        }
        if ((err = txn_begin(ap, errstr, errstr_size)))
                return err == SK_EAGAIN ? SK_EAGAIN : SK_EDB;
        /* First, before any row lock is taken: a missing voucher row (SK_ENOTFOUND) falls
         * back to one message at a time like a missing bucket row. */
        if ((err = read_price(ap, msgs[0]->voucher_id, errstr, errstr_size)))
                goto fail;
        if ((err = exec_rows(ap, K_OUTCOME, msgs, n, NULL, 0, errstr, errstr_size))) {
                /* The table's only unique key is trace_id: someone decided first. */
                ap->outcome_exists = err == SK_EEXIST;
                goto fail;
        }
        if ((err = failpoint_err("consumer.between_statements", errstr, errstr_size)))
                goto fail;
        if ((err = exec_decrement(ap, msgs[0]->voucher_id, msgs[0]->bucket, k, &affected,
                                  errstr, errstr_size)))
                goto fail;
        if (affected != 1) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 " bucket %d: stock below %" PRId64
                          " (or no bucket row)", msgs[0]->voucher_id, msgs[0]->bucket, k);
                err = SK_ENOTFOUND;
                goto fail;
        }
        if ((err = exec_rows(ap, order_kind(ap), msgs, n, NULL, 0, errstr, errstr_size)) ||
            (err = exec_rows(ap, K_ROUTER, msgs, n, NULL, 0, errstr, errstr_size)) ||
            (err = exec_rows(ap, K_LOG, msgs, n, NULL, 0, errstr, errstr_size)))
                goto fail;
        if ((err = txn_commit(ap, errstr, errstr_size)))
                goto fail;
        /* Committed. An `error` here makes the caller retry: it then meets its own
         * outcomes (the duplicate path), as after a crash. */
        if (failpoint_err("consumer.after_commit", errstr, errstr_size))
                return SK_EAGAIN;
        return SK_OK;
fail:
        sk_db_rollback(ap->db);
        if (err == SK_EFAIL)
                return SK_EAGAIN;
        if (err == SK_EAGAIN || err == SK_EEXIST || err == SK_ENOTFOUND || err == SK_EUNKNOWN)
                return err;
        return SK_EDB;
}

cons_apply_res_t cons_apply_one(cons_apply_t *ap, const sk_order_msg_t *msg,
                                char *errstr, size_t errstr_size)
{
        const sk_order_msg_t *one[1] = { msg };
        char dup_key[80];
        int affected = 0;
        cons_apply_res_t res = APPLY_ERROR;
        sk_err_t err;

        if ((err = txn_begin(ap, errstr, errstr_size)))
                return err == SK_EAGAIN ? APPLY_TRANSIENT : APPLY_ERROR;
        if ((err = read_price(ap, msg->voucher_id, errstr, errstr_size))) {
                sk_db_rollback(ap->db);
                return err == SK_ENOTFOUND ? APPLY_NO_VOUCHER
                       : err == SK_EAGAIN ? APPLY_TRANSIENT : APPLY_ERROR;
        }
        err = exec_rows(ap, K_OUTCOME, one, 1, NULL, 0, errstr, errstr_size);
        if (err == SK_EEXIST) {
                res = APPLY_DUP;
                goto rollback;
        }
        if (err)
                goto fail;
        if ((err = failpoint_err("consumer.between_statements", errstr, errstr_size)))
                goto fail;
        if ((err = exec_decrement(ap, msg->voucher_id, msg->bucket, msg->deduct_qty, &affected,
                                  errstr, errstr_size)))
                goto fail;
        if (affected != 1) {
                int64_t stock = 0;
                sk_db_rollback(ap->db);
                /* The UPDATE's affected-row count is this node's view; on Galera the
                 * sold_out decision is confirmed by a read that waits for every write set
                 * committed before it (wsrep_sync_wait = 1, DESIGN.md 16 (d)), so a
                 * restock certified on another node is not decided sold out. */
                err = sk_db_sync_reads(ap->db, errstr, errstr_size);
                if (err == SK_OK)
                        err = cons_apply_stock(ap, msg->voucher_id, msg->bucket, &stock, errstr,
                                               errstr_size);
                sk_db_sync_reads_end(ap->db);
                if (err == SK_ENOTFOUND)
                        return APPLY_NO_VOUCHER;
                if (err == SK_EAGAIN)
                        return APPLY_TRANSIENT;
                if (err)
                        return APPLY_ERROR;
                if (stock >= msg->deduct_qty) {
                        /* Raced with a restock between the statements: try again. */
                        sk_seterr(errstr, errstr_size, "stock changed under the transaction");
                        return APPLY_TRANSIENT;
                }
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 ": DB stock %" PRId64
                          " < %" PRId64, msg->voucher_id, stock, msg->deduct_qty);
                return APPLY_NO_STOCK;
        }
        err = exec_rows(ap, order_kind(ap), one, 1, dup_key, sizeof(dup_key), errstr, errstr_size);
        if (err == SK_EEXIST) {
                res = strcmp(dup_key, "uk_voucher_user") == 0 ? APPLY_HAS_ORDER : APPLY_COLLISION;
                goto rollback;
        }
        if (err)
                goto fail;
        err = exec_rows(ap, K_ROUTER, one, 1, NULL, 0, errstr, errstr_size);
        if (err == SK_EEXIST) {
                res = APPLY_COLLISION;
                goto rollback;
        }
        if (err)
                goto fail;
        if ((err = exec_rows(ap, K_LOG, one, 1, NULL, 0, errstr, errstr_size)))
                goto fail;
        if ((err = txn_commit(ap, errstr, errstr_size)))
                return err == SK_EUNKNOWN ? APPLY_UNKNOWN : APPLY_TRANSIENT;
        if (failpoint_err("consumer.after_commit", errstr, errstr_size))
                return APPLY_TRANSIENT;
        return APPLY_OK;
rollback:
        sk_db_rollback(ap->db);
        return res;
fail:
        sk_db_rollback(ap->db);
        return (err == SK_EAGAIN || err == SK_EFAIL) ? APPLY_TRANSIENT : APPLY_ERROR;
}
