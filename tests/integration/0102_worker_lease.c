/* 0102_worker_lease.c: snowflake worker-id leases in the real MariaDB (DESIGN.md 2):
 * acquire and renew by conditional UPDATEs judged by NOW(3), the lowest usable id,
 * a far-future mint_until skipped, exclusive ids across processes, loss when another
 * holder steals an expired lease (logged once, counted) and re-acquisition, the mint
 * bounds under injected clock offsets (the sk_idgen_opts_t test hook), a taken
 * SECKILL_WORKER_ID -> exit 2, release on stop, renewals blocked by the database (minting
 * stops at mint_until, reported once, resumes), a frozen first node of the URL (a socat
 * proxy SIGSTOPped: the renewal times out and goes to the next node at once, the
 * minting never stops). Short lease (900 ms; 9 s for the frozen node); own database. */
#include <signal.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk_test.h"
#include "sk_test_proc.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/lease.h"
#include "sk/metrics.h"
#include "sk/snowflake.h"

#define LEASE_MS 900
#define MS_OF(col) "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " col ") DIV 1000"

static void setup(void)
{
        sk_test_fix_setup("lease", &(sk_test_fix_opts_t){ .no_topics = 1 });
        sk_test_fx.conf.worker_lease_ms = LEASE_MS;
}

static void sql(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sql(const char *fmt, ...)
{
        char q[1024], errstr[256] = "";
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(q, sizeof(q), fmt, ap);
        va_end(ap);
        ck_assert_msg(sk_db_exec(sk_test_fx.db, q, errstr, sizeof(errstr)) == SK_OK, "%s: %s", q,
                      errstr);
}

static int64_t sql_i64(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int64_t sql_i64(const char *fmt, ...)
{
        char q[1024], errstr[256] = "";
        int64_t v = 0;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(q, sizeof(q), fmt, ap);
        va_end(ap);
        ck_assert_msg(sk_db_query_i64(sk_test_fx.db, q, &v, NULL, errstr, sizeof(errstr)) == SK_OK,
                      "%s: %s", q, errstr);
        return v;
}

static int64_t mint_until_of(int id)
{
        return sql_i64("SELECT " MS_OF("mint_until") " FROM tb_worker_lease WHERE worker_id = %d", id);
}

/* Counts of the events the renewal thread reported. */
typedef struct ev_count {
        atomic_int lost, acquired, renew_failed, recovered;
        atomic_int last_id;
} ev_count_t;

static void count_event(void *arg, sk_idgen_event_t ev, int worker_id, const char *detail)
{
        ev_count_t *c = arg;

        (void)detail;
        atomic_store(&c->last_id, worker_id);
        if (ev == SK_IDGEN_EV_LOST)
                atomic_fetch_add(&c->lost, 1);
        else if (ev == SK_IDGEN_EV_ACQUIRED)
                atomic_fetch_add(&c->acquired, 1);
        else if (ev == SK_IDGEN_EV_RENEW_FAILED)
                atomic_fetch_add(&c->renew_failed, 1);
        else
                atomic_fetch_add(&c->recovered, 1);
}

static sk_idgen_t *start_opts(int worker_id, const sk_idgen_opts_t *opts, sk_err_t *err)
{
        char errstr[256] = "";
        sk_conf_t conf = sk_test_fx.conf;
        sk_idgen_t *g;

        conf.worker_id = worker_id;
        g = sk_idgen_start_opts(&conf, opts, err, errstr, sizeof(errstr));
        if (!g && *err != SK_EEXIST)
                ck_abort_msg("idgen_start(%d): %s: %s", worker_id, sk_err2str(*err), errstr);
        return g;
}

static sk_idgen_t *start(int worker_id, sk_err_t *err)
{
        return start_opts(worker_id, NULL, err);
}

/* Wait up to @p max_ms for sk_idgen_usable() == @p want. @returns ms waited or -1. */
static int64_t wait_usable(sk_idgen_t *g, int want, int64_t max_ms)
{
        int64_t t0 = sk_mono_ms();

        while (sk_mono_ms() - t0 <= max_ms) {
                if (sk_idgen_usable(g) == want)
                        return sk_mono_ms() - t0;
                sk_sleep_ms(5, NULL);
        }
        return -1;
}

/* Mint until one succeeds (or @p max_ms passed). @returns the id or -1. */
static int64_t mint_wait(sk_idgen_t *g, int64_t max_ms)
{
        int64_t t0 = sk_mono_ms(), id;
        char errstr[256];

        while (sk_mono_ms() - t0 <= max_ms) {
                if (sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK)
                        return id;
                sk_sleep_ms(5, NULL);
        }
        return -1;
}

/* The child's job (run in a fresh process image, see child_start): sk_idgen_start(worker_id)
 * on database @p db, write its worker id (or -1000 + error code) to @p fd, hold the lease
 * for @p hold_ms, release it. @returns the exit status. */
static int child_main(const char *db, const char *url, int worker_id, int64_t hold_ms, int fd)
{
        char errstr[256] = "";
        sk_conf_t conf;
        sk_err_t err = SK_OK;
        sk_idgen_t *g;
        int v;

        sk_test_conf(&conf, "lease");
        snprintf(conf.mysql.database, sizeof(conf.mysql.database), "%s", db);
        snprintf(conf.mysql_url, sizeof(conf.mysql_url), "%s", url);
        conf.worker_lease_ms = LEASE_MS;
        conf.worker_id = worker_id;
        g = sk_idgen_start(&conf, &err, errstr, sizeof(errstr));
        v = g ? sk_idgen_worker_id(g) : -1000 + (int)err;
        if (write(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
                return 3;
        sk_sleep_ms(hold_ms, NULL);
        sk_idgen_stop(g);
        return 0;
}

/* Run child_main(worker_id, hold_ms, fd) in another process. The child re-executes this
 * binary (--lease-child) instead of going on from fork(): the parent has threads (lease
 * renewals, the MySQL client), and a lock one of them held at fork() stays held forever in
 * a child that only forked (seen under ASan: the child hung, the case timed out).
 * @returns the pid. */
static pid_t child_start(int worker_id, int64_t hold_ms, int fd)
{
        char wid[16], hold[24], fds[16];
        pid_t pid;

        snprintf(wid, sizeof(wid), "%d", worker_id);
        snprintf(hold, sizeof(hold), "%" PRId64, hold_ms);
        snprintf(fds, sizeof(fds), "%d", fd);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                execl("/proc/self/exe", "0102_worker_lease", "--lease-child",
                      sk_test_fx.conf.mysql.database, sk_test_fx.conf.mysql_url, wid, hold, fds,
                      (char *)NULL);
                _exit(127);
        }
        return pid;
}

static int start_in_child(int worker_id)
{
        int fds[2], got = -9999;
        pid_t pid;

        ck_assert_int_eq(pipe(fds), 0);
        pid = child_start(worker_id, 0, fds[1]);
        close(fds[1]);
        if (read(fds[0], &got, sizeof(got)) != (ssize_t)sizeof(got))
                got = -9999;
        close(fds[0]);
        waitpid(pid, NULL, 0);
        return got;
}

START_TEST(acquire_and_renew)
{
        char errstr[256] = "";
        sk_err_t err = SK_OK;
        int64_t id = 0, prev = 0, mu0, mu1;
        sk_idgen_t *g = start(7, &err);

        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(sk_idgen_worker_id(g), 7);
        /* a fresh row (mint_until at the epoch) mints at once */
        ck_assert_int_eq(sk_idgen_usable(g), 1);
        ck_assert_msg(sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq((id >> 12) & 1023, 7);
        ck_assert_int_eq(sql_i64("SELECT holder LIKE '%%:%ld:%%' FROM tb_worker_lease WHERE worker_id = 7",
                                 (long)getpid()), 1);
        ck_assert_int_eq(sql_i64("SELECT lease_until > NOW(3) FROM tb_worker_lease WHERE worker_id = 7"), 1);
        mu0 = mint_until_of(7);
        /* renewals keep the lease and raise mint_until; minting never stops */
        for (int i = 0; i < 30; i++) {
                ck_assert_msg(sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK, "mint %d: %s", i,
                              errstr);
                ck_assert_int_gt(id, prev);
                ck_assert_int_le(sk_snowflake_ts_ms(id), mint_until_of(7));
                prev = id;
                sk_sleep_ms(100, NULL);
        }
        mu1 = mint_until_of(7);
        ck_assert_int_ge(mu1 - mu0, 2000);
        ck_assert_int_eq(sql_i64("SELECT lease_until > NOW(3) FROM tb_worker_lease WHERE worker_id = 7"), 1);
        /* stop releases (lease_until in the past), mint_until stays for the next holder */
        sk_idgen_stop(g);
        ck_assert_int_eq(sql_i64("SELECT lease_until < NOW(3) FROM tb_worker_lease WHERE worker_id = 7"), 1);
        ck_assert_int_ge(mint_until_of(7), mu1);
        ck_assert_int_eq(start_in_child(7), 7);
}
END_TEST

START_TEST(unset_id_lowest_usable)
{
        sk_err_t err = SK_OK;
        sk_idgen_t *a = start(-1, &err), *b;

        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(sk_idgen_worker_id(a), 0);
        ck_assert_int_eq(start_in_child(-1), 1);
        /* The child released 1 with its mint_until ahead (its take set NOW + 2/3 lease).
         * How far ahead it still is depends on how long the child took to exit (under
         * ASan the leak check alone can outlast the 600 ms: CI saw b take 1), so the test
         * puts it 800 ms ahead, as a release right after a renewal leaves it: 1 may not
         * mint at once, 2 can -> 2. */
        ck_assert_int_eq(sql_i64("SELECT lease_until < NOW(3) FROM tb_worker_lease"
                                 " WHERE worker_id = 1"), 1);
        sql("UPDATE tb_worker_lease SET mint_until = NOW(3) + INTERVAL 800000 MICROSECOND"
            " WHERE worker_id = 1");
        b = start(-1, &err);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(sk_idgen_worker_id(b), 2);
        ck_assert_int_eq(sk_idgen_usable(b), 1);
        sk_idgen_stop(b);
        /* with every id but 1 held or far ahead, 1 is taken and waits its mint_until */
        sql("UPDATE tb_worker_lease SET mint_until = NOW(3) + INTERVAL 1 DAY WHERE worker_id > 1");
        b = start(-1, &err);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(sk_idgen_worker_id(b), 1);
        ck_assert_int_ge(mint_wait(b, 5000), 0);
        sk_idgen_stop(a);
        sk_idgen_stop(b);
}
END_TEST

START_TEST(far_future_mint_until_skipped)
{
        char errstr[256] = "";
        sk_err_t err = SK_OK;
        int64_t id, far;
        sk_idgen_t *g;

        /* ids 0 and 1: free, but a clock step left their mint_until a day ahead */
        sql("UPDATE tb_worker_lease SET mint_until = NOW(3) + INTERVAL 1 DAY WHERE worker_id < 2");
        far = mint_until_of(0);
        g = start(-1, &err);
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(sk_idgen_worker_id(g), 2);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_OK);
        sk_idgen_stop(g);
        /* asked for by number, such an id is leased but mints nothing at or before it */
        g = start(0, &err);
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(sk_idgen_worker_id(g), 0);
        ck_assert_int_eq(sk_idgen_usable(g), 0);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_eq(mint_until_of(0), far); /* never lowered */
        sk_idgen_stop(g);
}
END_TEST

START_TEST(taken_id_eexist_and_exit_2)
{
        char cmd[2048];
        sk_err_t err = SK_OK;
        sk_idgen_t *g = start(13, &err);
        const char *bin = getenv("SK_BIN");
        int st;

        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(start_in_child(13), -1000 + (int)SK_EEXIST);
        ck_assert_ptr_nonnull(bin);
        snprintf(cmd, sizeof(cmd),
                 "SECKILL_MYSQL_URL='%s' SECKILL_WORKER_ID=13 SECKILL_WORKER_LEASE_MS=%d "
                 "'%s/seckill-admin' voucher create --stock 1 --begin 2030-01-01T00:00:00+00:00 "
                 "--end 2030-01-02T00:00:00+00:00 >/dev/null 2>&1",
                 sk_test_fx.conf.mysql_url, LEASE_MS, bin);
        st = system(cmd);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 2);
        ck_assert_int_eq(sql_i64("SELECT COUNT(*) FROM tb_seckill_voucher"), 0);
        sk_idgen_stop(g);
        st = system(cmd);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

/* Children started at the same moment never share an id: -1 gives distinct ids, and
 * of those asking for one number exactly one gets it. */
START_TEST(two_processes_never_hold_one_id)
{
        enum { N = 6 };
        int fds[2], got[N], seen[64] = { 0 }, ok = 0, taken = 0;
        pid_t pids[N];

        ck_assert_int_eq(pipe(fds), 0);
        for (int i = 0; i < N; i++)
                pids[i] = child_start(-1, 1500, fds[1]);
        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(read(fds[0], &got[i], sizeof(got[i])), (ssize_t)sizeof(got[i]));
                ck_assert_msg(got[i] >= 0 && got[i] < 64, "child %d: %d", i, got[i]);
                ck_assert_msg(!seen[got[i]], "worker id %d leased twice", got[i]);
                seen[got[i]] = 1;
        }
        for (int i = 0; i < N; i++)
                waitpid(pids[i], NULL, 0);
        for (int i = 0; i < N; i++)
                pids[i] = child_start(21, 800, fds[1]);
        for (int i = 0; i < N; i++) {
                ck_assert_int_eq(read(fds[0], &got[i], sizeof(got[i])), (ssize_t)sizeof(got[i]));
                if (got[i] == 21)
                        ok++;
                else if (got[i] == -1000 + (int)SK_EEXIST)
                        taken++;
        }
        for (int i = 0; i < N; i++)
                waitpid(pids[i], NULL, 0);
        close(fds[0]);
        close(fds[1]);
        ck_assert_int_eq(ok, 1);
        ck_assert_int_eq(taken, N - 1);
}
END_TEST

/* A's lease expires (as if A had stalled) and B takes the id: A finds out at its next
 * renewal, stops minting, reports the loss once; once B leaves, A leases again (once). */
START_TEST(stolen_expired_lease)
{
        char errstr[256] = "", *text;
        ev_count_t ev = { 0 };
        sk_metrics_t *m = sk_metrics_new();
        sk_idgen_opts_t o = { .metrics = m, .on_event = count_event, .event_arg = &ev };
        sk_err_t err = SK_OK;
        int64_t id = 0, max_a = 0, b_id, m_stolen;
        sk_idgen_t *a = start_opts(9, &o, &err), *b;

        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(sk_idgen_next(a, &max_a, errstr, sizeof(errstr)), SK_OK);
        /* expire A's lease and take it from another holder before A renews (A may win
         * the race by renewing in between: then try again) */
        b = NULL;
        for (int i = 0; i < 5 && !b; i++) {
                sql("UPDATE tb_worker_lease SET lease_until = NOW(3) - INTERVAL 1 SECOND "
                    "WHERE worker_id = 9");
                b = start(9, &err);
        }
        ck_assert_ptr_nonnull(b);
        m_stolen = sql_i64("SELECT " MS_OF("mint_until") " FROM tb_worker_lease WHERE worker_id = 9");
        ck_assert_msg(wait_usable(a, 0, LEASE_MS / 3 + 300) >= 0, "A still minting after lease/3");
        ck_assert_int_eq(sk_idgen_next(a, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        b_id = mint_wait(b, 3000);
        ck_assert_int_ge(b_id, 0);
        ck_assert_int_lt(max_a, b_id);
        /* B's window starts after A's mint_until as B found it */
        sk_sleep_ms(LEASE_MS, NULL);
        ck_assert_int_eq(sk_idgen_usable(a), 0);
        ck_assert_int_eq(atomic_load(&ev.lost), 1);
        ck_assert_int_eq(atomic_load(&ev.acquired), 0);
        ck_assert_int_le(m_stolen, mint_until_of(9));
        /* B leaves: A leases the id again and mints after B's mint_until */
        sk_idgen_stop(b);
        ck_assert_int_ge(wait_usable(a, 1, 3000), 0);
        id = mint_wait(a, 3000);
        ck_assert_int_gt(id, b_id);
        ck_assert_int_eq(sk_idgen_worker_id(a), 9);
        ck_assert_int_eq(atomic_load(&ev.lost), 1);
        ck_assert_int_eq(atomic_load(&ev.acquired), 1);
        sk_sleep_ms(LEASE_MS / 3 + 100, NULL);   /* the gauge is refreshed every lease/3 */
        text = sk_metrics_render(m);
        ck_assert_ptr_nonnull(strstr(text, "seckill_worker_lease_lost_total 1\n"));
        ck_assert_ptr_nonnull(strstr(text, "seckill_worker_lease_reacquired_total 1\n"));
        ck_assert_ptr_nonnull(strstr(text, "seckill_worker_lease_held 1\n"));
        free(text);
        sk_idgen_stop(a);
        sk_metrics_destroy(m);
}
END_TEST

/* The database stops answering the renewals (the test holds the row's lock on the one
 * node the generator knows): minting
 * stops by itself once the stamps reach mint_until, the trouble is reported once;
 * when the lock goes, the next renewal (holder still ours) succeeds: reported once,
 * minting resumes, no loss. */
START_TEST(db_trouble_stops_minting_then_recovers)
{
        char errstr[256] = "";
        ev_count_t ev = { 0 };
        sk_metrics_t *m = sk_metrics_new();
        sk_idgen_opts_t o = { .metrics = m, .on_event = count_event, .event_arg = &ev };
        sk_conf_t one = sk_test_fx.conf;
        sk_err_t err = SK_OK;
        int64_t id = 0, t0, mu = 0, v = 0;
        sk_idgen_t *g;
        sk_db_t *lk;
        char *text;

        /* One node of the URL for the generator and the lock: on Galera a row lock is
         * node-local, and a renewal that meets it goes (rightly) to another node
         * (DESIGN.md 16); here the database as a whole must refuse the renewals. */
        if (one.mysql.nhosts > 1) {
                one.mysql.nhosts = 1;
                memcpy(one.mysql.host, one.mysql.hosts[0].host, sizeof(one.mysql.host));
                one.mysql.port = one.mysql.hosts[0].port;
        }
        one.worker_id = 41;
        g = sk_idgen_start_opts(&one, &o, &err, errstr, sizeof(errstr));
        ck_assert_msg(g != NULL, "idgen_start: %s: %s", sk_err2str(err), errstr);
        lk = sk_db_connect(&one.mysql, 0, 0, errstr, sizeof(errstr));
        ck_assert_msg(lk != NULL, "connect: %s", errstr);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_OK);
        ck_assert_msg(sk_db_begin(lk, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_db_query_i64(lk, "SELECT worker_id FROM tb_worker_lease WHERE worker_id = 41 "
                                         "FOR UPDATE", &v, NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 41);
        ck_assert_int_eq(sk_db_query_i64(lk, "SELECT " MS_OF("mint_until") " FROM tb_worker_lease "
                                         "WHERE worker_id = 41", &mu, NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_msg(wait_usable(g, 0, 2 * LEASE_MS) >= 0, "still minting with renewals blocked");
        for (t0 = sk_mono_ms(); sk_mono_ms() - t0 < 2 * LEASE_MS;) {
                if (sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK)
                        ck_assert_int_le(sk_snowflake_ts_ms(id), mu);
                sk_sleep_ms(20, NULL);
        }
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_eq(atomic_load(&ev.renew_failed), 1);
        text = sk_metrics_render(m);   /* the gauge says it: no ids from this process */
        ck_assert_ptr_nonnull(strstr(text, "seckill_worker_lease_held 0\n"));
        ck_assert_ptr_null(strstr(text, "seckill_worker_lease_renew_errors_total 0\n"));
        free(text);
        sk_db_rollback(lk);
        sk_db_close(lk);
        ck_assert_int_ge(wait_usable(g, 1, 5000), 0);
        ck_assert_int_ge(mint_wait(g, 1000), 0);
        ck_assert_int_eq(atomic_load(&ev.recovered), 1);
        ck_assert_int_eq(atomic_load(&ev.renew_failed), 1);
        ck_assert_int_eq(atomic_load(&ev.lost), 0);
        ck_assert_int_eq(sk_idgen_worker_id(g), 41);
        sk_sleep_ms(LEASE_MS / 3 + 100, NULL);
        text = sk_metrics_render(m);
        ck_assert_ptr_nonnull(strstr(text, "seckill_worker_lease_held 1\n"));
        free(text);
        sk_idgen_stop(g);
        sk_metrics_destroy(m);
}
END_TEST

/* Mint from @p g for @p ms; every stamp must be <= the row's mint_until read right
 * after it. @returns the largest id minted (0 if none). */
static int64_t mint_for(sk_idgen_t *g, int wid, int64_t ms)
{
        int64_t t0 = sk_mono_ms(), id, max = 0;
        char errstr[256];

        while (sk_mono_ms() - t0 < ms) {
                if (sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK) {
                        ck_assert_int_le(sk_snowflake_ts_ms(id), mint_until_of(wid));
                        if (id > max)
                                max = id;
                }
                sk_sleep_ms(7, NULL);
        }
        return max;
}

/* The mint bounds hold whatever the clocks say (test hook: clock offsets). A holder
 * whose clock runs ahead never stamps past its mint_until; one whose clock is far
 * ahead mints nothing; the next holder, behind, mints nothing stamped at or before
 * the old mint_until and waits until its clock passes it. */
START_TEST(mint_bounds_under_skew)
{
        sk_idgen_opts_t ahead = { .test_clock_offset_ms = 400 };
        sk_idgen_opts_t far_ahead = { .test_clock_offset_ms = 3000 };
        sk_idgen_opts_t behind = { .test_clock_offset_ms = -2000 };
        char errstr[256] = "";
        sk_err_t err = SK_OK;
        int64_t id, max_a, m_final, t0, b_first;
        sk_idgen_t *a, *b, *c;

        a = start_opts(31, &ahead, &err);
        ck_assert_ptr_nonnull(a);
        max_a = mint_for(a, 31, 2 * LEASE_MS);
        ck_assert_int_gt(max_a, 0);
        /* another holder steals the id: A can no longer raise mint_until */
        sql("UPDATE tb_worker_lease SET holder = 'thief', lease_until = NOW(3) + INTERVAL 1 DAY "
            "WHERE worker_id = 31");
        m_final = mint_until_of(31);
        /* whatever A mints before it notices stays at or before m_final */
        for (t0 = sk_mono_ms(); sk_mono_ms() - t0 < LEASE_MS / 2;) {
                if (sk_idgen_next(a, &id, errstr, sizeof(errstr)) == SK_OK) {
                        ck_assert_int_le(sk_snowflake_ts_ms(id), m_final);
                        if (id > max_a)
                                max_a = id;
                }
        }
        ck_assert_int_le(sk_snowflake_ts_ms(max_a), m_final);
        ck_assert_int_ge(wait_usable(a, 0, LEASE_MS), 0);
        sk_idgen_stop(a);
        /* the thief leaves; B, 2 s behind, takes the id: nothing before its clock passes
         * m_final */
        sql("UPDATE tb_worker_lease SET lease_until = NOW(3) - INTERVAL 1 SECOND WHERE worker_id = 31");
        b = start_opts(31, &behind, &err);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(mint_until_of(31) >= m_final, 1);
        ck_assert_int_eq(sk_idgen_next(b, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        b_first = mint_wait(b, 6000);
        ck_assert_int_gt(b_first, 0);
        ck_assert_int_gt(sk_snowflake_ts_ms(b_first), m_final);
        ck_assert_int_gt(b_first, max_a);
        /* B keeps minting within its bounds across renewals */
        ck_assert_int_gt(mint_for(b, 31, LEASE_MS), b_first);
        sk_idgen_stop(b);
        /* a holder 3 s ahead of the DB (more than 2/3 lease) never gets inside its window */
        c = start_opts(32, &far_ahead, &err);
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(mint_for(c, 32, LEASE_MS), 0);
        ck_assert_int_eq(sk_idgen_usable(c), 0);
        sk_idgen_stop(c);
}
END_TEST

/* The writer node freezes (SIGSTOP: connections stay open, nothing answers; a Galera
 * writer frozen until the others evict it, DESIGN.md 16). The renewal on it times out
 * after the attempt timeout (1 s for a 9 s lease) and the next attempt goes at once to
 * the next node of the URL, well inside the confirmed window (at least lease/3 = 3 s
 * ahead): the generator never stops minting, the trouble is reported once, no loss, and
 * the renewals go on through the next node (mint_until keeps moving). */
START_TEST(frozen_writer_never_stops_minting)
{
        enum { LEASE = 9000 };
        char errstr[256] = "";
        ev_count_t ev = { 0 };
        sk_idgen_opts_t o = { .on_event = count_event, .event_arg = &ev };
        sk_conf_t conf = sk_test_fx.conf;
        sk_err_t err = SK_OK;
        int pport = sk_test_free_port(), closed = 0, minted = 0;
        int64_t id = 0, prev = 0, t0, mu0, mu1;
        sk_idgen_t *g;
        pid_t proxy;

        proxy = sk_test_proxy_start(pport, conf.mysql.hosts[0].port);
        conf.mysql.hosts[1] = conf.mysql.hosts[0];
        snprintf(conf.mysql.hosts[0].host, sizeof(conf.mysql.hosts[0].host), "127.0.0.1");
        conf.mysql.hosts[0].port = pport;
        conf.mysql.nhosts = 2;
        memcpy(conf.mysql.host, conf.mysql.hosts[0].host, sizeof(conf.mysql.host));
        conf.mysql.port = pport;
        conf.worker_lease_ms = LEASE;
        conf.worker_id = 43;
        g = sk_idgen_start_opts(&conf, &o, &err, errstr, sizeof(errstr));
        ck_assert_msg(g != NULL, "idgen_start: %s: %s", sk_err2str(err), errstr);
        ck_assert_int_eq(sk_idgen_usable(g), 1);
        mu0 = mint_until_of(43);
        ck_assert_int_eq(kill(-proxy, SIGSTOP), 0);
        /* Three periods with the first node frozen: every sample can mint. */
        for (t0 = sk_mono_ms(); sk_mono_ms() - t0 < LEASE;) {
                if (!sk_idgen_usable(g) || sk_idgen_next(g, &id, errstr, sizeof(errstr)) != SK_OK) {
                        closed++;
                } else {
                        ck_assert_int_gt(id, prev);
                        prev = id;
                        minted++;
                }
                sk_sleep_ms(10, NULL);
        }
        mu1 = mint_until_of(43);
        kill(-proxy, SIGCONT);
        kill(-proxy, SIGKILL);
        (void)sk_test_stop(proxy, 5);
        ck_assert_msg(closed == 0, "the window closed %d time(s) with the first node frozen "
                      "(%d mints)", closed, minted);
        ck_assert_int_gt(minted, 100);
        /* renewed through the second node: at least two periods further */
        ck_assert_msg(mu1 - mu0 >= 2 * LEASE / 3, "mint_until moved %lld ms",
                      (long long)(mu1 - mu0));
        ck_assert_int_le(sk_snowflake_ts_ms(prev), mu1);
        ck_assert_int_eq(atomic_load(&ev.renew_failed), 1);
        ck_assert_int_eq(atomic_load(&ev.recovered), 1);
        ck_assert_int_eq(atomic_load(&ev.lost), 0);
        ck_assert_int_eq(sk_idgen_worker_id(g), 43);
        sk_idgen_stop(g);
        /* released; on Galera the test's node may apply the release a moment later */
        for (int64_t until = sk_mono_ms() + 30000;
             sql_i64("SELECT lease_until < NOW(3) FROM tb_worker_lease WHERE worker_id = 43") != 1 &&
             sk_mono_ms() < until;)
                sk_sleep_ms(100, NULL);
        ck_assert_int_eq(sql_i64("SELECT lease_until < NOW(3) FROM tb_worker_lease WHERE worker_id = 43"), 1);
}
END_TEST

int main(int argc, char **argv)
{
        Suite *s;
        TCase *tc;

        if (argc == 7 && strcmp(argv[1], "--lease-child") == 0) {
                char *end;
                long wid = strtol(argv[4], &end, 10);
                long long hold = strtoll(argv[5], &end, 10);
                long fd = strtol(argv[6], &end, 10);

                return child_main(argv[2], argv[3], (int)wid, (int64_t)hold, (int)fd);
        }
        s = suite_create("worker_lease");
        tc = tcase_create("lease");

        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, acquire_and_renew);
        tcase_add_test(tc, unset_id_lowest_usable);
        tcase_add_test(tc, far_future_mint_until_skipped);
        tcase_add_test(tc, taken_id_eexist_and_exit_2);
        tcase_add_test(tc, two_processes_never_hold_one_id);
        tcase_add_test(tc, stolen_expired_lease);
        tcase_add_test(tc, mint_bounds_under_skew);
        tcase_add_test(tc, db_trouble_stops_minting_then_recovers);
        tcase_add_test(tc, frozen_writer_never_stops_minting);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
