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
 *   - a live row whose holder is a dead process of this host (a run killed with SIGKILL)
 *     is taken at once, not after its ttl; one of another host, or of a live process of
 *     this host, is not.
 * With GET_LOCK (the old sk_db_lock) the expired-row cases could not exist, and a lock
 * held on one Galera node was invisible on another: these cases are the row protocol. */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk_test.h"

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

START_TEST(dead_holder_of_this_host_is_taken_over)
{
        char errstr[512] = "", holder[240], host[160], sql[640];
        sk_dblock_t *a = open_lock("seckill:test:dead", 30000);
        pid_t dead = fork();
        int st;

        if (dead == 0)
                _exit(0);
        ck_assert_int_gt(dead, 0);
        ck_assert_int_eq(waitpid(dead, &st, 0), dead);  /* reaped: the pid names nobody */
        /* This host's name as a holder writes it: a's holder up to its first ':'. */
        snprintf(host, sizeof(host), "%s", sk_dblock_holder(a));
        *strchr(host, ':') = '\0';
        /* Another host's holder, live for 60 s: busy (its process cannot be checked). */
        snprintf(sql, sizeof(sql), "INSERT INTO tb_lock (name, holder, until, seq) VALUES "
                 "('seckill:test:dead', 'elsewhere-%s:%d:1', NOW(3) + INTERVAL 60 SECOND, 1) "
                 "ON DUPLICATE KEY UPDATE holder = VALUES(holder), until = VALUES(until)", host, (int)dead);
        sk_test_exec("%s", sql);
        ck_assert_int_eq(sk_dblock_take(a, 0, errstr, sizeof(errstr)), SK_EAGAIN);
        /* A live process of this host (our parent): busy. */
        snprintf(sql, sizeof(sql), "UPDATE tb_lock SET holder = '%s:%d:1' WHERE name = 'seckill:test:dead'",
                 host, (int)getppid());
        sk_test_exec("%s", sql);
        ck_assert_int_eq(sk_dblock_take(a, 0, errstr, sizeof(errstr)), SK_EAGAIN);
        /* The dead process of this host: taken at once, and the row names a. */
        snprintf(holder, sizeof(holder), "%s:%d:1", host, (int)dead);
        snprintf(sql, sizeof(sql), "UPDATE tb_lock SET holder = '%s' WHERE name = 'seckill:test:dead'", holder);
        sk_test_exec("%s", sql);
        ck_assert_msg(sk_dblock_take(a, 0, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_dblock_check(a, errstr, sizeof(errstr)), SK_OK);
        sk_dblock_close(a);
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
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
