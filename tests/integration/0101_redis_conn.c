/* 0101_redis_conn.c: sk_redis error classes and script (re)loading (DESIGN.md 4, 8), and
 * concurrent admission on the last unit of stock.
 * The shared Redis (own key prefix) serves the concurrency test. Everything that would
 * disturb others (SCRIPT FLUSH, BUSY, READONLY, a frozen server) runs against a private
 * redis-server started by this test on a spare port and stopped (by its pid) at the end. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/redis.h"

#define EXTRA_MS "172800000"

typedef struct { char meta[SK_KEY_MAX], stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX]; } vkeys_t;

static void vkeys(const char *prefix, int64_t vid, vkeys_t *k)
{
        sk_key_voucher(k->meta, prefix, vid, 0, SK_KEY_META);
        sk_key_voucher(k->stock, prefix, vid, 0, SK_KEY_STOCK);
        sk_key_voucher(k->users, prefix, vid, 0, SK_KEY_USERS);
        sk_key_voucher(k->trace, prefix, vid, 0, SK_KEY_TRACE);
}

static void must(sk_redis_t *r, const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;

        va_start(ap, fmt);
        reply = sk_test_vcmd(r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply && reply->type != REDIS_REPLY_ERROR, "command %s failed", fmt);
        freeReplyObject(reply);
}

static long long get_ll(sk_redis_t *r, const char *key)
{
        redisReply *reply = sk_test_cmd(r, "GET %s", key);
        long long v;
        ck_assert_msg(reply && reply->type == REDIS_REPLY_STRING, "GET %s", key);
        v = strtoll(reply->str, NULL, 10);
        freeReplyObject(reply);
        return v;
}

static int64_t setup_voucher(sk_redis_t *r, const char *prefix, vkeys_t *k, long long stock)
{
        int64_t vid = sk_test_rand_id(), now = sk_now_ms();
        vkeys(prefix, vid, k);
        must(r, "HSET %s begin_ms %lld end_ms %lld status 1", k->meta,
             (long long)(now - 60000), (long long)(now + 3600000));
        must(r, "SET %s %lld", k->stock, stock);
        /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
        must(r, "HSET %s _ _", k->users);
        must(r, "HSET %s _ _", k->trace);
        return vid;
}

static sk_err_t deduct(sk_redis_t *r, const vkeys_t *k, int64_t vid, int64_t trace,
                       int64_t user, redisReply **reply, char *errstr, size_t errstr_size)
{
        char t[SK_ID_STRLEN], o[SK_ID_STRLEN], u[SK_ID_STRLEN], v[SK_ID_STRLEN];
        char fence[SK_KEY_MAX + 32], ts[24];
        const char *keys[5] = { k->meta, k->stock, k->users, k->trace, fence };
        const char *args[5] = { t, o, u, v, ts };
        sk_err_t err;

        snprintf(ts, sizeof(ts), "%lld", (long long)sk_now_ms());
        sk_id_format(trace, t);
        snprintf(fence, sizeof(fence), "%.*s:f:%s", (int)(strlen(k->trace) - strlen(":trace")),
                 k->trace, t);
        sk_id_format(trace, o);
        sk_id_format(user, u);
        sk_id_format(vid, v);
        err = sk_script_eval(r, SK_SCRIPT_DEDUCT, 5, keys, 5, args, reply, errstr, errstr_size);
        if (err == SK_OK)
                *reply = sk_test_admission_reply(*reply); /* v5: bare entry or code */
        return err;
}

/* ------------------------------------------------------------ concurrency */

#define NTHREADS 50

static struct {
        vkeys_t k;
        int64_t vid;
        pthread_barrier_t barrier;
        int ok, sold_out, other;
        volatile int done;
        int negative_seen;
        pthread_mutex_t mu;
} g_race;

static void *race_worker(void *arg)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&sk_test_fx.conf.redis, 10000, errstr, sizeof(errstr));
        redisReply *reply = NULL;
        sk_err_t err;

        (void)arg;
        pthread_barrier_wait(&g_race.barrier);
        if (!r) {
                pthread_mutex_lock(&g_race.mu);
                g_race.other++;
                pthread_mutex_unlock(&g_race.mu);
                return NULL;
        }
        err = deduct(r, &g_race.k, g_race.vid, sk_test_rand_id(), sk_test_rand_id(), &reply,
                     errstr, sizeof(errstr));
        pthread_mutex_lock(&g_race.mu);
        if (err == SK_OK && strcmp(reply->element[0]->str, "OK") == 0)
                g_race.ok++;
        else if (err == SK_OK && strcmp(reply->element[0]->str, "REJECT") == 0 &&
                 reply->element[1]->integer == 10005)
                g_race.sold_out++;
        else
                g_race.other++;
        pthread_mutex_unlock(&g_race.mu);
        if (reply)
                freeReplyObject(reply);
        sk_redis_close(r);
        return NULL;
}

static void *race_watcher(void *arg)
{
        sk_redis_t *r = arg;
        while (!g_race.done) {
                redisReply *reply = sk_test_cmd(r, "GET %s", g_race.k.stock);
                if (reply && reply->type == REDIS_REPLY_STRING && reply->str[0] == '-')
                        g_race.negative_seen = 1;
                if (reply)
                        freeReplyObject(reply);
        }
        return NULL;
}

START_TEST(concurrent_last_unit)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&sk_test_fx.conf.redis, 5000, errstr, sizeof(errstr));
        pthread_t thr[NTHREADS], watcher;

        ck_assert_msg(r != NULL, "%s", errstr);
        memset(&g_race, 0, sizeof(g_race));
        pthread_mutex_init(&g_race.mu, NULL);
        g_race.vid = setup_voucher(r, sk_test_fx.conf.redis_prefix, &g_race.k, 1);
        pthread_barrier_init(&g_race.barrier, NULL, NTHREADS);
        {
                sk_redis_t *rw = sk_redis_connect(&sk_test_fx.conf.redis, 5000, errstr,
                                                  sizeof(errstr));
                ck_assert_msg(rw != NULL, "%s", errstr);
                pthread_create(&watcher, NULL, race_watcher, rw);
                for (int i = 0; i < NTHREADS; i++)
                        ck_assert_int_eq(pthread_create(&thr[i], NULL, race_worker, NULL), 0);
                for (int i = 0; i < NTHREADS; i++)
                        pthread_join(thr[i], NULL);
                g_race.done = 1;
                pthread_join(watcher, NULL);
                sk_redis_close(rw);
        }
        ck_assert_int_eq(g_race.other, 0);
        ck_assert_int_eq(g_race.ok, 1);
        ck_assert_int_eq(g_race.sold_out, NTHREADS - 1);
        ck_assert_int_eq(g_race.negative_seen, 0);
        ck_assert_int_eq(get_ll(r, g_race.k.stock), 0);
        {
                redisReply *reply = sk_test_cmd(r, "HLEN %s", g_race.k.users);
                ck_assert_int_eq(reply->integer, 2); /* the one buyer and preheat's placeholder _ */
                freeReplyObject(reply);
        }
        sk_redis_close(r);
}
END_TEST

/* ------------------------------------------------------------ private server */

static pid_t g_srv_pid;
static sk_redis_url_t g_srv_url;

static int try_start_server(int port)
{
        char port_s[16];
        pid_t pid;

        snprintf(port_s, sizeof(port_s), "%d", port);
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);
                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                execlp("redis-server", "redis-server", "--port", port_s, "--bind", "127.0.0.1",
                       "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction",
                       "--busy-reply-threshold", "100", "--protected-mode", "yes",
                       (char *)NULL);
                _exit(127);
        }
        /* Wait for PING (up to 5 s) or for the child to die (port taken). */
        for (int i = 0; i < 100; i++) {
                int status;
                redisContext *c;
                struct timeval tv = { 0, 200000 };

                if (waitpid(pid, &status, WNOHANG) == pid)
                        return -1;
                c = redisConnectWithTimeout("127.0.0.1", port, tv);
                if (c && !c->err) {
                        redisReply *reply = redisCommand(c, "PING");
                        int up = reply && reply->type == REDIS_REPLY_STATUS;
                        if (reply)
                                freeReplyObject(reply);
                        redisFree(c);
                        if (up) {
                                g_srv_pid = pid;
                                return 0;
                        }
                } else if (c) {
                        redisFree(c);
                }
                usleep(50000);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
}

static void srv_setup(void)
{
        int port = 0;

        for (int attempt = 0; attempt < 10; attempt++) {
                port = 20000 + (int)(sk_test_rand_id() % 20000);
                if (try_start_server(port) == 0)
                        break;
                port = 0;
        }
        ck_assert_msg(port != 0, "could not start a private redis-server");
        memset(&g_srv_url, 0, sizeof(g_srv_url));
        snprintf(g_srv_url.host, sizeof(g_srv_url.host), "127.0.0.1");
        g_srv_url.port = port;
}

static void srv_teardown(void)
{
        if (g_srv_pid > 0) {
                kill(g_srv_pid, SIGCONT);
                kill(g_srv_pid, SIGTERM);
                waitpid(g_srv_pid, NULL, 0);
                g_srv_pid = 0;
        }
}

START_TEST(script_flush_reloads)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&g_srv_url, 5000, errstr, sizeof(errstr));
        vkeys_t k;
        int64_t vid;
        redisReply *reply = NULL;
        sk_err_t err;

        ck_assert_msg(r != NULL, "%s", errstr);
        ck_assert_int_eq(sk_redis_noeviction(r), 1);
        vid = setup_voucher(r, "p", &k, 5);
        /* A fresh server has no scripts: EVALSHA loads them (first use or NOSCRIPT). */
        err = deduct(r, &k, vid, 11, 21, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "%s", errstr);
        ck_assert_str_eq(reply->element[0]->str, "OK");
        freeReplyObject(reply);
        ck_assert_ptr_nonnull(sk_script_sha(SK_SCRIPT_DEDUCT));
        ck_assert_int_eq(strlen(sk_script_sha(SK_SCRIPT_DEDUCT)), 40);

        ck_assert_int_eq(sk_scripts_load(r, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_scripts_loaded(r), 1);
        must(r, "SCRIPT FLUSH");
        ck_assert_int_eq(sk_scripts_loaded(r), 0);
        err = deduct(r, &k, vid, 12, 22, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "%s", errstr);
        ck_assert_str_eq(reply->element[0]->str, "OK");
        freeReplyObject(reply);
        ck_assert_int_eq(get_ll(r, k.stock), 3); /* one deduction each, none doubled */
        sk_redis_close(r);
}
END_TEST

START_TEST(readonly_is_eagain)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&g_srv_url, 5000, errstr, sizeof(errstr));
        vkeys_t k;
        int64_t vid;
        redisReply *reply = NULL;
        sk_err_t err;

        ck_assert_msg(r != NULL, "%s", errstr);
        vid = setup_voucher(r, "p", &k, 5);
        ck_assert_int_eq(sk_scripts_load(r, errstr, sizeof(errstr)), SK_OK);
        /* A replica of a master that does not exist: read-only. */
        must(r, "REPLICAOF 127.0.0.1 1");
        err = deduct(r, &k, vid, 31, 41, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EAGAIN, "got %s: %s", sk_err2str(err), errstr);
        ck_assert_ptr_null(reply);
        err = sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "SET %s 1", k.stock);
        ck_assert_int_eq(err, SK_EAGAIN);
        ck_assert_ptr_nonnull(strstr(errstr, "READONLY"));
        must(r, "REPLICAOF NO ONE");
        ck_assert_int_eq(get_ll(r, k.stock), 5);
        /* a plain error reply is SK_EREDIS */
        err = sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "HGET %s x", k.stock);
        ck_assert_int_eq(err, SK_EREDIS);
        ck_assert_ptr_null(reply);
        sk_redis_close(r);
}
END_TEST

static void *busy_script(void *arg)
{
        sk_redis_t *r = arg;
        redisReply *reply = NULL;
        char errstr[256];
        /* Spins until SCRIPT KILL (no writes, so it is killable). */
        (void)sk_redis_cmdf(r, &reply, errstr, sizeof(errstr),
                            "EVAL %s 0", "local i = 0 while true do i = i + 1 end");
        if (reply)
                freeReplyObject(reply);
        return NULL;
}

START_TEST(busy_is_eagain)
{
        char errstr[256] = "";
        sk_redis_t *a = sk_redis_connect(&g_srv_url, 10000, errstr, sizeof(errstr));
        sk_redis_t *b = sk_redis_connect(&g_srv_url, 5000, errstr, sizeof(errstr));
        redisReply *reply = NULL;
        pthread_t thr;
        sk_err_t err;

        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        pthread_create(&thr, NULL, busy_script, a);
        sk_sleep_ms(400, NULL); /* past busy-reply-threshold (100 ms) */
        err = sk_redis_cmdf(b, &reply, errstr, sizeof(errstr), "SET busykey 1");
        ck_assert_msg(err == SK_EAGAIN, "got %s: %s", sk_err2str(err), errstr);
        ck_assert_ptr_nonnull(strstr(errstr, "BUSY"));
        err = sk_redis_cmdf(b, &reply, errstr, sizeof(errstr), "SCRIPT KILL");
        ck_assert_msg(err == SK_OK, "%s", errstr);
        freeReplyObject(reply);
        pthread_join(thr, NULL);
        sk_redis_close(a);
        sk_redis_close(b);
}
END_TEST

START_TEST(timeout_is_unknown_then_replay)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&g_srv_url, 300, errstr, sizeof(errstr));
        vkeys_t k;
        int64_t vid;
        redisReply *reply = NULL;
        sk_err_t err;

        ck_assert_msg(r != NULL, "%s", errstr);
        vid = setup_voucher(r, "p", &k, 5);
        ck_assert_int_eq(sk_scripts_load(r, errstr, sizeof(errstr)), SK_OK);
        kill(g_srv_pid, SIGSTOP);
        err = deduct(r, &k, vid, 51, 61, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EUNKNOWN, "got %s: %s", sk_err2str(err), errstr);
        ck_assert_ptr_null(reply);
        kill(g_srv_pid, SIGCONT);
        sk_sleep_ms(200, NULL);
        /* Same traceId on a fresh connection (the handle reconnects by itself). */
        err = deduct(r, &k, vid, 51, 61, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "got %s: %s", sk_err2str(err), errstr);
        ck_assert_msg(strcmp(reply->element[0]->str, "OK") == 0 ||
                      strcmp(reply->element[0]->str, "REPLAY") == 0, "%s", reply->element[0]->str);
        freeReplyObject(reply);
        ck_assert_int_eq(get_ll(r, k.stock), 4);
        sk_redis_close(r);
}
END_TEST

/* A pipeline whose connection breaks (a command timeout) mid-way: the commands
 * answered before keep their replies, every unanswered one is SK_EUNKNOWN (DESIGN.md
 * 4b, 8), and the handle reconnects for the next command. */
START_TEST(pipeline_timeout_unknown)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&g_srv_url, 300, errstr, sizeof(errstr));
        redisContext *ctl;
        sk_redis_pipe_t *p;
        redisReply *reply = NULL;
        const char *get[2] = { "GET", "pa" }, *set[3] = { "SET", "pb", "2" };
        struct timeval tv = { 2, 0 };

        ck_assert_msg(r != NULL, "%s", errstr);
        must(r, "SET pa 1");
        ctl = redisConnectWithTimeout("127.0.0.1", g_srv_url.port, tv);
        ck_assert_ptr_nonnull(ctl);
        p = sk_redis_pipe_new(r);
        ck_assert_int_eq(sk_redis_pipe_add(p, 2, get, NULL), 0);
        ck_assert_int_eq(sk_redis_pipe_add(p, 3, set, NULL), 1);
        ck_assert_int_eq(sk_redis_pipe_add(p, 2, get, NULL), 2);
        /* Writes wait 1.5 s: the SET (and the GET queued behind it) time out. */
        reply = redisCommand(ctl, "CLIENT PAUSE 1500 WRITE");
        ck_assert_msg(reply && reply->type == REDIS_REPLY_STATUS, "CLIENT PAUSE");
        freeReplyObject(reply);
        ck_assert_int_eq(sk_redis_pipe_exec(p), 2);
        ck_assert_int_eq(sk_redis_pipe_result(p, 0, &reply, errstr, sizeof(errstr)), SK_OK);
        ck_assert_str_eq(reply->str, "1");
        ck_assert_int_eq(sk_redis_pipe_result(p, 1, &reply, errstr, sizeof(errstr)), SK_EUNKNOWN);
        ck_assert_ptr_nonnull(strstr(errstr, "outcome unknown"));
        ck_assert_int_eq(sk_redis_pipe_result(p, 2, &reply, errstr, sizeof(errstr)), SK_EUNKNOWN);
        ck_assert_ptr_null(sk_redis_pipe_raw(p, 1));
        ck_assert_str_eq(sk_redis_pipe_raw(p, 0)->str, "1");
        sk_redis_pipe_free(p);
        reply = redisCommand(ctl, "CLIENT UNPAUSE");
        freeReplyObject(reply);
        redisFree(ctl);
        ck_assert_int_eq(sk_redis_cmdf(r, &reply, errstr, sizeof(errstr), "GET pa"), SK_OK);
        freeReplyObject(reply);
        sk_redis_close(r);
}
END_TEST

/* The startup check of every binary (DESIGN.md 4): Redis >= 7.0 and noeviction. */
START_TEST(check_server_policy)
{
        char errstr[256] = "";
        sk_redis_t *r = sk_redis_connect(&g_srv_url, 2000, errstr, sizeof(errstr));

        ck_assert_msg(r != NULL, "%s", errstr);
        ck_assert_msg(sk_redis_check_server(r, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        must(r, "CONFIG SET maxmemory-policy allkeys-lru");
        ck_assert_int_eq(sk_redis_check_server(r, errstr, sizeof(errstr)), SK_EINVAL);
        ck_assert_ptr_nonnull(strstr(errstr, "maxmemory-policy allkeys-lru"));
        ck_assert_int_eq(sk_redis_noeviction(r), 0);
        /* Every binary refuses to start on it (exit 2, one line naming the policy). */
        {
                static const char *const bins[] = { "seckill-reconciler", "seckill-consumer",
                                                    "seckill-front", NULL };
                const char *bin = getenv("SK_BIN");
                for (int i = 0; bin && bins[i]; i++) {
                        char cmd[1024], out[1024] = "";
                        FILE *f;
                        size_t n;
                        int st;
                        snprintf(cmd, sizeof(cmd), "%s/%s --redis-url redis://127.0.0.1:%d/0 2>&1",
                                 bin, bins[i], g_srv_url.port);
                        ck_assert_ptr_nonnull(f = popen(cmd, "r"));
                        n = fread(out, 1, sizeof(out) - 1, f);
                        out[n] = '\0';
                        st = pclose(f);
                        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d: %s",
                                      bins[i], st, out);
                        ck_assert_msg(strstr(out, "maxmemory-policy allkeys-lru") != NULL, "%s: %s",
                                      bins[i], out);
                }
                ck_assert_ptr_nonnull(bin);
        }
        must(r, "CONFIG SET maxmemory-policy noeviction");
        ck_assert_int_eq(sk_redis_check_server(r, errstr, sizeof(errstr)), SK_OK);
        sk_redis_close(r);
}
END_TEST

START_TEST(connect_refused)
{
        char errstr[256] = "";
        sk_redis_url_t url = g_srv_url;
        sk_redis_t *r;

        srv_teardown(); /* nobody listens there any more */
        r = sk_redis_connect(&url, 500, errstr, sizeof(errstr));
        ck_assert_ptr_null(r);
        ck_assert_str_ne(errstr, "");
}
END_TEST

static void shared_setup(void)
{
        sk_test_fix_setup("redis_conn", &(sk_test_fix_opts_t){ .redis_only = 1 });
}

int main(void)
{
        Suite *s = suite_create("redis_conn");
        TCase *tc = tcase_create("shared");
        TCase *tp = tcase_create("private");

        tcase_add_checked_fixture(tc, shared_setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, concurrent_last_unit);
        suite_add_tcase(s, tc);

        tcase_add_checked_fixture(tp, srv_setup, srv_teardown);
        tcase_set_timeout(tp, 60);
        tcase_add_test(tp, script_flush_reloads);
        tcase_add_test(tp, readonly_is_eagain);
        tcase_add_test(tp, busy_is_eagain);
        tcase_add_test(tp, timeout_is_unknown_then_replay);
        tcase_add_test(tp, pipeline_timeout_unknown);
        tcase_add_test(tp, check_server_policy);
        tcase_add_test(tp, connect_refused);
        suite_add_tcase(s, tp);
        return sk_test_run(s);
}
