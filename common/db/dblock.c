/* dblock.c: advisory locks as rows of tb_lock (contract in sk/dblock.h; DESIGN.md 16
 * (1); the table in ddl/0007_lock.sql).
 *
 * Every statement binds its values (the name and the holder as strings, the ttl as an
 * integer; sk/db.h). Error handling, per statement:
 *   1213 / 1205 (and the other transient codes that say the statement did not apply,
 *   sk_db_classify) -> short sleep, the same statement again (TRANSIENT_TRIES);
 *   2006 / 2013 / not connected (the write may or may not have applied: unknown outcome)
 *   -> reconnect our own session and read the row: holder = us decides (DESIGN.md 16).
 * On Galera every statement of the lock's session first waits until its node has applied
 * what the cluster committed before it (wsrep_sync_wait, sync_session below): a
 * conditional UPDATE judged on a node that has not yet applied another node's release or
 * take matches no row, so it writes nothing and certification never sees it.
 * What it does not do: log, wait beyond the caller's wait_ms, or fence writes made after
 * the ttl ran out (sk/dblock.h: the ttl is chosen far above one write chunk). */
#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sk/clock.h"
#include "sk/dblock.h"
#include "sk/dblock_holder.h"
#include "sk/db_outcome.h"
#include "sk/log.h"

#define TRANSIENT_TRIES 4       /* attempts of one statement on 1213/1205 */
#define TRANSIENT_SLEEP_MS 20   /* x attempt number */
#define POLL_MS 100             /* sk_dblock_take's wait */
#define LOCK_DB_LOCKWAIT_S 5
#define LOCK_DB_IO_S 5
/* wsrep_sync_wait bits: 1 reads, 2 UPDATE and DELETE, 4 INSERT and REPLACE. */
#define LOCK_SYNC_WAIT_SQL "SET SESSION wsrep_sync_wait = 7"

struct sk_dblock {
        sk_db_t *db;                            /* owned */
        char name[SK_DBLOCK_NAME_MAX + 1];
        char holder[SK_DBLOCK_HOLDER_MAX + 1];
        int ttl_ms;
        int held;
        int busy;       /* the last take failed because another holder had a live row */
        uint64_t sync_gen; /* sk_db_generation when LOCK_SYNC_WAIT_SQL ran; 0: not set */
};

static const char CREATE_SQL[] =
        "CREATE TABLE IF NOT EXISTS tb_lock ("
        " name VARCHAR(191) NOT NULL PRIMARY KEY,"
        " holder VARCHAR(255) NOT NULL DEFAULT '',"
        " until DATETIME(3) NOT NULL,"
        " seq BIGINT NOT NULL DEFAULT 0,"
        " taken_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci";

/* ddl/0011_lock_holder.sql's statement (the same text: running both is harmless). */
static const char WIDEN_SQL[] =
        "ALTER TABLE tb_lock MODIFY COLUMN holder VARCHAR(255) NOT NULL DEFAULT '' COMMENT "
        "'host:boot_id:pid:start_ticks:seq of the holder, or of the last one'";

/* This host's name as a holder writes it (65 bytes). */
static void holder_host(char host[65])
{
        snprintf(host, 65, "unknown");
        (void)gethostname(host, 64);
        host[64] = '\0';
        for (char *p = host; *p; p++) {
                if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
                        *p = '_';   /* plain characters, readable in a log line */
        }
}

void sk_dblock_make_holder(char *out, size_t size)
{
        static _Atomic int64_t last_start_ms;
        char host[65];
        int64_t start_ms = sk_now_ms(), prev = atomic_load(&last_start_ms);

        do {
                if (start_ms <= prev)
                        start_ms = prev + 1;
        } while (!atomic_compare_exchange_weak(&last_start_ms, &prev, start_ms));

        holder_host(host);
        snprintf(out, size, "%s:%ld:%" PRId64, host, (long)getpid(), start_ms);
}

/* 1 if holder @p who names a process that provably no longer runs (sk/dblock_holder.h,
 * DESIGN.md 16 (f): same host and boot id, and its pid gone or reused): a crashed run
 * (SIGKILL, OOM) whose row would otherwise block every next run until its ttl (a
 * reconciler killed mid-pass blocked the next passes for 60 s, each exiting 0 as
 * "already running"). Everything else waits for the ttl. */
static int holder_dead_here(const char *who)
{
        sk_dblock_holder_t self;

        sk_dblock_holder_self(&self);
        return sk_dblock_holder_dead(who, &self, sk_dblock_holder_probe_proc, NULL);
}

void sk_dblock_fit_name(const char *name, char *out, size_t out_size)
{
        size_t len = strlen(name);
        uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a 64 offset basis */

        if (len <= SK_DBLOCK_NAME_MAX) {
                snprintf(out, out_size, "%s", name);
                return;
        }
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)name[i];
                h *= UINT64_C(1099511628211);        /* FNV-1a 64 prime */
        }
        snprintf(out, out_size, "%.*s:%016" PRIx64, SK_DBLOCK_NAME_MAX - 17, name, h);
}

sk_err_t sk_dblock_ensure_table(sk_db_t *db, char *errstr, size_t errstr_size)
{
        int64_t width = 0;
        int is_null = 0;
        sk_err_t err;

        if ((err = sk_db_exec(db, CREATE_SQL, errstr, errstr_size)) != SK_OK)
                return err;
        /* A tb_lock of ddl/0007 (holder VARCHAR(128)) is widened here, before the migration
         * lock is taken: a holder may be longer than 128 bytes, and ddl/0011, which widens
         * it too, runs only under that lock. Read first, so a table already wide takes no
         * DDL (on Galera a DDL stalls the whole cluster for its length). */
        err = sk_db_query_i64(db, "SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS "
                              "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_lock' AND "
                              "COLUMN_NAME = 'holder'", &width, &is_null, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (width >= SK_DBLOCK_HOLDER_MAX)
                return SK_OK;
        return sk_db_exec(db, WIDEN_SQL, errstr, errstr_size);
}

/* 1 when the last error on the lock's session may have left a write applied or not:
 * the connection broke (DESIGN.md 16: lost connection at an autocommit write). A prepared
 * statement's error number is the statement's, not the connection's, so a session that
 * no longer answers a ping counts as broken too. */
static int lost_link(sk_db_t *db)
{
        unsigned int e = sk_db_errno(db);

        return !sk_db_connected(db) || e == 2006 || e == 2013 || e == 2055 || e == 1927 ||
               e == 1053 || e == 4031 || !sk_db_ping(db);
}

/* On a Galera node, make the lock's session wait before each statement until the node
 * has applied every write set the cluster committed before it (DESIGN.md 16 (1): a lock
 * row is judged by conditional statements, which must see the cluster's latest row, not
 * the node's). Without it a take on one node right after a release on another matched
 * the stale live row and answered busy (integration 0216 on Galera), and an INSERT of a
 * row another node had just inserted could fail certification (1213, retried). Once
 * per connection (sk_db_generation); resolve() resets the variable and clears sync_gen.
 * Transient errors as sk_db_exec. */
static sk_err_t sync_session(sk_dblock_t *lk, char *errstr, size_t errstr_size)
{
        uint64_t gen = sk_db_generation(lk->db);
        sk_err_t err;

        if (!sk_db_connected(lk->db) || !sk_db_wsrep_on(lk->db) || lk->sync_gen == gen)
                return SK_OK;   /* not connected: the statement itself fails and says so */
        if ((err = sk_db_exec(lk->db, LOCK_SYNC_WAIT_SQL, errstr, errstr_size)) == SK_OK)
                lk->sync_gen = gen;
        return err;
}

/* Run @p sql with @p args[0..nargs) bound (the lock's name, holder, ttl), retrying
 * 1213/1205 and their kin. *affected = rows changed. */
static sk_err_t exec_lock(sk_dblock_t *lk, const char *sql, const sk_db_arg_t *args, int nargs,
                          int64_t *affected, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_EAGAIN;

        for (int attempt = 1; attempt <= TRANSIENT_TRIES; attempt++) {
                *affected = 0;
                err = sync_session(lk, errstr, errstr_size);
                if (err == SK_OK)
                        err = sk_db_exec_args(lk->db, sql, args, nargs, affected, errstr, errstr_size);
                if (err != SK_EAGAIN || lost_link(lk->db))
                        return err;
                sk_sleep_ms(TRANSIENT_SLEEP_MS * attempt, NULL);
        }
        return err;
}

/* Read the row: *ours = holder is ours, *live = until >= NOW(3), *ms_left = until -
 * NOW(3) in ms, the holder into @p who. SK_ENOTFOUND: no row. */
static sk_err_t read_row(sk_dblock_t *lk, int *ours, int *live, int64_t *ms_left, char *who,
                         size_t who_size, char *errstr, size_t errstr_size)
{
        char holder[SK_DBLOCK_HOLDER_MAX + 1];
        int64_t v[3];
        const sk_db_col_t cols[4] = { SK_COL_I64(&v[0]), SK_COL_I64(&v[1]), SK_COL_I64(&v[2]),
                                      SK_COL_STR(holder, sizeof(holder)) };
        unsigned nulls = 0;
        sk_err_t err;

        if ((err = sync_session(lk, errstr, errstr_size)) != SK_OK)
                return err;
        err = sk_db_row1_cols(lk->db, "SELECT holder = ?, until >= NOW(3), "
                              "TIMESTAMPDIFF(MICROSECOND, NOW(3), until) DIV 1000, holder "
                              "FROM tb_lock WHERE name = ?",
                              SK_ARGS(SK_STR(lk->holder), SK_STR(lk->name)), cols, 4, &nulls,
                              errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (nulls & 7u)
                return SK_ENOTFOUND;
        *ours = v[0] == 1;
        *live = v[1] == 1;
        *ms_left = v[2];
        if (who)
                snprintf(who, who_size, "%s", holder);
        return SK_OK;
}

/* After a write whose outcome is unknown: reconnect (sk_db_resolve_begin) and read whether
 * the row names us.
 * @returns SK_OK with *ours, or SK_EAGAIN (could not tell). */
static sk_err_t resolve(sk_dblock_t *lk, int *ours, char *errstr, size_t errstr_size)
{
        int live = 0;
        int64_t left = 0;
        sk_err_t err;

        *ours = 0;
        /* A fresh session; on Galera with wsrep_sync_wait = 1, so the read sees every write
         * set the cluster committed before it (DESIGN.md 16 "Errors"). */
        if ((err = sk_db_resolve_begin(lk->db, errstr, errstr_size)) != SK_OK)
                return SK_EAGAIN;
        err = read_row(lk, ours, &live, &left, NULL, 0, errstr, errstr_size);
        sk_db_resolve_end(lk->db);
        lk->sync_gen = 0;       /* resolve_end set wsrep_sync_wait back to DEFAULT */
        if (err == SK_ENOTFOUND)
                return SK_OK;
        return err == SK_OK ? SK_OK : SK_EAGAIN;
}

sk_dblock_t *sk_dblock_open(const sk_mysql_url_t *url, const char *name, int ttl_ms,
                            char *errstr, size_t errstr_size)
{
        sk_dblock_t *lk;

        if (!url || !name || !*name || ttl_ms < 1000 || ttl_ms > 3600000) {
                sk_seterr(errstr, errstr_size, "sk_dblock_open: invalid argument (name \"%.64s\", "
                          "ttl %d ms)", name ? name : "", ttl_ms);
                return NULL;
        }
        if (!(lk = calloc(1, sizeof(*lk)))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        sk_dblock_fit_name(name, lk->name, sizeof(lk->name));
        sk_dblock_holder_make(lk->holder, sizeof(lk->holder));
        lk->ttl_ms = ttl_ms;
        if (!(lk->db = sk_db_connect_io(url, 0, LOCK_DB_LOCKWAIT_S, LOCK_DB_IO_S, errstr,
                                        errstr_size))) {
                free(lk);
                return NULL;
        }
        return lk;
}

/* One try. *got = 1 when the row is ours now. */
static sk_err_t take_once(sk_dblock_t *lk, int *got, char *errstr, size_t errstr_size)
{
        const int64_t ttl_us = (int64_t)lk->ttl_ms * 1000;
        int64_t changed = 0;
        sk_err_t err;

        *got = 0;
        err = exec_lock(lk, "INSERT INTO tb_lock (name, holder, until, seq) VALUES (?, '', "
                        "'1970-01-01 00:00:01.000', 0) ON DUPLICATE KEY UPDATE name = name",
                        SK_ARGS(SK_STR(lk->name)), &changed, errstr, errstr_size);
        if (err != SK_OK && lost_link(lk->db))
                (void)sk_db_reconnect(lk->db, NULL, 0); /* nothing to resolve: idempotent */
        if (err != SK_OK) {
                if (err == SK_EDB && strstr(errstr ? errstr : "", "error 1146"))
                        sk_seterr(errstr, errstr_size, "tb_lock is missing (run `seckill-admin "
                                  "db migrate`)");
                return err;
        }
        err = exec_lock(lk, "UPDATE tb_lock SET holder = ?, until = NOW(3) + INTERVAL ? MICROSECOND, "
                        "seq = seq + 1, taken_at = NOW(3) WHERE name = ? AND (holder = ? OR "
                        "until < NOW(3))", SK_ARGS(SK_STR(lk->holder), SK_I64(ttl_us),
                                                   SK_STR(lk->name), SK_STR(lk->holder)),
                        &changed, errstr, errstr_size);
        if (err != SK_OK && lost_link(lk->db))
                return resolve(lk, got, errstr, errstr_size);
        *got = err == SK_OK && changed == 1;
        if (err == SK_OK && !*got) {
                /* Held live by someone else: a process of this host that died is taken
                 * over at once, by a compare-and-set on its holder string. */
                char who[SK_DBLOCK_HOLDER_MAX + 1] = "";
                int ours = 0, live = 0;
                int64_t left = 0;

                if (read_row(lk, &ours, &live, &left, who, sizeof(who), NULL, 0) == SK_OK &&
                    live && !ours && who[0] && holder_dead_here(who)) {
                        err = exec_lock(lk, "UPDATE tb_lock SET holder = ?, until = NOW(3) + "
                                        "INTERVAL ? MICROSECOND, seq = seq + 1, taken_at = NOW(3) "
                                        "WHERE name = ? AND holder = ?",
                                        SK_ARGS(SK_STR(lk->holder), SK_I64(ttl_us),
                                                SK_STR(lk->name), SK_STR(who)),
                                        &changed, errstr, errstr_size);
                        if (err != SK_OK && lost_link(lk->db))
                                return resolve(lk, got, errstr, errstr_size);
                        *got = err == SK_OK && changed == 1;
                        if (*got)
                                SK_LOG(SK_WARN, "dblock_taken_from_dead_holder", "name=%s dead=%s",
                                       lk->name, who);
                }
        }
        return err;
}

sk_err_t sk_dblock_take(sk_dblock_t *lk, int wait_ms, char *errstr, size_t errstr_size)
{
        int64_t deadline = sk_mono_ms() + (wait_ms > 0 ? wait_ms : 0);
        char who[SK_DBLOCK_HOLDER_MAX + 1] = "";
        int64_t left = 0;
        int got = 0, ours = 0, live = 0;
        sk_err_t err;

        if (!lk) {
                sk_seterr(errstr, errstr_size, "sk_dblock_take: no lock");
                return SK_EINVAL;
        }
        lk->busy = 0;
        for (;;) {
                err = take_once(lk, &got, errstr, errstr_size);
                if (err == SK_OK && got) {
                        lk->held = 1;
                        return SK_OK;
                }
                if (err != SK_OK && err != SK_EAGAIN)
                        return err;
                if (sk_mono_ms() >= deadline)
                        break;
                sk_sleep_ms(POLL_MS, NULL);
        }
        if (err != SK_OK)
                return err;
        lk->busy = 1;
        if (read_row(lk, &ours, &live, &left, who, sizeof(who), NULL, 0) == SK_OK)
                sk_seterr(errstr, errstr_size, "lock %s is held by %s for another %" PRId64
                          " ms (waited %d ms)", lk->name, who, left, wait_ms);
        else
                sk_seterr(errstr, errstr_size, "lock %s is held by another holder (waited %d ms)",
                          lk->name, wait_ms);
        return SK_EAGAIN;
}

sk_err_t sk_dblock_check(sk_dblock_t *lk, char *errstr, size_t errstr_size)
{
        int64_t changed = 0;
        int ours = 0;
        sk_err_t err = SK_EAGAIN;

        if (!lk || !lk->held) {
                sk_seterr(errstr, errstr_size, "lock %s is not held", lk ? lk->name : "?");
                return SK_ENOTFOUND;
        }
        /* At most two rounds: an unknown outcome resolved as "still ours" renews again. */
        for (int round = 0; round < 2; round++) {
                err = exec_lock(lk, "UPDATE tb_lock SET until = NOW(3) + INTERVAL ? MICROSECOND, "
                                "seq = seq + 1 WHERE name = ? AND holder = ?",
                                SK_ARGS(SK_I64((int64_t)lk->ttl_ms * 1000), SK_STR(lk->name),
                                        SK_STR(lk->holder)), &changed, errstr, errstr_size);
                if (err == SK_OK && changed == 1)
                        return SK_OK;
                if (err == SK_OK) {
                        lk->held = 0;
                        sk_seterr(errstr, errstr_size, "lock %s lost: the row no longer names "
                                  "holder %s", lk->name, lk->holder);
                        return SK_ENOTFOUND;
                }
                if (!lost_link(lk->db))
                        return err == SK_EAGAIN ? SK_EAGAIN : err;
                if ((err = resolve(lk, &ours, errstr, errstr_size)) != SK_OK)
                        return SK_EAGAIN;
                if (!ours) {
                        lk->held = 0;
                        sk_seterr(errstr, errstr_size, "lock %s lost: the row no longer names "
                                  "holder %s", lk->name, lk->holder);
                        return SK_ENOTFOUND;
                }
        }
        sk_seterr(errstr, errstr_size, "lock %s: renewal outcome unknown twice", lk->name);
        return SK_EAGAIN;
}

sk_err_t sk_dblock_recheck(sk_dblock_t *lk, char *errstr, size_t errstr_size)
{
        int ours = 0, live = 0;
        int64_t left = 0;

        if (lk && lk->held &&
            read_row(lk, &ours, &live, &left, NULL, 0, NULL, 0) == SK_OK && ours && live &&
            left > lk->ttl_ms / 2)
                return SK_OK;
        return sk_dblock_check(lk, errstr, errstr_size);
}

void sk_dblock_release(sk_dblock_t *lk)
{
        int64_t changed = 0;

        if (!lk || !lk->held)
                return;
        lk->held = 0;
        (void)exec_lock(lk, "UPDATE tb_lock SET until = NOW(3) - INTERVAL 1000 MICROSECOND, "
                        "seq = seq + 1 WHERE name = ? AND holder = ?",
                        SK_ARGS(SK_STR(lk->name), SK_STR(lk->holder)), &changed, NULL, 0);
}

void sk_dblock_close(sk_dblock_t *lk)
{
        if (!lk)
                return;
        sk_dblock_release(lk);
        sk_db_close(lk->db);
        free(lk);
}

int sk_dblock_held(const sk_dblock_t *lk)
{
        return lk && lk->held;
}

int sk_dblock_busy(const sk_dblock_t *lk)
{
        return lk && lk->busy;
}

const char *sk_dblock_holder(const sk_dblock_t *lk)
{
        return lk ? lk->holder : "";
}

sk_err_t sk_dblock_live(sk_db_t *db, const char *name, int *live, char *holder,
                        size_t holder_size, char *errstr, size_t errstr_size)
{
        char who[SK_DBLOCK_HOLDER_MAX + 1];
        const sk_db_col_t col = SK_COL_STR(who, sizeof(who));
        sk_err_t err;

        *live = 0;
        if (holder && holder_size)
                holder[0] = '\0';
        char fitted[SK_DBLOCK_NAME_MAX + 1];

        if (!name || !*name) {
                sk_seterr(errstr, errstr_size, "sk_dblock_live: invalid name");
                return SK_EINVAL;
        }
        sk_dblock_fit_name(name, fitted, sizeof(fitted));
        err = sk_db_row1_cols(db, "SELECT holder FROM tb_lock WHERE name = ? AND until >= NOW(3)",
                              SK_ARGS(SK_STR(fitted)), &col, 1, NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND)
                return SK_OK;
        if (err != SK_OK)
                return err;
        *live = 1;
        if (holder && holder_size)
                snprintf(holder, holder_size, "%s", who);
        return SK_OK;
}
