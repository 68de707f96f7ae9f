/* 0100_redis_scripts.c: deduct.lua, rollback.lua and claim.lua against the real Redis
 * (DESIGN.md 4, 7, 8), through sk_redis_evalsha and sk_rollback_run. Every run uses its
 * own key prefix (sk_test_conf); keys are deleted at the end. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/msg.h"
#include "sk/traceset.h"
#include "sk/outcome.h"
#include "sk/redis.h"

#define EXTRA_MS "172800000"

typedef struct { char meta[SK_KEY_MAX], stock[SK_KEY_MAX], users[SK_KEY_MAX], trace[SK_KEY_MAX]; } vkeys_t;

static void vkeys(int64_t vid, vkeys_t *k)
{
        sk_key_voucher(k->meta, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_META);
        sk_key_voucher(k->stock, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_STOCK);
        sk_key_voucher(k->users, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        sk_key_voucher(k->trace, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
}

static redisReply *cmd(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;

        va_start(ap, fmt);
        reply = sk_test_vcmd(sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply != NULL, "redis command failed");
        return reply;
}

static long long cmd_int(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;
        long long v;

        va_start(ap, fmt);
        reply = sk_test_vcmd(sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply && reply->type == REDIS_REPLY_INTEGER, "expected an integer reply");
        v = reply->integer;
        freeReplyObject(reply);
        return v;
}

/* GET/HGET as a malloc'd string, NULL for nil. */
static char *cmd_str(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;
        char *s = NULL;

        va_start(ap, fmt);
        reply = sk_test_vcmd(sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply != NULL, "redis command failed");
        if (reply->type == REDIS_REPLY_STRING)
                s = strdup(reply->str);
        else
                ck_assert_int_eq(reply->type, REDIS_REPLY_NIL);
        freeReplyObject(reply);
        return s;
}

static long long get_stock(const vkeys_t *k)
{
        char *s = cmd_str("GET %s", k->stock);
        long long v;
        ck_assert_ptr_nonnull(s);
        v = strtoll(s, NULL, 10);
        free(s);
        return v;
}

/* A voucher on sale now (window [now - 60 s, now + 1 h]) with @p stock, laid out as
 * preheat lays it out (DESIGN.md 4): users and trace hold the placeholder `_`, and every
 * key has the expiry E = end_ms + EXTRA_MS (deduct.lua writes none). */
static int64_t new_voucher(vkeys_t *k, int status, int64_t begin_off_ms, int64_t end_off_ms,
                           long long stock)
{
        int64_t vid = sk_test_rand_id();
        int64_t now = sk_now_ms();
        redisReply *reply;

        vkeys(vid, k);
        reply = cmd("HSET %s begin_ms %lld end_ms %lld status %d", k->meta,
                    (long long)(now + begin_off_ms), (long long)(now + end_off_ms), status);
        freeReplyObject(reply);
        if (stock >= 0) {
                reply = cmd("SET %s %lld", k->stock, stock);
                freeReplyObject(reply);
        }
        freeReplyObject(cmd("HSET %s _ _", k->users));
        freeReplyObject(cmd("HSET %s _ _", k->trace));
        {
                const char *all[4] = { k->meta, k->stock, k->users, k->trace };
                for (int i = 0; i < 4; i++)
                        cmd_int("PEXPIREAT %s %lld", all[i],
                                (long long)(now + end_off_ms) + atoll(EXTRA_MS));
        }
        return vid;
}

static int64_t on_sale(vkeys_t *k, long long stock)
{
        return new_voucher(k, 1, -60000, 3600000, stock);
}

/* Run deduct.lua (KEYS meta stock users trace f:trace, ARGV traceId orderId userId
 * voucherId ts; @p ts NULL = this host's clock, as the front's snowflake timestamp);
 * returns the reply (owned) and the error code. */
static sk_err_t deduct_s(const vkeys_t *k, const char *trace, const char *order, const char *user,
                         const char *voucher, const char *ts, redisReply **reply,
                         char *errstr, size_t errstr_size)
{
        char fence[SK_KEY_MAX + 32], now_s[24];
        size_t n = strlen(k->trace) - strlen(":trace");
        const char *keys[5] = { k->meta, k->stock, k->users, k->trace, fence };
        const char *args[5] = { trace, order, user, voucher, ts ? ts : now_s };

        snprintf(now_s, sizeof(now_s), "%lld", (long long)sk_now_ms());
        snprintf(fence, sizeof(fence), "%.*s:f:%s", (int)n, k->trace, trace);
        sk_err_t err = sk_script_eval(sk_test_fx.r, SK_SCRIPT_DEDUCT, 5, keys, 5, args, reply, errstr,
                                      errstr_size);

        if (err == SK_OK)
                *reply = sk_test_admission_reply(*reply); /* v5: bare entry or code */
        return err;
}

static redisReply *deduct(const vkeys_t *k, int64_t vid, int64_t trace, int64_t order,
                          int64_t user, int qty)
{
        char t[SK_ID_STRLEN], o[SK_ID_STRLEN], u[SK_ID_STRLEN], v[SK_ID_STRLEN];
        char errstr[512] = "";
        redisReply *reply = NULL;
        sk_err_t err;

        ck_assert_int_eq(qty, 1); /* DESIGN.md 5: deductQty is exactly 1 (v5: no qty argument) */
        sk_id_format(trace, t);
        sk_id_format(order, o);
        sk_id_format(user, u);
        sk_id_format(vid, v);
        err = deduct_s(k, t, o, u, v, NULL, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "deduct: %s: %s", sk_err2str(err), errstr);
        ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
        ck_assert_uint_ge(reply->elements, 1);
        return reply;
}

static const char *status_of(const redisReply *reply)
{
        return reply->element[0]->str;
}

static void assert_status(const redisReply *reply, const char *status)
{
        ck_assert_str_eq(status_of(reply), status);
}

static void assert_reject(redisReply *reply, long long code)
{
        assert_status(reply, "REJECT");
        ck_assert_int_eq(reply->elements, 2);
        ck_assert_int_eq(reply->element[1]->type, REDIS_REPLY_INTEGER);
        ck_assert_int_eq(reply->element[1]->integer, code);
}

static sk_rollback_res_t rollback(int64_t vid, int64_t trace, int64_t user, const char *mode,
                                  sk_reason_t reason, int64_t clamp_to)
{
        sk_rollback_res_t res;
        char errstr[512] = "";
        sk_err_t err = sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, vid, 0, trace,
                                       user, mode, reason,
                                       clamp_to, sk_expire_extra_ms(48), &res, errstr,
                                       sizeof(errstr));
        ck_assert_msg(err == SK_OK, "rollback: %s: %s", sk_err2str(err), errstr);
        return res;
}

/* claim.lua with string args; returns reply (owned). */
static redisReply *claim(const vkeys_t *k, int nargs, const char **args, sk_err_t *err_out)
{
        const char *keys[2] = { k->meta, k->trace };
        char errstr[512] = "";
        redisReply *reply = NULL;
        sk_err_t err = sk_script_eval(sk_test_fx.r, SK_SCRIPT_CLAIM, 2, keys, nargs, args, &reply,
                                      errstr, sizeof(errstr));
        if (err_out)
                *err_out = err;
        else
                ck_assert_msg(err == SK_OK, "claim: %s: %s", sk_err2str(err), errstr);
        return reply;
}

/* Snapshot of the four keys (EXISTS + DUMP + PTTL presence) to prove "nothing written". */
typedef struct { int exists[4]; size_t len[4]; char *dump[4]; } snap_t;

static void snapshot(const vkeys_t *k, snap_t *s)
{
        const char *names[4] = { k->meta, k->stock, k->users, k->trace };
        for (int i = 0; i < 4; i++) {
                redisReply *reply;
                s->exists[i] = (int)cmd_int("EXISTS %s", names[i]);
                reply = cmd("DUMP %s", names[i]);
                s->len[i] = reply->type == REDIS_REPLY_STRING ? reply->len : 0;
                s->dump[i] = malloc(s->len[i] + 1);
                if (s->len[i])
                        memcpy(s->dump[i], reply->str, s->len[i]);
                freeReplyObject(reply);
        }
}

static void assert_same(const snap_t *a, const snap_t *b)
{
        for (int i = 0; i < 4; i++) {
                ck_assert_int_eq(a->exists[i], b->exists[i]);
                ck_assert_uint_eq(a->len[i], b->len[i]);
                ck_assert_msg(memcmp(a->dump[i], b->dump[i], a->len[i]) == 0,
                              "key %d changed", i);
        }
}

static void snap_free(snap_t *s)
{
        for (int i = 0; i < 4; i++)
                free(s->dump[i]);
}

/* ---------------------------------------------------------------- deduct */

/* sk/scripts.h: the hot path's answers are bare, an admission the entry itself (a
 * bulk string), a rejection its code (an integer); the rarer ones stay tables. */
START_TEST(deduct_hot_answers_are_bare)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 1), t1 = sk_test_rand_id();
        char t[SK_ID_STRLEN], o[SK_ID_STRLEN], u[SK_ID_STRLEN], v[SK_ID_STRLEN], ts[24];
        char fence[SK_KEY_MAX + 32], errstr[512] = "";
        const char *keys[5] = { k.meta, k.stock, k.users, k.trace, fence };
        const char *args[5] = { t, o, u, v, ts };
        redisReply *reply = NULL;

        sk_id_format(vid, v);
        for (int i = 0; i < 3; i++) {
                sk_id_format(i == 1 ? sk_test_rand_id() : t1, t); /* buyers 1, 2, 1 again */
                sk_id_format(i == 1 ? 77 : 55, o);
                sk_id_format(i == 1 ? 78 : 56, u);
                snprintf(ts, sizeof(ts), "%lld", (long long)sk_now_ms());
                snprintf(fence, sizeof(fence), "%.*s:f:%s",
                         (int)(strlen(k.trace) - strlen(":trace")), k.trace, t);
                ck_assert_msg(sk_script_eval(sk_test_fx.r, SK_SCRIPT_DEDUCT, 5, keys, 5, args, &reply,
                                             errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
                if (i == 0) {
                        ck_assert_int_eq(reply->type, REDIS_REPLY_STRING);
                        ck_assert_msg(strncmp(reply->str, "{\"traceId\":\"", 12) == 0, "%s",
                                      reply->str);
                } else if (i == 1) {
                        ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
                        ck_assert_int_eq(reply->integer, 10005);
                } else {
                        ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
                        ck_assert_str_eq(reply->element[0]->str, "REPLAY");
                }
                freeReplyObject(reply);
        }
}
END_TEST

START_TEST(deduct_admits_and_sets_ttl)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), order = sk_test_rand_id(), user = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, order, user, 1);
        sk_order_msg_t msg;
        char errstr[256], t[SK_ID_STRLEN], u[SK_ID_STRLEN], *s;
        int64_t now = sk_now_ms();

        assert_status(reply, "OK");
        ck_assert_int_eq(reply->elements, 2);
        ck_assert_msg(sk_msg_parse(reply->element[1]->str, reply->element[1]->len, &msg,
                                   errstr, sizeof(errstr)) == SK_OK, "msg: %s", errstr);
        ck_assert_int_eq(msg.trace_id, trace);
        ck_assert_int_eq(msg.order_id, order);
        ck_assert_int_eq(msg.user_id, user);
        ck_assert_int_eq(msg.voucher_id, vid);
        ck_assert_int_eq(msg.before_qty, 5);
        ck_assert_int_eq(msg.deduct_qty, 1);
        ck_assert_int_eq(msg.after_qty, 4);
        ck_assert_int_le(msg.ts_ms, now + 5000);
        ck_assert_int_ge(msg.ts_ms, now - 60000);
        ck_assert_int_eq(get_stock(&k), 4);
        sk_id_format(trace, t);
        sk_id_format(user, u);
        s = cmd_str("HGET %s %s", k.users, u);
        ck_assert_str_eq(s, t);
        free(s);
        s = cmd_str("HGET %s %s", k.trace, t);
        ck_assert_str_eq(s, reply->element[1]->str);
        free(s);
        /* The expiry preheat gave (E = end_ms + extra: end is now + 1 h, extra 48 h)
         * stays: DECRBY and HSET keep a key's TTL. */
        ck_assert_int_gt(cmd_int("PTTL %s", k.meta), 172800000LL);
        ck_assert_int_gt(cmd_int("PTTL %s", k.stock), 172800000LL);
        ck_assert_int_gt(cmd_int("PTTL %s", k.users), 172800000LL);
        ck_assert_int_gt(cmd_int("PTTL %s", k.trace), 172800000LL);
        freeReplyObject(reply);
}
END_TEST

START_TEST(deduct_replay_same_trace)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), order = sk_test_rand_id(), user = sk_test_rand_id();
        redisReply *a = deduct(&k, vid, trace, order, user, 1);
        redisReply *b = deduct(&k, vid, trace, order, user, 1);

        assert_status(a, "OK");
        assert_status(b, "REPLAY");
        ck_assert_str_eq(a->element[1]->str, b->element[1]->str);
        ck_assert_int_eq(get_stock(&k), 4);
        freeReplyObject(a);
        freeReplyObject(b);
}
END_TEST

/* DESIGN.md 4: a known traceId is a REPLAY only for the same purchase. Another userId or
 * orderId under that traceId is an id collision: COLLISION, nothing written (the front
 * answers 503 and counts it), never the other buyer's stored entry as a success. */
START_TEST(deduct_replay_of_other_purchase_is_collision)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), order = sk_test_rand_id(), user = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, order, user, 1);
        snap_t before, after;

        assert_status(reply, "OK");
        freeReplyObject(reply);
        snapshot(&k, &before);
        /* same traceId, another order of the same user */
        reply = deduct(&k, vid, trace, order + 1, user, 1);
        assert_status(reply, "COLLISION");
        freeReplyObject(reply);
        /* same traceId and order, another user */
        reply = deduct(&k, vid, trace, order, user + 1, 1);
        assert_status(reply, "COLLISION");
        freeReplyObject(reply);
        snapshot(&k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
        /* an entry that names no ids (not written by deduct.lua) is not ours either */
        freeReplyObject(cmd("HSET %s %lld garbage", k.trace, (long long)(trace + 7)));
        reply = deduct(&k, vid, trace + 7, order, user, 1);
        assert_status(reply, "COLLISION");
        freeReplyObject(reply);
        /* the purchase itself still replays */
        reply = deduct(&k, vid, trace, order, user, 1);
        assert_status(reply, "REPLAY");
        freeReplyObject(reply);
        ck_assert_int_eq(get_stock(&k), 4);
}
END_TEST

START_TEST(deduct_big_ids_unchanged)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        redisReply *reply;
        char v[SK_ID_STRLEN], errstr[256] = "";
        sk_err_t err;

        sk_id_format(vid, v);
        err = deduct_s(&k, "9223372036854775806", "9223372036854775807", "1990653204235288577",
                       v, NULL, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_OK, "%s", errstr);
        assert_status(reply, "OK");
        ck_assert_ptr_nonnull(strstr(reply->element[1]->str,
                "{\"traceId\":\"9223372036854775806\",\"orderId\":\"9223372036854775807\","
                "\"userId\":\"1990653204235288577\",\"voucherId\":\""));
        ck_assert_ptr_nonnull(strstr(reply->element[1]->str,
                "\",\"bucket\":0,\"home\":0,\"beforeQty\":5,\"deductQty\":1,\"afterQty\":4,\"ts\":"));
        freeReplyObject(reply);
        ck_assert_int_eq(cmd_int("HEXISTS %s 1990653204235288577", k.users), 1);
}
END_TEST

START_TEST(expiry_nx_then_gt)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t far_ms = sk_now_ms() + 30LL * 86400000;
        redisReply *reply;
        snap_t before, after;
        int64_t trace = sk_test_rand_id(), user = sk_test_rand_id(), order = sk_test_rand_id();

        /* DESIGN.md 4 (v4): deduct.lua spends no command on expiry: a short TTL stays
         * short, a later expiry stays later (preheat and rebuild own E). */
        cmd_int("PEXPIRE %s 100000", k.stock);
        cmd_int("PEXPIREAT %s %lld", k.trace, (long long)far_ms);
        reply = deduct(&k, vid, trace, order, user, 1);
        assert_status(reply, "OK");
        freeReplyObject(reply);
        ck_assert_int_le(cmd_int("PTTL %s", k.stock), 100000LL);
        ck_assert_int_gt(cmd_int("PTTL %s", k.trace), 29LL * 86400000);
        ck_assert_int_gt(cmd_int("PTTL %s", k.users), 172800000LL);

        /* REPLAY and FENCED write nothing */
        snapshot(&k, &before);
        reply = deduct(&k, vid, trace, order, user, 1);
        assert_status(reply, "REPLAY");
        freeReplyObject(reply);
        snapshot(&k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
        rollback(vid, trace, 0, "consumer", SK_REASON_LOST, -1);
        snapshot(&k, &before);
        reply = deduct(&k, vid, trace, sk_test_rand_id(), user, 1);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        snapshot(&k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
}
END_TEST

/* ---------------------------------------------------------------- rejects */

static void check_reject_no_write(vkeys_t *k, int64_t vid, int64_t user, long long code)
{
        snap_t before, after;
        redisReply *reply;

        snapshot(k, &before);
        reply = deduct(k, vid, sk_test_rand_id(), sk_test_rand_id(), user, 1);
        assert_reject(reply, code);
        freeReplyObject(reply);
        snapshot(k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
}

START_TEST(reject_codes_write_nothing)
{
        vkeys_t k;
        int64_t vid;

        vid = on_sale(&k, 5);
        cmd_int("DEL %s", k.meta);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10004);

        vid = new_voucher(&k, 4, -60000, 3600000, 5);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10013);
        /* paused wins over the window */
        vid = new_voucher(&k, 4, 60000, 3600000, 5);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10013);

        vid = new_voucher(&k, 1, 60000, 3600000, 5);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10002);

        vid = new_voucher(&k, 1, -3600000, -60000, 5);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10003);

        vid = new_voucher(&k, 2, -60000, 3600000, 5);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10011);

        vid = new_voucher(&k, 3, -60000, 3600000, 5);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10012);

        /* sold out (stock 0, one bucket); a missing stock key is a bucket with a key
         * missing: answered as a missing meta (DESIGN.md 4 v4), nothing written */
        vid = on_sale(&k, 0);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10005);
        vid = on_sale(&k, -1);
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10004);
}
END_TEST

START_TEST(member_before_stock)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 1);
        int64_t user = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, sk_test_rand_id(), sk_test_rand_id(), user, 1);

        assert_status(reply, "OK");
        freeReplyObject(reply);
        ck_assert_int_eq(get_stock(&k), 0);
        check_reject_no_write(&k, vid, user, 10006);              /* member, even sold out */
        check_reject_no_write(&k, vid, sk_test_rand_id(), 10005); /* others: sold out */
        ck_assert_int_eq(get_stock(&k), 0);
}
END_TEST

/* ---------------------------------------------------------------- invalid args */

static void check_bad_deduct(const vkeys_t *k, const char *trace, const char *order,
                             const char *user, const char *voucher, const char *ts)
{
        snap_t before, after;
        redisReply *reply = NULL;
        char errstr[256] = "";
        sk_err_t err;

        snapshot(k, &before);
        err = deduct_s(k, trace, order, user, voucher, ts, &reply, errstr, sizeof(errstr));
        ck_assert_msg(err == SK_EINVAL, "expected SK_EINVAL, got %s (%s) for %s/%s/%s/%s/%s",
                      sk_err2str(err), errstr, trace, order, user, voucher, ts ? ts : "now");
        ck_assert_ptr_null(reply);
        ck_assert_ptr_nonnull(strstr(errstr, "SKARG"));
        snapshot(k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
}

START_TEST(invalid_args_write_nothing)
{
        static const char *bad[] = { "01", "-1", "abc", "", "12345678901234567890",
                                     "9223372036854775808", "0", " 1", "1 ", "1.0", "+1", NULL };
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        char v[SK_ID_STRLEN];

        sk_id_format(vid, v);
        char old_ts[24], new_ts[24], lead0[26];

        for (int i = 0; bad[i]; i++) {
                check_bad_deduct(&k, bad[i], "2", "3", v, NULL);
                check_bad_deduct(&k, "1", bad[i], "3", v, NULL);
                check_bad_deduct(&k, "1", "2", bad[i], v, NULL);
                check_bad_deduct(&k, "1", "2", "3", bad[i], NULL);
                check_bad_deduct(&k, "1", "2", "3", v, bad[i]); /* ts */
        }
        /* ts: the snowflake timestamp of traceId, within +-5 s of Redis TIME */
        snprintf(old_ts, sizeof(old_ts), "%lld", (long long)(sk_now_ms() - 7000));
        snprintf(new_ts, sizeof(new_ts), "%lld", (long long)(sk_now_ms() + 7000));
        snprintf(lead0, sizeof(lead0), "0%lld", (long long)sk_now_ms());
        check_bad_deduct(&k, "1", "2", "3", v, old_ts);
        check_bad_deduct(&k, "1", "2", "3", v, new_ts);
        check_bad_deduct(&k, "1", "2", "3", v, lead0);
        check_bad_deduct(&k, "1", "2", "3", v, "99999999999");
        check_bad_deduct(&k, "1", "2", "3", "77", NULL); /* voucher does not match the keys */
        /* the largest id is accepted */
        {
                redisReply *reply = NULL;
                char errstr[256] = "";
                ck_assert_int_eq(deduct_s(&k, "9223372036854775807", "2", "3", v, NULL, &reply,
                                          errstr, sizeof(errstr)), SK_OK);
                assert_status(reply, "OK");
                freeReplyObject(reply);
        }
}
END_TEST

START_TEST(invalid_args_rollback_claim)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        const char *keys[4] = { k.meta, k.stock, k.users, k.trace };
        static const char *rb_bad[][8] = {
                { "01", "front", "1", "1", "", "", "lost", EXTRA_MS },
                { "1", "nobody", "1", "1", "", "", "lost", EXTRA_MS },
                { "1", "front", "2", "1", "", "", "lost", EXTRA_MS },
                { "1", "front", "1", "x", "", "", "lost", EXTRA_MS },
                { "1", "front", "1", "1", "-3", "", "lost", EXTRA_MS },
                { "1", "front", "1", "1", "", "abc", "lost", EXTRA_MS },
                { "1", "front", "1", "1", "", "", "", EXTRA_MS },
                { "1", "front", "1", "1", "", "", "lost", "-5" },
        };
        snap_t before, after;

        (void)vid;
        snapshot(&k, &before);
        for (size_t i = 0; i < sizeof(rb_bad) / sizeof(rb_bad[0]); i++) {
                redisReply *reply = NULL;
                char errstr[256] = "";
                sk_err_t err = sk_script_eval(sk_test_fx.r, SK_SCRIPT_ROLLBACK, 4, keys, 8, rb_bad[i],
                                              &reply, errstr, sizeof(errstr));
                ck_assert_msg(err == SK_EINVAL, "rollback case %zu: %s", i, sk_err2str(err));
                ck_assert_ptr_nonnull(strstr(errstr, "SKARG"));
        }
        {
                const char *c1[] = { "claim", EXTRA_MS, "01" };
                const char *c2[] = { "bogus", EXTRA_MS, "1" };
                const char *c3[] = { "sent", EXTRA_MS, "1", "x", "5" };
                const char *c4[] = { "sent", EXTRA_MS, "1", "1", "-5" };
                const char *c5[] = { "consume", EXTRA_MS, "1", "abc" };
                const char *c6[] = { "consume", EXTRA_MS };
                const char *c7[] = { "consume", EXTRA_MS, "1", "012" };
                const char *c8[] = { "consume", EXTRA_MS, "9223372036854775808" };
                const char *c9[] = { "consume", EXTRA_MS, "1:2" };
                const char *c10[] = { "consume", EXTRA_MS, "5", "" };
                const char *c11[] = { "consume", EXTRA_MS, "0" };
                const char **cases[] = { c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11 };
                int ns[] = { 3, 3, 5, 5, 4, 2, 4, 3, 3, 4, 3 };
                for (int i = 0; i < 11; i++) {
                        sk_err_t err;
                        redisReply *reply = claim(&k, ns[i], cases[i], &err);
                        ck_assert_msg(err == SK_EINVAL, "claim case %d: %s", i, sk_err2str(err));
                        ck_assert_ptr_null(reply);
                }
        }
        snapshot(&k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
}
END_TEST

/* ---------------------------------------------------------------- rollback */

START_TEST(rollback_then_late_deduct_fenced)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), order = sk_test_rand_id(), user = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, order, user, 1);
        sk_rollback_res_t res;
        char u[SK_ID_STRLEN];

        assert_status(reply, "OK");
        freeReplyObject(reply);
        ck_assert_int_eq(get_stock(&k), 4);
        res = rollback(vid, trace, 0, "consumer", SK_REASON_LOST, -1);
        ck_assert_int_eq(res.already, 0);
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(res.released, 1);
        ck_assert_int_eq(res.clamped, 0);
        ck_assert_int_eq(get_stock(&k), 5);
        sk_id_format(user, u);
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", k.users, u), 0);

        reply = deduct(&k, vid, trace, order, user, 1);
        assert_status(reply, "FENCED");
        ck_assert_int_eq(reply->elements, 1);
        freeReplyObject(reply);
        ck_assert_int_eq(get_stock(&k), 5);
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", k.users, u), 0);
}
END_TEST

START_TEST(rollback_idempotent)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, sk_test_rand_id(), sk_test_rand_id(), 1);
        sk_rollback_res_t res;

        assert_status(reply, "OK");
        freeReplyObject(reply);
        res = rollback(vid, trace, 0, "reconciler", SK_REASON_LOST, -1);
        ck_assert_int_eq(res.restored, 1);
        for (int i = 0; i < 2; i++) {
                res = rollback(vid, trace, 0, "reconciler", SK_REASON_LOST, -1);
                ck_assert_int_eq(res.already, 1);
                ck_assert_int_eq(res.restored, 0);
        }
        ck_assert_int_eq(get_stock(&k), 5);
}
END_TEST

START_TEST(rollback_without_deduct_fences)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), user = sk_test_rand_id();
        sk_rollback_res_t res = rollback(vid, trace, user, "front", SK_REASON_FRONT_ROLLBACK, -1);
        redisReply *reply;
        char t[SK_ID_STRLEN], *s;

        ck_assert_int_eq(res.restored, 0);
        ck_assert_int_eq(res.released, 0);
        ck_assert_int_eq(get_stock(&k), 5);
        sk_id_format(trace, t);
        s = cmd_str("HGET %s %s:r", k.trace, t);
        ck_assert_ptr_nonnull(s);
        ck_assert_ptr_nonnull(strstr(s, "\"mode\":\"front\",\"reason\":\"front_rollback\","
                                        "\"home\":0,\"restored\":0,\"released\":0,\"clamped\":0,\"ts\":"));
        free(s);
        ck_assert_int_gt(cmd_int("PTTL %s", k.trace), 0);
        reply = deduct(&k, vid, trace, sk_test_rand_id(), user, 1);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        ck_assert_int_eq(get_stock(&k), 5);
}
END_TEST

START_TEST(rollback_never_creates_stock)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), trace2 = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, sk_test_rand_id(), sk_test_rand_id(), 1);
        sk_rollback_res_t res;

        assert_status(reply, "OK");
        freeReplyObject(reply);
        reply = deduct(&k, vid, trace2, sk_test_rand_id(), sk_test_rand_id(), 1);
        assert_status(reply, "OK");
        freeReplyObject(reply);
        cmd_int("DEL %s", k.stock);
        res = rollback(vid, trace, 0, "consumer", SK_REASON_LOST, -1);
        ck_assert_int_eq(res.restored, 0);
        ck_assert_int_eq(res.released, 1);
        ck_assert_int_eq(cmd_int("EXISTS %s", k.stock), 0);
        res = rollback(vid, trace2, 0, "consumer", SK_REASON_SOLD_OUT, 3);
        ck_assert_int_eq(res.clamped, 0);
        ck_assert_int_eq(cmd_int("EXISTS %s", k.stock), 0);
        /* meta lost too: the fence still gets an expiry (now + extra) */
        cmd_int("DEL %s", k.meta);
        rollback(vid, sk_test_rand_id(), 0, "front", SK_REASON_FRONT_ROLLBACK, -1);
        ck_assert_int_gt(cmd_int("PTTL %s", k.trace), 0);
        ck_assert_int_eq(cmd_int("EXISTS %s", k.stock), 0);
        ck_assert_int_eq(cmd_int("EXISTS %s", k.meta), 0);
}
END_TEST

START_TEST(rollback_release_only_own_trace)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id(), user = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, sk_test_rand_id(), user, 1);
        sk_rollback_res_t res;
        char u[SK_ID_STRLEN], *s;

        assert_status(reply, "OK");
        freeReplyObject(reply);
        sk_id_format(user, u);
        /* The user's current admission is now another trace. */
        freeReplyObject(cmd("HSET %s %s 42", k.users, u));
        res = rollback(vid, trace, 0, "consumer", SK_REASON_LOST, -1);
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(res.released, 0);
        s = cmd_str("HGET %s %s", k.users, u);
        ck_assert_str_eq(s, "42");
        free(s);

        /* has_order: restore, keep the user */
        trace = sk_test_rand_id();
        user = sk_test_rand_id();
        reply = deduct(&k, vid, trace, sk_test_rand_id(), user, 1);
        assert_status(reply, "OK");
        freeReplyObject(reply);
        res = rollback(vid, trace, 0, "consumer", SK_REASON_HAS_ORDER, -1);
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(res.released, 0);
        sk_id_format(user, u);
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", k.users, u), 1);
        ck_assert_int_eq(get_stock(&k), 5); /* 5 -1 +1 (first) -1 +1 (second) */
}
END_TEST

START_TEST(rollback_clamp)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 10);
        int64_t trace = sk_test_rand_id(), user = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, sk_test_rand_id(), user, 1);
        sk_rollback_res_t res;
        char u[SK_ID_STRLEN];

        assert_status(reply, "OK");
        freeReplyObject(reply);
        ck_assert_int_eq(get_stock(&k), 9);
        res = rollback(vid, trace, 0, "consumer", SK_REASON_SOLD_OUT, 3);
        ck_assert_int_eq(res.restored, 0);
        ck_assert_int_eq(res.released, 1);
        ck_assert_int_eq(res.clamped, 1);
        ck_assert_int_eq(get_stock(&k), 3);
        ck_assert_int_gt(cmd_int("PTTL %s", k.stock), 0); /* SET cleared it; re-applied */
        sk_id_format(user, u);
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", k.users, u), 0);
        /* clamp never raises */
        res = rollback(vid, sk_test_rand_id(), 0, "consumer", SK_REASON_SOLD_OUT, 20);
        ck_assert_int_eq(res.clamped, 0);
        ck_assert_int_eq(get_stock(&k), 3);
        res = rollback(vid, sk_test_rand_id(), 0, "consumer", SK_REASON_SOLD_OUT, 0);
        ck_assert_int_eq(res.clamped, 1);
        ck_assert_int_eq(get_stock(&k), 0);
}
END_TEST

START_TEST(rollback_front_claimed)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t trace = sk_test_rand_id();
        redisReply *reply = deduct(&k, vid, trace, sk_test_rand_id(), sk_test_rand_id(), 1);
        sk_rollback_res_t res;
        char t[SK_ID_STRLEN];
        const char *args[3] = { "claim", EXTRA_MS, t };
        snap_t before, after;

        assert_status(reply, "OK");
        freeReplyObject(reply);
        sk_id_format(trace, t);
        reply = claim(&k, 3, args, NULL);
        assert_status(reply, "OK");
        freeReplyObject(reply);
        snapshot(&k, &before);
        res = rollback(vid, trace, 0, "front", SK_REASON_FRONT_ROLLBACK, -1);
        ck_assert_int_eq(res.claimed, 1);
        ck_assert_int_eq(res.restored, 0);
        snapshot(&k, &after);
        assert_same(&before, &after);
        snap_free(&before);
        snap_free(&after);
        /* the reconciler (not front) may still roll it back */
        res = rollback(vid, trace, 0, "reconciler", SK_REASON_LOST, -1);
        ck_assert_int_eq(res.claimed, 0);
        ck_assert_int_eq(res.restored, 1);
        ck_assert_int_eq(get_stock(&k), 5);
}
END_TEST

/* ---------------------------------------------------------------- claim */

static void assert_claim(redisReply *reply, long long redrives, long long failed,
                         long long consumed, const char *part, const char *off)
{
        assert_status(reply, "OK");
        ck_assert_int_eq(reply->elements, 6);
        ck_assert_int_eq(reply->element[1]->integer, redrives);
        ck_assert_int_eq(reply->element[2]->integer, failed);
        ck_assert_int_eq(reply->element[3]->integer, consumed);
        ck_assert_str_eq(reply->element[4]->str, part);
        ck_assert_str_eq(reply->element[5]->str, off);
        freeReplyObject(reply);
}

START_TEST(claim_counters)
{
        vkeys_t k;
        int64_t vid = on_sale(&k, 5);
        int64_t t1 = sk_test_rand_id(), t2 = sk_test_rand_id();
        char s1[SK_ID_STRLEN], s2[SK_ID_STRLEN];
        redisReply *reply;

        reply = deduct(&k, vid, t1, sk_test_rand_id(), sk_test_rand_id(), 1);
        freeReplyObject(reply);
        reply = deduct(&k, vid, t2, sk_test_rand_id(), sk_test_rand_id(), 1);
        freeReplyObject(reply);
        sk_id_format(t1, s1);
        sk_id_format(t2, s2);
        {
                const char *a[] = { "claim", EXTRA_MS, s1 };
                assert_claim(claim(&k, 3, a, NULL), 1, 0, 0, "", "");
                assert_claim(claim(&k, 3, a, NULL), 2, 0, 0, "", "");
        }
        {
                const char *a[] = { "sent", EXTRA_MS, s1, "3", "9223372036854775807" };
                assert_claim(claim(&k, 5, a, NULL), 2, 0, 0, "3", "9223372036854775807");
        }
        {
                const char *a[] = { "failed", EXTRA_MS, s1 };
                assert_claim(claim(&k, 3, a, NULL), 2, 1, 0, "", ""); /* a counted re-drive forgets its offset */
        }
        {
                const char *a[] = { "sent", EXTRA_MS, s1, "0", "0" };
                assert_claim(claim(&k, 5, a, NULL), 2, 1, 0, "0", "0");
        }
        ck_assert_int_gt(cmd_int("PTTL %s", k.trace), 0);
        /* t2 is fenced by the front before the consumer claims it */
        rollback(vid, t2, 0, "front", SK_REASON_FRONT_ROLLBACK, -1);
        {
                const char *a[] = { "consume", EXTRA_MS, s1, s2 };
                reply = claim(&k, 4, a, NULL);
                assert_status(reply, "OK");
                ck_assert_int_eq(reply->elements, 3);
                ck_assert_int_eq(reply->element[1]->integer, 0);
                ck_assert_int_eq(reply->element[2]->integer, 1);
                freeReplyObject(reply);
                ck_assert_int_eq(cmd_int("HEXISTS %s %s:c", k.trace, s2), 0);
        }
        {
                const char *a[] = { "claim", EXTRA_MS, s2 };
                reply = claim(&k, 3, a, NULL);
                assert_status(reply, "RESTORED");
                ck_assert_int_eq(reply->elements, 1);
                freeReplyObject(reply);
        }
        {
                const char *a[] = { "failed", EXTRA_MS, s1 };
                assert_claim(claim(&k, 3, a, NULL), 2, 2, 1, "", "");
        }
        /* consumed: the front's fence now answers CLAIMED */
        {
                sk_rollback_res_t res = rollback(vid, t1, 0, "front", SK_REASON_FRONT_ROLLBACK, -1);
                ck_assert_int_eq(res.claimed, 1);
        }
        /* v5: consume of a trace without a record writes the short record (the other
         * members read as 0 / ""); a later claim keeps consumed */
        {
                int64_t t3 = sk_test_rand_id();
                char s3[SK_ID_STRLEN], *rec;
                const char *a[] = { "consume", EXTRA_MS, s3 };
                const char *b[] = { "claim", EXTRA_MS, s3 };

                freeReplyObject(deduct(&k, vid, t3, sk_test_rand_id(), sk_test_rand_id(), 1));
                sk_id_format(t3, s3);
                reply = claim(&k, 3, a, NULL);
                assert_status(reply, "OK");
                ck_assert_int_eq(reply->element[1]->integer, 0);
                freeReplyObject(reply);
                rec = cmd_str("HGET %s %s:c", k.trace, s3);
                ck_assert_str_eq(rec, "{\"consumed\":1}");
                free(rec);
                assert_claim(claim(&k, 3, b, NULL), 1, 0, 1, "", "");
                rec = cmd_str("HGET %s %s:c", k.trace, s3);
                sk_claim_rec_t c;
                sk_claim_parse(rec, &c);
                ck_assert_int_eq(c.consumed, 1);
                ck_assert_int_eq(c.redrives, 1);
                free(rec);
        }
}
END_TEST

/* ---------------------------------------------------------------- reasons */

START_TEST(reason_table)
{
        int restore, release, clamp;
        sk_reason_t r;

        sk_reason_flags(SK_REASON_SOLD_OUT, &restore, &release, &clamp);
        ck_assert(restore == 0 && release == 1 && clamp == 1);
        sk_reason_flags(SK_REASON_HAS_ORDER, &restore, &release, &clamp);
        ck_assert(restore == 1 && release == 0 && clamp == 0);
        sk_reason_flags(SK_REASON_LOST, &restore, &release, &clamp);
        ck_assert(restore == 1 && release == 1 && clamp == 0);
        sk_reason_flags(SK_REASON_FRONT_ROLLBACK, &restore, &release, &clamp);
        ck_assert(restore == 1 && release == 1 && clamp == 0);
        ck_assert_int_eq(sk_reason_parse("front_rollback", &r), 0);
        ck_assert_int_eq(r, SK_REASON_FRONT_ROLLBACK);
        ck_assert_str_eq(sk_reason_str(SK_REASON_SOLD_OUT), "sold_out");
        ck_assert_int_eq(sk_reason_parse("bogus", &r), -1);
        ck_assert_int_eq(sk_expire_extra_ms(48), 48LL * 3600000 + 86400000);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("redis_scripts", &(sk_test_fix_opts_t){ .redis_only = 1 });
}

int main(void)
{
        Suite *s = suite_create("redis_scripts");
        TCase *tc = tcase_create("scripts");

        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, deduct_admits_and_sets_ttl);
        tcase_add_test(tc, deduct_hot_answers_are_bare);
        tcase_add_test(tc, deduct_replay_same_trace);
        tcase_add_test(tc, deduct_replay_of_other_purchase_is_collision);
        tcase_add_test(tc, deduct_big_ids_unchanged);
        tcase_add_test(tc, expiry_nx_then_gt);
        tcase_add_test(tc, reject_codes_write_nothing);
        tcase_add_test(tc, member_before_stock);
        tcase_add_test(tc, invalid_args_write_nothing);
        tcase_add_test(tc, invalid_args_rollback_claim);
        tcase_add_test(tc, rollback_then_late_deduct_fenced);
        tcase_add_test(tc, rollback_idempotent);
        tcase_add_test(tc, rollback_without_deduct_fences);
        tcase_add_test(tc, rollback_never_creates_stock);
        tcase_add_test(tc, rollback_release_only_own_trace);
        tcase_add_test(tc, rollback_clamp);
        tcase_add_test(tc, rollback_front_claimed);
        tcase_add_test(tc, claim_counters);
        tcase_add_test(tc, reason_table);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
