/* 0103_release_script.c: release.lua (DESIGN.md 4, 13) against the real Redis, through
 * sk_release_run: the unit of a cancelled/closed order goes back at most once per trace
 * (T:x), only if Redis really took it (T exists, no rollback restored it), never into a
 * missing stock key; the home step deletes users[U] only if it names T; a rollback after
 * a release restores nothing (no double release); keys written get the expiry E. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/order.h"
#include "sk/outcome.h"
#include "sk/redis.h"

#define EXTRA_MS "172800000"

typedef struct {
        int64_t vid;
        char meta[SK_KEY_MAX], stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX];
        int64_t end_ms;
} vk_t;

static redisReply *cmd(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;

        va_start(ap, fmt);
        reply = sk_test_vcmd(sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply != NULL, "redis command failed");
        ck_assert_msg(reply->type != REDIS_REPLY_ERROR, "redis error: %s", reply->str);
        return reply;
}

static void cmd_ok(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;

        va_start(ap, fmt);
        reply = sk_test_vcmd(sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply && reply->type != REDIS_REPLY_ERROR, "redis command failed");
        freeReplyObject(reply);
}

/* GET/HGET: a malloc'd string or NULL for nil. */
static char *str(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;
        char *s = NULL;

        va_start(ap, fmt);
        reply = sk_test_vcmd(sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_ptr_nonnull(reply);
        if (reply->type == REDIS_REPLY_STRING)
                s = strdup(reply->str);
        freeReplyObject(reply);
        return s;
}

static long long stock_of(const vk_t *k)
{
        char *s = str("GET %s", k->stock);
        long long v;

        ck_assert_ptr_nonnull(s);
        v = strtoll(s, NULL, 10);
        free(s);
        return v;
}

/* A voucher on sale with @p stock, preheated as DESIGN.md 4 says (users/trace hold "_"). */
static void voucher(vk_t *k, long long stock)
{
        k->vid = sk_test_rand_id();
        k->end_ms = sk_now_ms() + 3600000;
        sk_key_voucher(k->meta, sk_test_fx.conf.redis_prefix, k->vid, 0, SK_KEY_META);
        sk_key_voucher(k->stock, sk_test_fx.conf.redis_prefix, k->vid, 0, SK_KEY_STOCK);
        sk_key_voucher(k->users, sk_test_fx.conf.redis_prefix, k->vid, 0, SK_KEY_USERS);
        sk_key_voucher(k->trace, sk_test_fx.conf.redis_prefix, k->vid, 0, SK_KEY_TRACE);
        cmd_ok("HSET %s begin_ms %lld end_ms %lld status 1", k->meta,
               (long long)(sk_now_ms() - 60000), (long long)k->end_ms);
        cmd_ok("SET %s %lld", k->stock, stock);
        cmd_ok("HSET %s _ 1", k->users);
        cmd_ok("HSET %s _ 1", k->trace);
}

/* deduct.lua admits (trace, order, user); returns the order row the DB would hold. */
static sk_order_row_t buy(const vk_t *k, int64_t user)
{
        sk_order_row_t o = { .order_id = sk_test_rand_id(), .user_id = user,
                             .voucher_id = k->vid, .trace_id = sk_test_rand_id(),
                             .status = SK_ORDER_CLOSED };
        char t[SK_ID_STRLEN], od[SK_ID_STRLEN], u[SK_ID_STRLEN], v[SK_ID_STRLEN];
        char fence[SK_KEY_MAX + 32], ts[24];
        const char *keys[5] = { k->meta, k->stock, k->users, k->trace, fence };
        const char *args[5] = { t, od, u, v, ts };
        redisReply *reply = NULL;
        char errstr[256] = "";

        snprintf(ts, sizeof(ts), "%lld", (long long)sk_now_ms());
        sk_id_format(o.trace_id, t);
        snprintf(fence, sizeof(fence), "%.*s:f:%s", (int)(strlen(k->trace) - strlen(":trace")),
                 k->trace, t);
        sk_id_format(o.order_id, od);
        sk_id_format(user, u);
        sk_id_format(k->vid, v);
        ck_assert_int_eq(sk_script_eval(sk_test_fx.r, SK_SCRIPT_DEDUCT, 5, keys, 5, args, &reply, errstr,
                                        sizeof(errstr)), SK_OK);
        ck_assert_int_eq(reply->type, REDIS_REPLY_STRING); /* v5: admitted = the bare entry */
        freeReplyObject(reply);
        return o;
}

static sk_release_res_t release(const sk_order_row_t *o, const char *by)
{
        sk_release_res_t res;
        char errstr[256] = "";
        sk_err_t err = sk_release_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, o, by,
                                      sk_expire_extra_ms(48), &res, errstr, sizeof(errstr));

        ck_assert_msg(err == SK_OK, "release: %s: %s", sk_err2str(err), errstr);
        return res;
}

static char *user_entry(const vk_t *k, int64_t user)
{
        char u[SK_ID_STRLEN];

        sk_id_format(user, u);
        return str("HGET %s %s", k->users, u);
}

START_TEST(release_restores_once_and_frees_user)
{
        vk_t k;
        sk_order_row_t o;
        sk_release_res_t res;
        char *x, f[48];

        voucher(&k, 3);
        o = buy(&k, 11);
        ck_assert_int_eq(stock_of(&k), 2);
        res = release(&o, "close");
        ck_assert_int_eq(res.already, 0);
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(res.released, 1);
        ck_assert_int_eq(stock_of(&k), 3);
        ck_assert_ptr_null(user_entry(&k, 11));
        sk_field_trace(f, o.trace_id, 0);
        strcat(f, ":x");
        x = str("HGET %s %s", k.trace, f);
        ck_assert_ptr_nonnull(x);
        ck_assert_ptr_nonnull(strstr(x, "\"by\":\"close\""));
        ck_assert_ptr_nonnull(strstr(x, "\"restored\":1"));
        free(x);
        /* Again (a crash after the script, a reconciler pass): nothing more. */
        res = release(&o, "reconciler");
        ck_assert_int_eq(res.already, 1);
        ck_assert_int_eq(res.restored, 0);
        ck_assert_int_eq(res.released, 0);
        ck_assert_int_eq(stock_of(&k), 3);
}
END_TEST

START_TEST(release_then_rollback_restores_once)
{
        vk_t k;
        sk_order_row_t o;
        sk_rollback_res_t rb;
        char errstr[256] = "";

        voucher(&k, 5);
        o = buy(&k, 12);
        ck_assert_int_eq(release(&o, "cancel").restored, 1);
        ck_assert_int_eq(stock_of(&k), 5);
        /* A rollback (fence) of the same trace afterwards must not give it back again. */
        ck_assert_int_eq(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, k.vid, 0,
                                         o.trace_id, 12,
                                         "reconciler", SK_REASON_LOST, -1, sk_expire_extra_ms(48),
                                         &rb, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(rb.already, 0);
        ck_assert_int_eq(rb.restored, 0);
        ck_assert_int_eq(stock_of(&k), 5);
}
END_TEST

START_TEST(rollback_then_release_restores_once)
{
        vk_t k;
        sk_order_row_t o;
        sk_rollback_res_t rb;
        sk_release_res_t res;
        char errstr[256] = "";

        voucher(&k, 5);
        o = buy(&k, 13);
        ck_assert_int_eq(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, k.vid, 0,
                                         o.trace_id, 13,
                                         "reconciler", SK_REASON_LOST, -1, sk_expire_extra_ms(48),
                                         &rb, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(rb.restored, 1);
        ck_assert_int_eq(stock_of(&k), 5);
        res = release(&o, "close");
        ck_assert_int_eq(res.already, 0);
        ck_assert_int_eq(res.restored, 0);
        ck_assert_int_eq(stock_of(&k), 5);
}
END_TEST

START_TEST(release_without_deduct_writes_only_record)
{
        vk_t k;
        sk_order_row_t o = { .order_id = 77, .user_id = 14, .trace_id = sk_test_rand_id(),
                             .status = SK_ORDER_CLOSED };
        sk_release_res_t res;

        voucher(&k, 4);
        o.voucher_id = k.vid;
        res = release(&o, "close"); /* a DB-only order: no T in Redis */
        ck_assert_int_eq(res.restored, 0);
        ck_assert_int_eq(stock_of(&k), 4);
        ck_assert_int_eq(release(&o, "close").already, 1);
}
END_TEST

START_TEST(release_never_creates_stock)
{
        vk_t k;
        sk_order_row_t o;
        redisReply *reply;

        voucher(&k, 2);
        o = buy(&k, 15);
        cmd_ok("DEL %s", k.stock);
        ck_assert_int_eq(release(&o, "close").restored, 0);
        reply = cmd("EXISTS %s", k.stock);
        ck_assert_int_eq(reply->integer, 0);
        freeReplyObject(reply);
}
END_TEST

START_TEST(home_step_only_own_trace)
{
        vk_t k;
        sk_order_row_t o;
        char u[SK_ID_STRLEN], *e;
        sk_release_res_t res;

        voucher(&k, 2);
        o = buy(&k, 16);
        /* The user has meanwhile a newer admission T2: the release must leave it. */
        sk_id_format(16, u);
        cmd_ok("HSET %s %s 424242", k.users, u);
        res = release(&o, "close");
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(res.released, 0);
        e = user_entry(&k, 16);
        ck_assert_str_eq(e, "424242");
        free(e);
}
END_TEST

START_TEST(release_sets_expiry)
{
        vk_t k;
        sk_order_row_t o;
        redisReply *reply;
        long long want;

        voucher(&k, 2);
        cmd_ok("PERSIST %s", k.trace);
        o = buy(&k, 17);
        release(&o, "close");
        want = (long long)(k.end_ms + sk_expire_extra_ms(48)); /* GT raised the deduct's E */
        reply = cmd("PEXPIRETIME %s", k.trace);
        ck_assert_int_eq(reply->integer, want);
        freeReplyObject(reply);
        reply = cmd("PEXPIRETIME %s", k.stock);
        ck_assert_int_eq(reply->integer, want);
        freeReplyObject(reply);
}
END_TEST

START_TEST(invalid_args_write_nothing)
{
        vk_t k;
        const char *keys[4];
        const char *bad[][4] = {
                { "0", "1", "close", EXTRA_MS },
                { "12", "01", "close", EXTRA_MS },
                { "12", "1", "pay", EXTRA_MS },
                { "12", "1", "close", "-1" },
                { "9223372036854775808", "1", "close", EXTRA_MS },
        };
        size_t i;

        voucher(&k, 2);
        keys[0] = k.meta;
        keys[1] = k.stock;
        keys[2] = k.users;
        keys[3] = k.trace;
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                redisReply *reply = NULL;
                char errstr[256] = "";
                sk_err_t err = sk_script_eval(sk_test_fx.r, SK_SCRIPT_RELEASE, 4, keys, 4, bad[i], &reply,
                                              errstr, sizeof(errstr));
                ck_assert_msg(err == SK_EINVAL, "case %zu: %s", i, sk_err2str(err));
                if (reply)
                        freeReplyObject(reply);
        }
        {
                redisReply *reply = cmd("HLEN %s", k.trace);
                ck_assert_int_eq(reply->integer, 1);
                freeReplyObject(reply);
        }
        ck_assert_int_eq(stock_of(&k), 2);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("release_script", &(sk_test_fix_opts_t){ .redis_only = 1 });
}

int main(void)
{
        Suite *s = suite_create("release_script");
        TCase *tc = tcase_create("release");

        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, release_restores_once_and_frees_user);
        tcase_add_test(tc, release_then_rollback_restores_once);
        tcase_add_test(tc, rollback_then_release_restores_once);
        tcase_add_test(tc, release_without_deduct_writes_only_record);
        tcase_add_test(tc, release_never_creates_stock);
        tcase_add_test(tc, home_step_only_own_trace);
        tcase_add_test(tc, release_sets_expiry);
        tcase_add_test(tc, invalid_args_write_nothing);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
