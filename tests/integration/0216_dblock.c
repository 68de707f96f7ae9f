/* 0216_dblock.c: advisory locks as tb_lock rows (sk/dblock.h; DESIGN.md 16 (1)) with two
 * holders on two different connections, against the real MariaDB:
 *   - a row held live by one holder cannot be taken by another (busy, the reason names the
 *     holder); the loser's check says lost; the winner's check renews (seq and until move);
 *   - a take waits: a release within the wait lets the second holder in;
 *   - an expired row can be taken by another holder; the old holder's next check then
 *     says lost (it stops before its next write); an expired row nobody took is renewed by
 *     its holder (it still names it: nobody held it in between);
 *   - "nobody holds the lock" = no row with until >= NOW(3) (sk_dblock_live);
 *   - a check whose connection was killed (unknown outcome of the renewal) reconnects,
 *     reads the row, finds it still ours and renews it;
 *   - two lock objects of one process have different holders and exclude each other;
 *   - a live row whose holder is a dead process of this host and boot (a run killed with
 *     SIGKILL), whose pid now belongs to a process started at other ticks, or of an earlier
 *     boot of this host (another boot id), is taken at once, not after its ttl; one of
 *     another host, of the old "host:pid:start_ms" form, or of a live process of this
 *     boot, is not (DESIGN.md 16 (f));
 *   - the holder column takes the longest holder (ddl/0011_lock_holder.sql);
 *   - a release through one node is seen at once by a take through another that applies
 *     it late (behind a large write set): on Galera the lock's session waits for the
 *     cluster's writes (wsrep_sync_wait), else its conditional UPDATE matched the stale
 *     live row and the take answered busy (the galera rerun failed so, under load).
 * With GET_LOCK (the old sk_db_lock) the expired-row cases could not exist, and a lock
 * held on one Galera node was invisible on another: these cases are the row protocol. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk_test.h"
#include "sk/dblock_holder.h"

/* Each lock object opened writes through the next node of the URL: with the label galera
 * the two holders of a case sit on two different Galera nodes (DESIGN.md 16: a GET_LOCK
 * would not have seen the other); on one server, the same server. */
static sk_dblock_t *open_lock(const char *name, int ttl_ms)
{
        static int next_node;
        char errstr[512] = "";
        sk_mysql_url_t url = sk_test_mysql_node(&sk_test_fx.conf.mysql, next_node++);
        sk_dblock_t *lk = sk_dblock_open(&url, name, ttl_ms, errstr, sizeof(errstr));

        ck_assert_msg(lk != NULL, "%s", errstr);
        return lk;
}

START_TEST(live_row_is_exclusive)
{
        char errstr[512] = "", who[160];
        sk_dblock_t *a = open_lock("seckill:test:live", 30000), *b = open_lock("seckill:test:live", 30000);
        int64_t seq0, t0;
        int live = 0;

        ck_assert_str_ne(sk_dblock_holder(a), sk_dblock_holder(b));
        ck_assert_msg(sk_dblock_take(a, 0, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_dblock_take(b, 0, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_eq(sk_dblock_busy(b), 1);
        ck_assert_ptr_nonnull(strstr(errstr, sk_dblock_holder(a)));
        ck_assert_int_eq(sk_dblock_check(b, errstr, sizeof(errstr)), SK_ENOTFOUND);
        /* The row names a. */
        ck_assert_int_eq(sk_dblock_live(sk_test_fx.db, "seckill:test:live", &live, who, sizeof(who),
                                        errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(live, 1);
        ck_assert_str_eq(who, sk_dblock_holder(a));
        /* A check renews: seq and until move. */
        seq0 = sk_test_i64("SELECT seq FROM tb_lock WHERE name = 'seckill:test:live'");
        t0 = sk_test_i64("SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), until) FROM tb_lock WHERE name = "
                         "'seckill:test:live'");
        sk_sleep_ms(50, NULL);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_test_i64("SELECT seq FROM tb_lock WHERE name = 'seckill:test:live'"), seq0 + 1);
        ck_assert_int_gt(sk_test_i64("SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), until) FROM tb_lock "
                                     "WHERE name = 'seckill:test:live'"), 29000000);
        ck_assert_int_le(t0, 30000000);
        /* Released: until in the past, the holder kept; nobody holds it; b takes it. */
        sk_dblock_release(a);
        ck_assert_int_eq(sk_dblock_live(sk_test_fx.db, "seckill:test:live", &live, NULL, 0, errstr,
                                        sizeof(errstr)), SK_OK);
        ck_assert_int_eq(live, 0);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = 'seckill:test:live'"), 1);
        ck_assert_int_eq(sk_dblock_take(b, 0, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_ENOTFOUND);
        sk_dblock_close(a);
        sk_dblock_close(b);
}
END_TEST

/* Releases the lock after 700 ms (the second holder is waiting meanwhile). */
static void *release_later(void *arg)
{
        sk_sleep_ms(700, NULL);
        sk_dblock_release(arg);
        return NULL;
}

START_TEST(take_waits_for_a_release)
{
        char errstr[512] = "";
        sk_dblock_t *a = open_lock("seckill:test:wait", 30000), *b = open_lock("seckill:test:wait", 30000);
        pthread_t th;
        int64_t t0;

        ck_assert_int_eq(sk_dblock_take(a, 0, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(pthread_create(&th, NULL, release_later, a), 0);
        t0 = sk_mono_ms();
        ck_assert_msg(sk_dblock_take(b, 5000, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_ge(sk_mono_ms() - t0, 600);
        pthread_join(th, NULL);
        ck_assert_int_eq(sk_dblock_held(a), 0);
        sk_dblock_close(a);
        sk_dblock_close(b);
}
END_TEST

START_TEST(expired_row_is_taken_and_the_old_holder_stops)
{
        char errstr[512] = "";
        sk_dblock_t *a = open_lock("seckill:test:exp", 1000), *b = open_lock("seckill:test:exp", 30000);

        ck_assert_int_eq(sk_dblock_take(a, 0, errstr, sizeof(errstr)), SK_OK);
        /* a stalls past its ttl and nobody takes the row: it still names a, a renews. */
        sk_sleep_ms(1200, NULL);
        ck_assert_int_eq(sk_test_i64("SELECT until < NOW(3) FROM tb_lock WHERE name = 'seckill:test:exp'"), 1);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_OK);
        /* a stalls again; b takes the expired row; a's next check says lost. */
        sk_sleep_ms(1200, NULL);
        ck_assert_msg(sk_dblock_take(b, 0, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_ENOTFOUND);
        ck_assert_ptr_nonnull(strstr(errstr, "lost"));
        ck_assert_int_eq(sk_dblock_held(a), 0);
        /* A release by the loser changes nothing: b keeps the row. */
        sk_dblock_release(a);
        ck_assert_int_eq(sk_dblock_check(b, errstr, sizeof(errstr)), SK_OK);
        sk_dblock_close(a);
        sk_dblock_close(b);
}
END_TEST

/* Point the row at holder @p holder (live for another 60 s) and try to take it once. */
static sk_err_t take_from(sk_dblock_t *a, const char *holder, char *errstr, size_t errstr_size)
{
        char sql[640];

        snprintf(sql, sizeof(sql), "INSERT INTO tb_lock (name, holder, until, seq) VALUES "
                 "('seckill:test:dead', '%s', NOW(3) + INTERVAL 60 SECOND, 1) ON DUPLICATE KEY "
                 "UPDATE holder = VALUES(holder), until = VALUES(until)", holder);
        sk_test_exec("%s", sql);
        return sk_dblock_take(a, 0, errstr, errstr_size);
}

/* DESIGN.md 16 (f): a live row is taken over at once only when its holder has our host
 * name and either another boot id, or our boot id and a pid that is gone or reused (other
 * start ticks); everything else is waited out. */
START_TEST(dead_holder_of_this_host_is_taken_over)
{
        char errstr[512] = "", holder[240];
        sk_dblock_t *a = open_lock("seckill:test:dead", 30000);
        sk_dblock_holder_t self, h;
        uint64_t parent_ticks = 0;
        pid_t dead = fork();
        int st;

        if (dead == 0)
                _exit(0);
        ck_assert_int_gt(dead, 0);
        ck_assert_int_eq(waitpid(dead, &st, 0), dead);  /* reaped: the pid names nobody */
        sk_dblock_holder_self(&self);
        ck_assert_int_eq((int)strlen(self.boot_id), SK_DBLOCK_BOOT_ID_MAX);
        /* a's holder is ours: host, boot id, pid and start ticks of this process. */
        ck_assert_int_eq(sk_dblock_holder_parse(sk_dblock_holder(a), &h), SK_OK);
        ck_assert_str_eq(h.host, self.host);
        ck_assert_str_eq(h.boot_id, self.boot_id);
        ck_assert_int_eq(h.pid, (long)getpid());
        ck_assert_uint_eq(h.start_ticks, self.start_ticks);
        ck_assert_int_eq(sk_dblock_holder_probe_proc((long)getppid(), &parent_ticks, NULL), 1);

        /* Another host's holder with a dead pid: busy (its process cannot be checked). */
        snprintf(holder, sizeof(holder), "elsewhere-%s:%s:%d:%" PRIu64 ":1", self.host, self.boot_id,
                 (int)dead, self.start_ticks);
        ck_assert_int_eq(take_from(a, holder, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_eq(sk_dblock_busy(a), 1);
        /* Our host name, another boot id (a boot before this one, DESIGN.md 16 (f)), even
         * with the pid of a live process here: taken at once. */
        snprintf(holder, sizeof(holder), "%s:%s:%d:%" PRIu64 ":1", self.host,
                 strcmp(self.boot_id, "00000000-0000-4000-8000-000000000000") != 0 ?
                 "00000000-0000-4000-8000-000000000000" : "11111111-0000-4000-8000-000000000000",
                 (int)getppid(), self.start_ticks);
        ck_assert_int_eq(take_from(a, holder, errstr, sizeof(errstr)), SK_OK);
        sk_dblock_release(a);
        /* The old three-field form with a dead pid: busy (nothing proves the process). */
        snprintf(holder, sizeof(holder), "%s:%d:1", self.host, (int)dead);
        ck_assert_int_eq(take_from(a, holder, errstr, sizeof(errstr)), SK_EAGAIN);
        /* A live process of this boot (our parent) at its own start ticks: busy. */
        snprintf(holder, sizeof(holder), "%s:%s:%d:%" PRIu64 ":1", self.host, self.boot_id,
                 (int)getppid(), parent_ticks);
        ck_assert_int_eq(take_from(a, holder, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_eq(sk_test_i64("SELECT until > NOW(3) + INTERVAL 50 SECOND FROM tb_lock WHERE "
                                     "name = 'seckill:test:dead'"), 1);
        /* The same pid with other start ticks: a holder that died and whose pid a later
         * process reuses: taken at once, and the row names a. */
        snprintf(holder, sizeof(holder), "%s:%s:%d:%" PRIu64 ":1", self.host, self.boot_id,
                 (int)getppid(), parent_ticks + 1);
        ck_assert_msg(take_from(a, holder, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = 'seckill:test:dead' "
                                     "AND holder = '%s'", sk_dblock_holder(a)), 1);
        /* The dead pid of this boot: taken at once. */
        snprintf(holder, sizeof(holder), "%s:%s:%d:%" PRIu64 ":1", self.host, self.boot_id,
                 (int)dead, self.start_ticks);
        ck_assert_msg(take_from(a, holder, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE name = 'seckill:test:dead' "
                                     "AND holder = '%s'", sk_dblock_holder(a)), 1);
        sk_dblock_close(a);
}
END_TEST

/* The column is wide enough for the longest holder (a 64-byte host name): ddl/0011. */
START_TEST(longest_holder_fits)
{
        char holder[300];

        ck_assert_int_eq(sk_test_i64("SELECT CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS "
                                     "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'tb_lock' AND "
                                     "COLUMN_NAME = 'holder'"), SK_DBLOCK_HOLDER_MAX);
        snprintf(holder, sizeof(holder), "%.64s:%s:%d:%s:%s",
                 "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh",
                 "00000000-0000-4000-8000-000000000000", 2147483647, "18446744073709551615",
                 "18446744073709551615");
        sk_test_exec("INSERT INTO tb_lock (name, holder, until, seq) VALUES ('seckill:test:long', '%s', "
                     "NOW(3), 1)", holder);
        ck_assert_int_eq(sk_test_i64("SELECT COUNT(*) FROM tb_lock WHERE holder = '%s'", holder), 1);
}
END_TEST

/* a (first node) holds the lock; a large write set committed through the first node
 * just before a's release keeps the second node applying for a while, so the release
 * reaches it late; b (second node) takes at once, with no wait, and gets the lock. On one
 * server both are the same server and the case is plain. */
START_TEST(release_through_one_node_is_seen_through_another)
{
        char errstr[512] = "";
        sk_dblock_t *a = open_lock("seckill:test:lag", 30000), *b = open_lock("seckill:test:lag", 30000);

        ck_assert_msg(sk_dblock_take(a, 0, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        sk_test_exec("CREATE TABLE IF NOT EXISTS lag_ballast (id INT PRIMARY KEY, v VARCHAR(200)) "
                     "ENGINE=InnoDB");
        sk_test_exec("INSERT INTO lag_ballast SELECT seq, REPEAT('x', 200) FROM seq_1_to_60000");
        sk_dblock_release(a);
        ck_assert_msg(sk_dblock_take(b, 0, errstr, sizeof(errstr)) == SK_OK,
                      "a take through another node right after the release: %s", errstr);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_ENOTFOUND);
        ck_assert_int_eq(sk_dblock_check(b, errstr, sizeof(errstr)), SK_OK);
        sk_dblock_close(a);
        sk_dblock_close(b);
}
END_TEST

START_TEST(killed_connection_is_resolved_by_reading_the_row)
{
        char errstr[512] = "";
        sk_dblock_t *a = open_lock("seckill:test:kill", 30000);
        int64_t seq0;
        sk_db_t *killer = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr));
        MYSQL_RES *res = NULL;
        MYSQL_ROW row;
        char sql[256];
        int killed = 0;

        ck_assert_msg(killer != NULL, "%s", errstr);
        ck_assert_int_eq(sk_dblock_take(a, 0, errstr, sizeof(errstr)), SK_OK);
        seq0 = sk_test_i64("SELECT seq FROM tb_lock WHERE name = 'seckill:test:kill'");
        /* Kill the lock's own connection (every other session of this run's database
         * but the killer's and the fixture's). */
        snprintf(sql, sizeof(sql), "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '%s' "
                 "AND ID <> CONNECTION_ID() AND ID <> %" PRId64, sk_test_fx.conf.mysql.database,
                 sk_test_i64("SELECT CONNECTION_ID()"));
        ck_assert_int_eq(sk_db_query(killer, sql, strlen(sql), &res, errstr, sizeof(errstr)), SK_OK);
        while ((row = mysql_fetch_row(res))) {
                char kill[64];
                snprintf(kill, sizeof(kill), "KILL CONNECTION %s", row[0]);
                if (sk_db_exec(killer, kill, errstr, sizeof(errstr)) == SK_OK)
                        killed++;
        }
        mysql_free_result(res);
        ck_assert_int_ge(killed, 1);
        ck_assert_msg(sk_dblock_check(a, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_test_i64("SELECT seq FROM tb_lock WHERE name = 'seckill:test:kill'"), seq0 + 1);
        sk_db_close(killer);
        sk_dblock_close(a);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0216_dblock");
        TCase *tc = tcase_create("dblock");
        int rc;

        sk_test_fix_setup("dblock", &(sk_test_fix_opts_t){ .no_topics = 1,
                                                           .delivery_timeout_ms = 1000,
                                                           .lock_wait_s = 5 });
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, live_row_is_exclusive);
        tcase_add_test(tc, take_waits_for_a_release);
        tcase_add_test(tc, expired_row_is_taken_and_the_old_holder_stops);
        tcase_add_test(tc, killed_connection_is_resolved_by_reading_the_row);
        tcase_add_test(tc, dead_holder_of_this_host_is_taken_over);
        tcase_add_test(tc, longest_holder_fits);
        tcase_add_test(tc, release_through_one_node_is_seen_through_another);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
