/* 0223_db_multi_host.c: the writer choice of a multi-host SECKILL_MYSQL_URL (DESIGN.md 16,
 * sk/db_writer.h) on the shared standalone server (never changed: no read_only here; a
 * dead Galera writer is skipped in fault case 0282; the read_only and Donor/Joiner skips
 * have no test yet). A unique database per run (sk_test_conf). Checks:
 *  - a first host that refuses (127.0.0.1:1) is skipped: the connection goes to the
 *    second, works (a write and a read), and sk_db_writer_name names it;
 *  - only dead hosts: no connection, one clear line naming every host tried;
 *  - mysql-galera:// refuses a server without wsrep;
 *  - a first node that comes back (a socat proxy to the same server, killed then
 *    restarted) is used again by a connection's next transaction within about a second,
 *    and by every new connection;
 *  - a frozen first node (the proxy SIGSTOPped: it accepts connections, never answers):
 *    a short-timeout connection (sk_db_connect_io, 1 s) gives up a statement and a
 *    connect after about its timeout, not 5 s; after sk_db_prefer_next_node its
 *    reconnect goes to the next node at once, without touching the frozen one, and that
 *    node becomes the process's writer: a new connection goes there at once, not
 *    through the frozen node (the worker-id lease renewals, DESIGN.md 2, 16); once the
 *    writer's entry is older than the re-check period, a new connection walks the list
 *    again and the frozen node costs it one connect timeout (1 s here), not 5 s. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "sk_test.h"
#include "sk_test_proc.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/db_writer.h"

/* The fixture's URL with the hosts @p first (host:port, "127.0.0.1" + port) put before the real
 * server. */
static sk_mysql_url_t url_with(const int *dead_ports, int ndead, int keep_real)
{
        sk_mysql_url_t u = sk_test_fx.conf.mysql;

        u.nhosts = 0;
        for (int i = 0; i < ndead; i++) {
                snprintf(u.hosts[u.nhosts].host, sizeof(u.hosts[0].host), "127.0.0.1");
                u.hosts[u.nhosts++].port = dead_ports[i];
        }
        if (keep_real)
                u.hosts[u.nhosts++] = sk_test_fx.conf.mysql.hosts[0];
        memcpy(u.host, u.hosts[0].host, sizeof(u.host));
        u.port = u.hosts[0].port;
        return u;
}

static void real_name(char *buf, size_t size)
{
        snprintf(buf, size, "%s:%d", sk_test_fx.conf.mysql.hosts[0].host,
                 sk_test_fx.conf.mysql.hosts[0].port);
}

START_TEST(first_host_dead)
{
        int dead[] = { 1 };
        sk_mysql_url_t u = url_with(dead, 1, 1);
        char errstr[1024] = "", name[300], want[300];
        int64_t v = 0;
        sk_db_t *db;

        ck_assert_int_eq(u.nhosts, 2);
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 0);
        ck_assert_str_eq(name, "");
        db = sk_db_connect(&u, 0, 5, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "connect: %s", errstr);
        real_name(want, sizeof(want));
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 1);
        ck_assert_str_eq(name, want);
        ck_assert_int_eq(sk_db_exec(db, "CREATE TABLE IF NOT EXISTS t0223 (k INT PRIMARY KEY, v INT)",
                                    errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_begin(db, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_exec(db, "REPLACE INTO t0223 VALUES (1, 42)", errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_commit(db, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT v FROM t0223 WHERE k = 1", &v, NULL, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 42);
        /* A reconnect chooses the same way. */
        ck_assert_int_eq(sk_db_reconnect(db, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT v FROM t0223 WHERE k = 1", &v, NULL, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 42);
        sk_db_close(db);
}
END_TEST

START_TEST(all_hosts_dead)
{
        int dead[] = { 1, 2 };
        sk_mysql_url_t u = url_with(dead, 2, 0);
        char errstr[1024] = "", name[300];

        snprintf(u.password, sizeof(u.password), "pw0223secret");
        ck_assert_ptr_null(sk_db_connect(&u, 0, 5, errstr, sizeof(errstr)));
        ck_assert_msg(strstr(errstr, "no writable node among 2: 127.0.0.1:1: connect: mysql error 200"),
                      "%s", errstr);
        ck_assert_msg(strstr(errstr, "; 127.0.0.1:2: connect: mysql error 200"), "%s", errstr);
        ck_assert_ptr_null(strstr(errstr, "pw0223secret"));
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 0);
}
END_TEST

START_TEST(galera_scheme_refuses_standalone)
{
        char errstr[1024] = "";
        sk_mysql_url_t u = sk_test_fx.conf.mysql;
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr));
        int64_t wsrep = 0;

        ck_assert_msg(db != NULL, "connect: %s", errstr);
        /* @@wsrep_on exists on every MariaDB (OFF without Galera). */
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT @@GLOBAL.wsrep_on", &wsrep, NULL, errstr,
                                         sizeof(errstr)), SK_OK);
        sk_db_close(db);
        if (wsrep) {
                fprintf(stderr, "0223: the shared server runs wsrep; mysql-galera:// check skipped\n");
                return;
        }
        u.galera_only = 1;
        ck_assert_ptr_null(sk_db_connect(&u, 0, 5, errstr, sizeof(errstr)));
        ck_assert_msg(strstr(errstr, "refused: mysql-galera:// and the server has no wsrep"), "%s", errstr);
}
END_TEST

/* The first node leaves and comes back: a socat proxy in front of the same server. */
START_TEST(first_node_rejoins)
{
        int pport = sk_test_free_port();
        int first[1];
        sk_mysql_url_t u;
        char errstr[1024] = "", name[300], proxy_name[64], want[300];
        sk_db_t *db, *db2;
        pid_t proxy;
        int64_t t0, moved_ms = -1;

        first[0] = pport;
        u = url_with(first, 1, 1);
        snprintf(proxy_name, sizeof(proxy_name), "127.0.0.1:%d", pport);
        real_name(want, sizeof(want));
        proxy = sk_test_proxy_start(pport, sk_test_fx.conf.mysql.hosts[0].port);
        db = sk_db_connect(&u, 0, 5, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "connect: %s", errstr);
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 1);
        ck_assert_str_eq(name, proxy_name);

        /* The first node dies: the statement fails, the reconnect lands on the second. */
        kill(-proxy, SIGKILL);
        (void)sk_test_stop(proxy, 5);
        ck_assert_int_ne(sk_db_exec(db, "SELECT 1", errstr, sizeof(errstr)), SK_OK);
        ck_assert_msg(sk_db_reconnect(db, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 1);
        ck_assert_str_eq(name, want);
        ck_assert_int_eq(sk_db_begin(db, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_db_commit(db, errstr, sizeof(errstr)), SK_OK);

        /* It comes back: within about a second a new transaction goes there again. */
        proxy = sk_test_proxy_start(pport, sk_test_fx.conf.mysql.hosts[0].port);
        t0 = sk_mono_ms();
        while (sk_mono_ms() - t0 < 4000) {
                ck_assert_msg(sk_db_begin(db, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
                ck_assert_int_eq(sk_db_commit(db, errstr, sizeof(errstr)), SK_OK);
                sk_db_writer_name(&u, name, sizeof(name));
                if (strcmp(name, proxy_name) == 0) {
                        moved_ms = sk_mono_ms() - t0;
                        break;
                }
                usleep(50 * 1000);
        }
        ck_assert_msg(moved_ms >= 0 && moved_ms <= 2000, "moved back after %lld ms",
                      (long long)moved_ms);
        db2 = sk_db_connect(&u, 0, 5, errstr, sizeof(errstr));
        ck_assert_msg(db2 != NULL, "connect: %s", errstr);
        /* Both connections now go through the proxy: killing it breaks both. */
        kill(-proxy, SIGKILL);
        (void)sk_test_stop(proxy, 5);
        ck_assert_int_ne(sk_db_exec(db, "SELECT 1", errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_ne(sk_db_exec(db2, "SELECT 1", errstr, sizeof(errstr)), SK_OK);
        sk_db_close(db2);
        sk_db_close(db);
}
END_TEST

START_TEST(frozen_node_stepped_over)
{
        int pport = sk_test_free_port();
        int first[1];
        sk_mysql_url_t u;
        char errstr[1024] = "", name[300], proxy_name[64], want[300];
        sk_db_t *db, *db2;
        pid_t proxy;
        int64_t t0, took, v = 0;

        first[0] = pport;
        u = url_with(first, 1, 1);
        snprintf(proxy_name, sizeof(proxy_name), "127.0.0.1:%d", pport);
        proxy = sk_test_proxy_start(pport, sk_test_fx.conf.mysql.hosts[0].port);
        db = sk_db_connect_io(&u, 0, 1, 1, errstr, sizeof(errstr));
        ck_assert_msg(db != NULL, "connect: %s", errstr);
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 1);
        ck_assert_str_eq(name, proxy_name);

        /* Frozen: the statement gives up after its 1 s timeout. */
        ck_assert_int_eq(kill(-proxy, SIGSTOP), 0);
        t0 = sk_mono_ms();
        ck_assert_int_ne(sk_db_exec(db, "SELECT 1", errstr, sizeof(errstr)), SK_OK);
        took = sk_mono_ms() - t0;
        ck_assert_msg(took >= 800 && took < 4000, "statement on the frozen node gave up after %lld ms",
                      (long long)took);
        /* The next node at once: no connect to the frozen one (that would cost 1 s). */
        sk_db_prefer_next_node(db);
        t0 = sk_mono_ms();
        ck_assert_msg(sk_db_reconnect(db, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        took = sk_mono_ms() - t0;
        ck_assert_msg(took < 800, "reconnect to the next node took %lld ms", (long long)took);
        ck_assert_int_eq(sk_db_query_i64(db, "SELECT 7", &v, NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 7);
        /* The node found is the process's writer now: a new connection goes there first. */
        real_name(want, sizeof(want));
        ck_assert_int_eq(sk_db_writer_name(&u, name, sizeof(name)), 1);
        ck_assert_str_eq(name, want);
        t0 = sk_mono_ms();
        db2 = sk_db_connect_io(&u, 0, 1, 1, errstr, sizeof(errstr));
        took = sk_mono_ms() - t0;
        ck_assert_msg(db2 != NULL, "connect: %s", errstr);
        ck_assert_msg(took < 800, "connect to the writer found took %lld ms", (long long)took);
        sk_db_close(db2);
        /* Past the re-check period a new connection walks the list from its first node:
         * the frozen node costs one connect timeout (1 s, the connection's I/O timeout),
         * not 5 s. */
        sk_sleep_ms(SK__DB_WRITER_RECHECK_MS + 100, NULL);
        t0 = sk_mono_ms();
        db2 = sk_db_connect_io(&u, 0, 1, 1, errstr, sizeof(errstr));
        took = sk_mono_ms() - t0;
        ck_assert_msg(db2 != NULL, "connect: %s", errstr);
        ck_assert_msg(took >= 800 && took < 4000, "connect past the frozen node took %lld ms",
                      (long long)took);
        ck_assert_int_eq(sk_db_query_i64(db2, "SELECT 8", &v, NULL, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(v, 8);
        kill(-proxy, SIGCONT);
        kill(-proxy, SIGKILL);
        (void)sk_test_stop(proxy, 5);
        sk_db_close(db2);
        sk_db_close(db);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("db_multi", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("db_multi_host");
        TCase *tc = tcase_create("db_multi_host");

        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, first_host_dead);
        tcase_add_test(tc, all_hosts_dead);
        tcase_add_test(tc, galera_scheme_refuses_standalone);
        tcase_add_test(tc, first_node_rejoins);
        tcase_add_test(tc, frozen_node_stepped_over);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
