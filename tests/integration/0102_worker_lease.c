/* 0102_worker_lease.c: snowflake worker-id leases in the real Redis (DESIGN.md 2):
 * exclusive ids across processes, lowest free id, minting gated by :until, minting
 * stops when the lease is stolen, release on stop. Short lease (900 ms); own prefix. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/keys.h"
#include "sk/lease.h"
#include "sk/redis.h"
#include "sk/snowflake.h"

#define LEASE_MS 900

static sk_conf_t g_conf;
static sk_redis_t *g_r;

static void setup(void)
{
        char errstr[256] = "";
        sk_test_conf(&g_conf, "lease");
        g_conf.worker_lease_ms = LEASE_MS;
        g_r = sk_redis_connect(&g_conf.redis, 5000, errstr, sizeof(errstr));
        ck_assert_msg(g_r != NULL, "%s", errstr);
}

static void teardown(void)
{
        sk_redis_close(g_r);
        sk_test_cleanup(&g_conf);
}

static sk_idgen_t *start(int worker_id, sk_err_t *err)
{
        char errstr[256] = "";
        sk_conf_t conf = g_conf;
        sk_idgen_t *g;

        conf.worker_id = worker_id;
        g = sk_idgen_start(&conf, err, errstr, sizeof(errstr));
        if (!g && *err != SK_EEXIST)
                ck_abort_msg("idgen_start(%d): %s: %s", worker_id, sk_err2str(*err), errstr);
        return g;
}

/* Wait up to @p max_ms for sk_idgen_usable() == @p want. @returns ms waited or -1. */
static int64_t wait_usable(sk_idgen_t *g, int want, int64_t max_ms)
{
        int64_t t0 = sk_mono_ms();
        while (sk_mono_ms() - t0 <= max_ms) {
                if (sk_idgen_usable(g) == want)
                        return sk_mono_ms() - t0;
                sk_sleep_ms(10, NULL);
        }
        return -1;
}

static char *get_str(const char *key)
{
        redisReply *reply = redisCommand(sk_redis_ctx(g_r), "GET %s", key);
        char *s = NULL;
        ck_assert_ptr_nonnull(reply);
        if (reply->type == REDIS_REPLY_STRING)
                s = strdup(reply->str);
        freeReplyObject(reply);
        return s;
}

/* Run sk_idgen_start(worker_id) in a child process; returns its worker id, or -1000 -
 * error code when it failed. */
static int start_in_child(int worker_id)
{
        int fds[2], got = -9999;
        pid_t pid;

        ck_assert_int_eq(pipe(fds), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                char errstr[256] = "";
                sk_conf_t conf = g_conf;
                sk_err_t err = SK_OK;
                sk_idgen_t *g;
                int v;

                close(fds[0]);
                conf.worker_id = worker_id;
                g = sk_idgen_start(&conf, &err, errstr, sizeof(errstr));
                v = g ? sk_idgen_worker_id(g) : -1000 + (int)err;
                if (write(fds[1], &v, sizeof(v)) != (ssize_t)sizeof(v))
                        _exit(3);
                sk_idgen_stop(g);
                _exit(0);
        }
        close(fds[1]);
        if (read(fds[0], &got, sizeof(got)) != (ssize_t)sizeof(got))
                got = -9999;
        close(fds[0]);
        waitpid(pid, NULL, 0);
        return got;
}

START_TEST(same_id_taken)
{
        sk_err_t err = SK_OK;
        sk_idgen_t *g = start(7, &err);

        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(sk_idgen_worker_id(g), 7);
        ck_assert_int_eq(start_in_child(7), -1000 + (int)SK_EEXIST);
        sk_idgen_stop(g);
        /* released on stop: another process can take it now */
        ck_assert_int_eq(start_in_child(7), 7);
}
END_TEST

START_TEST(unset_id_lowest_free)
{
        sk_err_t err = SK_OK;
        sk_idgen_t *a = start(-1, &err);
        sk_idgen_t *b;
        int child;

        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(sk_idgen_worker_id(a), 0);
        child = start_in_child(-1);
        ck_assert_int_eq(child, 1);
        b = start(-1, &err);
        ck_assert_ptr_nonnull(b);
        /* the child released 1 on stop */
        ck_assert_int_eq(sk_idgen_worker_id(b), 1);
        sk_idgen_stop(a);
        sk_idgen_stop(b);
}
END_TEST

START_TEST(minting_waits_for_until)
{
        char until_key[SK_KEY_MAX];
        int64_t until_ms = sk_now_ms() + 1500, id = 0, t_ok;
        char errstr[256] = "";
        redisReply *reply;
        sk_err_t err = SK_OK;
        sk_idgen_t *g;

        sk_key_worker(until_key, g_conf.redis_prefix, 3, 1);
        reply = redisCommand(sk_redis_ctx(g_r), "SET %s %lld", until_key, (long long)until_ms);
        freeReplyObject(reply);
        g = start(3, &err);
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(sk_idgen_usable(g), 0);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_ge(wait_usable(g, 1, 5000), 0);
        t_ok = sk_now_ms();
        ck_assert_int_gt(t_ok, until_ms);
        ck_assert_msg(sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_gt(sk_snowflake_ts_ms(id), until_ms);
        ck_assert_int_eq((id >> 12) & 1023, 3);
        /* the renewals raised :until past the old value */
        {
                char *s = get_str(until_key);
                ck_assert_ptr_nonnull(s);
                ck_assert_int_gt(strtoll(s, NULL, 10), until_ms);
                free(s);
        }
        sk_idgen_stop(g);
}
END_TEST

START_TEST(missing_until_waits_two_thirds)
{
        int64_t t0 = sk_now_ms(), id = 0, prev = 0;
        char errstr[256] = "";
        sk_err_t err = SK_OK;
        sk_idgen_t *g = start(5, &err);

        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        ck_assert_int_ge(wait_usable(g, 1, 5000), 0);
        ck_assert_int_ge(sk_now_ms() - t0, LEASE_MS * 2 / 3);
        /* keeps minting across several renewals, strictly increasing */
        for (int i = 0; i < 30; i++) {
                ck_assert_msg(sk_idgen_next(g, &id, errstr, sizeof(errstr)) == SK_OK,
                              "mint %d: %s", i, errstr);
                ck_assert_int_gt(id, prev);
                prev = id;
                sk_sleep_ms(100, NULL);
        }
        sk_idgen_stop(g);
}
END_TEST

START_TEST(stolen_lease_stops_minting)
{
        char lease_key[SK_KEY_MAX];
        int64_t id = 0, waited;
        char errstr[256] = "", *s;
        redisReply *reply;
        sk_err_t err = SK_OK;
        sk_idgen_t *g = start(9, &err);

        ck_assert_ptr_nonnull(g);
        ck_assert_int_ge(wait_usable(g, 1, 5000), 0);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_OK);
        sk_key_worker(lease_key, g_conf.redis_prefix, 9, 0);
        reply = redisCommand(sk_redis_ctx(g_r), "SET %s thief", lease_key);
        freeReplyObject(reply);
        waited = wait_usable(g, 0, LEASE_MS / 3 + 200 /* scheduling slack */);
        ck_assert_msg(waited >= 0, "still minting after lease/3");
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_EAGAIN);
        /* the thief's value is never overwritten or deleted by us */
        sk_sleep_ms(LEASE_MS, NULL);
        s = get_str(lease_key);
        ck_assert_str_eq(s, "thief");
        free(s);
        ck_assert_int_eq(sk_idgen_usable(g), 0);
        /* the thief leaves: we lease the same id again and mint after :until */
        reply = redisCommand(sk_redis_ctx(g_r), "DEL %s", lease_key);
        freeReplyObject(reply);
        ck_assert_int_ge(wait_usable(g, 1, 5000), 0);
        ck_assert_int_eq(sk_idgen_next(g, &id, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(sk_idgen_worker_id(g), 9);
        s = get_str(lease_key);
        ck_assert_ptr_nonnull(s);
        ck_assert_str_ne(s, "thief");
        free(s);
        /* stop after a steal leaves the thief's key alone */
        reply = redisCommand(sk_redis_ctx(g_r), "SET %s thief2", lease_key);
        freeReplyObject(reply);
        sk_idgen_stop(g);
        s = get_str(lease_key);
        ck_assert_str_eq(s, "thief2");
        free(s);
}
END_TEST

START_TEST(stop_releases_keeps_until)
{
        char lease_key[SK_KEY_MAX], until_key[SK_KEY_MAX], *s;
        sk_err_t err = SK_OK;
        sk_idgen_t *g = start(11, &err);

        ck_assert_ptr_nonnull(g);
        sk_key_worker(lease_key, g_conf.redis_prefix, 11, 0);
        sk_key_worker(until_key, g_conf.redis_prefix, 11, 1);
        s = get_str(lease_key);
        ck_assert_ptr_nonnull(s);
        free(s);
        sk_idgen_stop(g);
        s = get_str(lease_key);
        ck_assert_ptr_null(s);
        s = get_str(until_key);
        ck_assert_ptr_nonnull(s);
        free(s);
        {
                redisReply *reply = redisCommand(sk_redis_ctx(g_r), "PTTL %s", until_key);
                ck_assert_int_eq(reply->integer, -1); /* no TTL */
                freeReplyObject(reply);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("worker_lease");
        TCase *tc = tcase_create("lease");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, same_id_taken);
        tcase_add_test(tc, unset_id_lowest_free);
        tcase_add_test(tc, minting_waits_for_until);
        tcase_add_test(tc, missing_until_waits_two_thirds);
        tcase_add_test(tc, stolen_lease_stops_minting);
        tcase_add_test(tc, stop_releases_keeps_until);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
