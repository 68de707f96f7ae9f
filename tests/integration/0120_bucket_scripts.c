/* 0120_bucket_scripts.c: the admission scripts of a bucketed voucher against the real
 * Redis (DESIGN.md 4 v4): deduct.lua on the home bucket (one round trip; OVERFLOW writes
 * users[U]=T and T:h=probing and nothing else; PROBING / SETTLED on a repeat; a bucket with
 * a key missing writes nothing), take.lua on another bucket (fence before replay,
 * COLLISION, 10005 on an empty bucket, sale checks, bucket/home in the entry), settle.lua
 * (T:h=j only while probing), home.lua (fence h when j != h, release or re-point users[U]
 * only if it names T), rollback.lua and release.lua on j != h (no users change, the home
 * bucket in the reply) and on j = h (their own home step), the give-up of a purchase that
 * took nothing (v5: only the short-lived f:T). Idempotency by traceId throughout. Every run uses its own key prefix; keys are deleted at the end. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/home.h"
#include "sk/ids.h"
#include "sk/msg.h"
#include "sk/order.h"
#include "sk/outcome.h"
#include "sk/redis.h"
#include "sk/scripts.h"

#define EXTRA_MS 172800000LL
#define NB 4                            /* buckets of the test voucher */

typedef struct {
        char meta[160], stock[160], users[160], trace[160];
} bkeys_t;

typedef struct {
        int64_t vid;
        char sv[SK_ID_STRLEN];
        bkeys_t b[NB];
} voucher_t;

/* One command routed by its key (sk_redis_vcmdf: any topology, DESIGN.md 4b); an error
 * reply fails the test. */
static redisReply *vcmd(const char *fmt, va_list ap)
{
        redisReply *reply = NULL;
        char err[256] = "";
        sk_err_t e = sk_redis_vcmdf(sk_test_fx.r, &reply, err, sizeof(err), fmt, ap);

        ck_assert_msg(e == SK_OK && reply != NULL, "redis error: %s", err);
        return reply;
}

static redisReply *cmd(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;

        va_start(ap, fmt);
        reply = vcmd(fmt, ap);
        va_end(ap);
        return reply;
}

static long long cmd_int(const char *fmt, ...)
{
        va_list ap;
        redisReply *reply;
        long long v;

        va_start(ap, fmt);
        reply = vcmd(fmt, ap);
        va_end(ap);
        ck_assert_msg(reply->type == REDIS_REPLY_INTEGER, "expected an integer reply");
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
        reply = vcmd(fmt, ap);
        va_end(ap);
        if (reply->type == REDIS_REPLY_STRING)
                s = strdup(reply->str);
        else
                ck_assert_int_eq(reply->type, REDIS_REPLY_NIL);
        freeReplyObject(reply);
        return s;
}

static void assert_hget(const char *key, const char *field, const char *want)
{
        char *s = cmd_str("HGET %s %s", key, field);

        if (!want) {
                ck_assert_msg(s == NULL, "%s %s = %s, want nil", key, field, s);
                return;
        }
        ck_assert_msg(s != NULL, "%s %s is nil, want %s", key, field, want);
        ck_assert_str_eq(s, want);
        free(s);
}

static long long stock_of(const voucher_t *v, int b)
{
        char *s = cmd_str("GET %s", v->b[b].stock);
        long long n;

        ck_assert_ptr_nonnull(s);
        n = strtoll(s, NULL, 10);
        free(s);
        return n;
}

/* A voucher of NB buckets on sale now, each bucket laid out as preheat does (DESIGN.md 4:
 * meta with buckets, stock, users and trace with `_`, every key with its expiry);
 * stock[b] units in bucket b. */
static void new_voucher(voucher_t *v, const long long stock[NB], int status)
{
        int64_t now = sk_now_ms(), end = now + 3600000;

        v->vid = sk_test_rand_id();
        sk_id_format(v->vid, v->sv);
        for (int b = 0; b < NB; b++) {
                bkeys_t *k = &v->b[b];
                const char *all[4] = { k->meta, k->stock, k->users, k->trace };

                snprintf(k->meta, sizeof(k->meta), "%s:{v:%s:%d}:meta",
                         sk_test_fx.conf.redis_prefix, v->sv, b);
                snprintf(k->stock, sizeof(k->stock), "%s:{v:%s:%d}:stock",
                         sk_test_fx.conf.redis_prefix, v->sv, b);
                snprintf(k->users, sizeof(k->users), "%s:{v:%s:%d}:users",
                         sk_test_fx.conf.redis_prefix, v->sv, b);
                snprintf(k->trace, sizeof(k->trace), "%s:{v:%s:%d}:trace",
                         sk_test_fx.conf.redis_prefix, v->sv, b);
                freeReplyObject(cmd("HSET %s begin_ms %lld end_ms %lld status %d buckets %d", k->meta,
                                    (long long)(now - 60000), (long long)end, status, NB));
                freeReplyObject(cmd("SET %s %lld", k->stock, stock[b]));
                freeReplyObject(cmd("HSET %s _ _", k->users));
                freeReplyObject(cmd("HSET %s _ _", k->trace));
                for (int i = 0; i < 4; i++)
                        cmd_int("PEXPIREAT %s %lld", all[i], (long long)end + EXTRA_MS);
        }
}

/* One purchase's ids as strings. */
typedef struct {
        char t[SK_ID_STRLEN], o[SK_ID_STRLEN], u[SK_ID_STRLEN], tr[SK_ID_STRLEN + 2];
        char th[SK_ID_STRLEN + 2], tx[SK_ID_STRLEN + 2];
} buy_t;

static void new_buy(buy_t *p)
{
        sk_id_format(sk_test_rand_id(), p->t);
        sk_id_format(sk_test_rand_id(), p->o);
        sk_id_format(sk_test_rand_id(), p->u);
        snprintf(p->tr, sizeof(p->tr), "%s:r", p->t);
        snprintf(p->th, sizeof(p->th), "%s:h", p->t);
        snprintf(p->tx, sizeof(p->tx), "%s:x", p->t);
}

static redisReply *ev(sk_script_t s, int nkeys, const char **keys, int nargs, const char **args,
                      sk_err_t *err_out)
{
        char errstr[512] = "";
        redisReply *reply = NULL;
        sk_err_t err = sk_script_eval(sk_test_fx.r, s, nkeys, keys, nargs, args, &reply, errstr,
                                      sizeof(errstr));

        if (err_out) {
                *err_out = err;
                return reply;
        }
        ck_assert_msg(err == SK_OK, "script %d: %s: %s", (int)s, sk_err2str(err), errstr);
        if (s == SK_SCRIPT_DEDUCT || s == SK_SCRIPT_TAKE)
                reply = sk_test_admission_reply(reply); /* v5: bare entry or code */
        ck_assert_int_eq(reply->type, REDIS_REPLY_ARRAY);
        ck_assert_uint_ge(reply->elements, 1);
        return reply;
}

static redisReply *deduct(const voucher_t *v, int h, const buy_t *p)
{
        const bkeys_t *k = &v->b[h];
        char fence[SK_KEY_MAX + 32], ts[24];
        const char *keys[5] = { k->meta, k->stock, k->users, k->trace, fence };
        const char *args[5] = { p->t, p->o, p->u, v->sv, ts };

        snprintf(fence, sizeof(fence), "%.*s:f:%s", (int)(strlen(k->trace) - strlen(":trace")),
                 k->trace, p->t);
        snprintf(ts, sizeof(ts), "%lld", (long long)sk_now_ms());
        return ev(SK_SCRIPT_DEDUCT, 5, keys, 5, args, NULL);
}

static redisReply *take(const voucher_t *v, int j, int h, const buy_t *p, sk_err_t *err)
{
        const bkeys_t *k = &v->b[j];
        const char *keys[3] = { k->meta, k->stock, k->trace };
        char hs[8], ts[24];
        const char *args[6] = { p->t, p->o, p->u, v->sv, ts, hs };

        snprintf(hs, sizeof(hs), "%d", h);
        snprintf(ts, sizeof(ts), "%lld", (long long)sk_now_ms());
        return ev(SK_SCRIPT_TAKE, 3, keys, 6, args, err);
}

static redisReply *settle(const voucher_t *v, int h, const buy_t *p, int j)
{
        const char *keys[1] = { v->b[h].trace };
        char js[8];
        const char *args[2] = { p->t, js };

        snprintf(js, sizeof(js), "%d", j);
        return ev(SK_SCRIPT_SETTLE, 1, keys, 2, args, NULL);
}

/* home.lua on h; @p j < 0: no bucket admitted T; @p repoint NULL: release. */
static redisReply *home(const voucher_t *v, int h, const buy_t *p, int j, const char *repoint)
{
        const bkeys_t *k = &v->b[h];
        const char *keys[3] = { k->meta, k->users, k->trace };
        char js[16] = "";
        const char *args[6] = { p->t, p->u, js, repoint ? repoint : "", "front_rollback",
                                "172800000" };

        if (j >= 0)
                snprintf(js, sizeof(js), "%d", j);
        return ev(SK_SCRIPT_HOME, 3, keys, 6, args, NULL);
}

/* rollback.lua on j with the 10-argument convention (home "" = from T). */
static redisReply *rollback(const voucher_t *v, int j, const buy_t *p, const char *mode,
                            const char *restore, const char *release, const char *repoint)
{
        const bkeys_t *k = &v->b[j];
        const char *keys[4] = { k->meta, k->stock, k->users, k->trace };
        const char *args[10] = { p->t, mode, restore, release, "", p->u, "front_rollback",
                                 "172800000", "", repoint ? repoint : "" };

        return ev(SK_SCRIPT_ROLLBACK, 4, keys, 10, args, NULL);
}

static redisReply *release(const voucher_t *v, int j, const buy_t *p)
{
        const bkeys_t *k = &v->b[j];
        const char *keys[4] = { k->meta, k->stock, k->users, k->trace };
        const char *args[4] = { p->t, p->u, "cancel", "172800000" };

        return ev(SK_SCRIPT_RELEASE, 4, keys, 4, args, NULL);
}

static void assert_status(const redisReply *reply, const char *status)
{
        ck_assert_msg(reply->element[0]->type == REDIS_REPLY_STRING, "status is not a string");
        ck_assert_str_eq(reply->element[0]->str, status);
}

static long long el_int(const redisReply *reply, size_t i)
{
        ck_assert_uint_gt(reply->elements, i);
        ck_assert_int_eq(reply->element[i]->type, REDIS_REPLY_INTEGER);
        return reply->element[i]->integer;
}

static void assert_reject(redisReply *reply, long long code)
{
        assert_status(reply, "REJECT");
        ck_assert_int_eq(el_int(reply, 1), code);
        freeReplyObject(reply);
}

/* Every key of the voucher as DUMP bytes, to prove "nothing written". */
typedef struct { size_t len[NB * 4]; char *dump[NB * 4]; } snap_t;

static void snapshot(const voucher_t *v, snap_t *s)
{
        for (int i = 0; i < NB * 4; i++) {
                const bkeys_t *k = &v->b[i / 4];
                const char *names[4] = { k->meta, k->stock, k->users, k->trace };
                redisReply *reply = cmd("DUMP %s", names[i % 4]);

                s->len[i] = reply->type == REDIS_REPLY_STRING ? reply->len : 0;
                s->dump[i] = malloc(s->len[i] + 1);
                if (s->len[i])
                        memcpy(s->dump[i], reply->str, s->len[i]);
                freeReplyObject(reply);
        }
}

static void assert_unchanged(const snap_t *a, const voucher_t *v)
{
        snap_t b;

        snapshot(v, &b);
        for (int i = 0; i < NB * 4; i++) {
                ck_assert_msg(a->len[i] == b.len[i] && memcmp(a->dump[i], b.dump[i], a->len[i]) == 0,
                              "bucket %d key %d changed", i / 4, i % 4);
                free(a->dump[i]);
                free(b.dump[i]);
        }
}

/* The entry's bucket and home, parsed as the consumer parses the message. */
static void assert_entry(const char *json, const buy_t *p, int bucket, int home_b)
{
        char want[64];
        sk_order_msg_t msg;
        char errstr[256];

        ck_assert_msg(sk_msg_parse(json, strlen(json), &msg, errstr, sizeof(errstr)) == SK_OK,
                      "entry: %s", errstr);
        ck_assert_int_eq(msg.deduct_qty, 1);
        ck_assert_ptr_nonnull(strstr(json, p->t));
        snprintf(want, sizeof(want), "\"bucket\":%d,\"home\":%d,", bucket, home_b);
        ck_assert_msg(strstr(json, want) != NULL, "%s lacks %s", json, want);
}

/* ---------------------------------------------------------------- deduct */

START_TEST(deduct_home_has_stock_one_round_trip)
{
        const long long stock[NB] = { 2, 2, 2, 2 };
        voucher_t v;
        buy_t p;
        redisReply *reply;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        reply = deduct(&v, 2, &p);
        assert_status(reply, "OK");
        assert_entry(reply->element[1]->str, &p, 2, 2);
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 2), 1);
        assert_hget(v.b[2].users, p.u, p.t);
        assert_hget(v.b[2].trace, p.th, NULL);
        reply = deduct(&v, 2, &p);
        assert_status(reply, "REPLAY");
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 2), 1);
}
END_TEST

/* Stock 0 on the home bucket of an N > 1 voucher: users[U]=T and T:h=probing, nothing
 * else; a repeat answers PROBING with N and h; another trace of the user is 10006. */
START_TEST(deduct_overflow_writes_membership_and_probing)
{
        const long long stock[NB] = { 0, 3, 3, 3 };
        voucher_t v;
        buy_t p, q;
        redisReply *reply;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        reply = deduct(&v, 0, &p);
        assert_status(reply, "OVERFLOW");
        ck_assert_int_eq(el_int(reply, 1), NB);
        ck_assert_int_eq(el_int(reply, 2), 0);
        freeReplyObject(reply);
        assert_hget(v.b[0].users, p.u, p.t);
        assert_hget(v.b[0].trace, p.th, "probing");
        assert_hget(v.b[0].trace, p.t, NULL);
        ck_assert_int_eq(cmd_int("HLEN %s", v.b[0].trace), 2); /* `_` and T:h */
        ck_assert_int_eq(cmd_int("HLEN %s", v.b[0].users), 2); /* `_` and U */
        for (int b = 0; b < NB; b++)
                ck_assert_int_eq(stock_of(&v, b), stock[b]);

        reply = deduct(&v, 0, &p);
        assert_status(reply, "PROBING");
        ck_assert_int_eq(el_int(reply, 1), NB);
        ck_assert_int_eq(el_int(reply, 2), 0);
        freeReplyObject(reply);

        q = p;
        sk_id_format(sk_test_rand_id(), q.t);
        assert_reject(deduct(&v, 0, &q), 10006);
}
END_TEST

/* The order of checks: the fence before the replay, before T:h. */
START_TEST(deduct_fence_before_replay_and_probing)
{
        const long long stock[NB] = { 0, 3, 3, 3 };
        voucher_t v;
        buy_t p;
        redisReply *reply;
        snap_t s;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 0, &p)); /* OVERFLOW */
        freeReplyObject(cmd("HSET %s %s x", v.b[0].trace, p.tr));
        snapshot(&v, &s);
        reply = deduct(&v, 0, &p);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        assert_unchanged(&s, &v);

        /* a stored T of another purchase with T:r: still FENCED, not COLLISION */
        new_buy(&p);
        freeReplyObject(cmd("HSET %s %s {\"userId\":\"1\"} %s x", v.b[1].trace, p.t, p.tr));
        snapshot(&v, &s);
        reply = deduct(&v, 1, &p);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        assert_unchanged(&s, &v);
        /* without the fence it is a COLLISION, nothing written */
        cmd_int("HDEL %s %s", v.b[1].trace, p.tr);
        snapshot(&v, &s);
        reply = deduct(&v, 1, &p);
        assert_status(reply, "COLLISION");
        freeReplyObject(reply);
        assert_unchanged(&s, &v);
}
END_TEST

/* A bucket with any key missing: answered as a missing meta (10004), nothing written. */
START_TEST(deduct_and_take_missing_key_write_nothing)
{
        const long long stock[NB] = { 0, 3, 3, 3 };
        voucher_t v;
        buy_t p;
        snap_t s;

        for (int kind = 0; kind < 4; kind++) {
                new_voucher(&v, stock, 1);
                new_buy(&p);
                if (kind == 0)
                        cmd_int("DEL %s", v.b[1].meta);
                else if (kind == 1)
                        cmd_int("DEL %s", v.b[1].stock);
                else if (kind == 2)
                        cmd_int("DEL %s", v.b[1].users);
                else
                        cmd_int("DEL %s", v.b[1].trace);
                snapshot(&v, &s);
                assert_reject(deduct(&v, 1, &p), 10004);
                if (kind != 2) /* take.lua has no users key */
                        assert_reject(take(&v, 1, 0, &p, NULL), 10004);
                assert_unchanged(&s, &v);
        }
        /* the home bucket of an overflow with its trace hash missing: no OVERFLOW either */
        new_voucher(&v, stock, 1);
        new_buy(&p);
        cmd_int("DEL %s", v.b[0].trace);
        snapshot(&v, &s);
        assert_reject(deduct(&v, 0, &p), 10004);
        assert_unchanged(&s, &v);
}
END_TEST

/* ---------------------------------------------------------------- take + settle */

START_TEST(take_admits_replays_and_settles)
{
        const long long stock[NB] = { 0, 0, 1, 5 };
        voucher_t v;
        buy_t p, other;
        redisReply *reply;
        snap_t s;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 0, &p)); /* OVERFLOW */
        /* bucket 1 empty: 10005, nothing written */
        snapshot(&v, &s);
        assert_reject(take(&v, 1, 0, &p, NULL), 10005);
        assert_unchanged(&s, &v);
        /* bucket 2 admits: DECRBY, T with bucket 2 and home 0; users of 2 untouched */
        reply = take(&v, 2, 0, &p, NULL);
        assert_status(reply, "OK");
        assert_entry(reply->element[1]->str, &p, 2, 0);
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 2), 0);
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", v.b[2].users, p.u), 0);
        /* the repeat is a REPLAY, even now the bucket is empty */
        reply = take(&v, 2, 0, &p, NULL);
        assert_status(reply, "REPLAY");
        assert_entry(reply->element[1]->str, &p, 2, 0);
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 2), 0);
        /* the same traceId for another purchase: COLLISION, nothing written */
        other = p;
        sk_id_format(sk_test_rand_id(), other.o);
        snapshot(&v, &s);
        reply = take(&v, 2, 0, &other, NULL);
        assert_status(reply, "COLLISION");
        freeReplyObject(reply);
        assert_unchanged(&s, &v);

        /* settle: probing -> 2, then ALREADY; deduct of T answers SETTLED 2 */
        reply = settle(&v, 0, &p, 2);
        assert_status(reply, "OK");
        freeReplyObject(reply);
        assert_hget(v.b[0].trace, p.th, "2");
        reply = settle(&v, 0, &p, 3);
        assert_status(reply, "ALREADY");
        ck_assert_str_eq(reply->element[1]->str, "2");
        freeReplyObject(reply);
        assert_hget(v.b[0].trace, p.th, "2");
        reply = deduct(&v, 0, &p);
        assert_status(reply, "SETTLED");
        ck_assert_int_eq(el_int(reply, 1), 2);
        ck_assert_int_eq(el_int(reply, 2), NB);
        ck_assert_int_eq(el_int(reply, 3), 0);
        freeReplyObject(reply);
        /* settle without T:h writes nothing */
        new_buy(&other);
        reply = settle(&v, 0, &other, 1);
        assert_status(reply, "NONE");
        freeReplyObject(reply);
        assert_hget(v.b[0].trace, other.th, NULL);
}
END_TEST

/* take.lua: fence before replay, the sale checks, argument checks (nothing written). */
START_TEST(take_fence_checks_and_args)
{
        const long long stock[NB] = { 0, 3, 3, 3 };
        voucher_t v;
        buy_t p;
        redisReply *reply;
        sk_err_t err;
        snap_t s;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(take(&v, 1, 0, &p, NULL));
        freeReplyObject(cmd("HSET %s %s x", v.b[1].trace, p.tr));
        snapshot(&v, &s);
        reply = take(&v, 1, 0, &p, NULL);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        /* take on the home bucket, a home beyond N, a bad id: SKARG */
        reply = take(&v, 0, 0, &p, &err);
        ck_assert_int_eq(err, SK_EINVAL);
        freeReplyObject(reply);
        new_buy(&p);
        reply = take(&v, 1, NB, &p, &err);
        ck_assert_int_eq(err, SK_EINVAL);
        freeReplyObject(reply);
        assert_unchanged(&s, &v);

        /* paused, ended, offline: the codes deduct.lua gives */
        new_buy(&p);
        freeReplyObject(cmd("HSET %s status 4", v.b[2].meta));
        assert_reject(take(&v, 2, 0, &p, NULL), 10013);
        freeReplyObject(cmd("HSET %s status 2", v.b[2].meta));
        assert_reject(take(&v, 2, 0, &p, NULL), 10011);
        freeReplyObject(cmd("HSET %s status 1 end_ms 1000", v.b[2].meta));
        assert_reject(take(&v, 2, 0, &p, NULL), 10003);
        ck_assert_int_eq(stock_of(&v, 2), 3);
        assert_hget(v.b[2].trace, p.t, NULL);
}
END_TEST

/* ---------------------------------------------------------------- home step */

START_TEST(home_step_fences_and_releases_once)
{
        const long long stock[NB] = { 0, 3, 3, 3 };
        voucher_t v;
        buy_t p;
        redisReply *reply;
        char *fence;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 0, &p)); /* OVERFLOW */
        freeReplyObject(take(&v, 3, 0, &p, NULL));
        /* give up: rollback.lua front on 3 (no users change, h in the reply), then home */
        reply = rollback(&v, 3, &p, "front", "1", "1", NULL);
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 1); /* restored */
        ck_assert_int_eq(el_int(reply, 2), 0); /* released: not here */
        ck_assert_int_eq(el_int(reply, 4), 0); /* h */
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 3), 3);
        assert_hget(v.b[0].users, p.u, p.t);
        reply = rollback(&v, 3, &p, "front", "1", "1", NULL);
        assert_status(reply, "ALREADY");
        ck_assert_int_eq(el_int(reply, 2), 0);
        freeReplyObject(reply);

        reply = home(&v, 0, &p, 3, NULL);
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 1); /* fenced h */
        ck_assert_int_eq(el_int(reply, 2), 1); /* released */
        ck_assert_int_eq(el_int(reply, 3), 0);
        freeReplyObject(reply);
        assert_hget(v.b[0].users, p.u, NULL);
        fence = cmd_str("HGET %s %s", v.b[0].trace, p.tr);
        ck_assert_ptr_nonnull(fence);
        ck_assert_ptr_nonnull(strstr(fence, "\"mode\":\"home\",\"reason\":\"front_rollback\",\"bucket\":3,"));
        free(fence);
        ck_assert_int_gt(cmd_int("PTTL %s", v.b[0].trace), EXTRA_MS);
        /* idempotent: nothing more */
        reply = home(&v, 0, &p, 3, NULL);
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 0);
        ck_assert_int_eq(el_int(reply, 2), 0);
        freeReplyObject(reply);
        /* a late deduct of T on h is FENCED; a late take on 3 too */
        reply = deduct(&v, 0, &p);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        reply = take(&v, 3, 0, &p, NULL);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 3), 3);
        /* the user may buy again (another trace): OVERFLOW again on the empty home */
        new_buy(&p);
        reply = deduct(&v, 0, &p);
        assert_status(reply, "OVERFLOW");
        freeReplyObject(reply);
}
END_TEST

/* users[U] is only released or re-pointed while it names T; "" bucket (every probed bucket
 * empty) still fences h; j = h writes no fence. */
START_TEST(home_step_only_own_trace_and_repoint)
{
        const long long stock[NB] = { 0, 0, 0, 0 };
        voucher_t v;
        buy_t p;
        redisReply *reply;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 1, &p)); /* OVERFLOW */
        freeReplyObject(cmd("HSET %s %s 42", v.b[1].users, p.u));
        reply = home(&v, 1, &p, -1, NULL);
        ck_assert_int_eq(el_int(reply, 1), 1);
        ck_assert_int_eq(el_int(reply, 2), 0);
        freeReplyObject(reply);
        assert_hget(v.b[1].users, p.u, "42");

        new_buy(&p);
        freeReplyObject(deduct(&v, 1, &p)); /* OVERFLOW */
        reply = home(&v, 1, &p, 1, "777");  /* j = h: no fence; has_order re-points */
        ck_assert_int_eq(el_int(reply, 1), 0);
        ck_assert_int_eq(el_int(reply, 2), 0);
        ck_assert_int_eq(el_int(reply, 3), 1);
        freeReplyObject(reply);
        assert_hget(v.b[1].users, p.u, "777");
        assert_hget(v.b[1].trace, p.tr, NULL);
}
END_TEST

/* rollback.lua and release.lua on j = h do the home step themselves; has_order re-points. */
START_TEST(rollback_release_home_step_same_bucket)
{
        const long long stock[NB] = { 3, 3, 3, 3 };
        voucher_t v;
        buy_t p;
        redisReply *reply;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 2, &p));
        reply = rollback(&v, 2, &p, "consumer", "1", "0", "555"); /* has_order */
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 1);
        ck_assert_int_eq(el_int(reply, 2), 0);
        ck_assert_int_eq(el_int(reply, 4), 2);
        ck_assert_int_eq(el_int(reply, 5), 1);
        freeReplyObject(reply);
        assert_hget(v.b[2].users, p.u, "555");
        ck_assert_int_eq(stock_of(&v, 2), 3);

        new_buy(&p);
        freeReplyObject(deduct(&v, 2, &p));
        reply = release(&v, 2, &p);
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 1);
        ck_assert_int_eq(el_int(reply, 2), 1);
        ck_assert_int_eq(el_int(reply, 3), 2);
        freeReplyObject(reply);
        assert_hget(v.b[2].users, p.u, NULL);
        ck_assert_int_eq(stock_of(&v, 2), 3);
}
END_TEST

/* release.lua on j != h: the unit goes back to j, users of h untouched, h in the reply;
 * ALREADY also names h, so the caller's home step completes the pair. */
START_TEST(release_other_bucket_then_home)
{
        const long long stock[NB] = { 0, 2, 2, 2 };
        voucher_t v;
        buy_t p;
        redisReply *reply;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 0, &p));
        freeReplyObject(take(&v, 1, 0, &p, NULL));
        freeReplyObject(settle(&v, 0, &p, 1));
        reply = release(&v, 1, &p);
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 1);
        ck_assert_int_eq(el_int(reply, 2), 0);
        ck_assert_int_eq(el_int(reply, 3), 0);
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 1), 2);
        assert_hget(v.b[0].users, p.u, p.t);
        reply = release(&v, 1, &p);
        assert_status(reply, "ALREADY");
        ck_assert_int_eq(el_int(reply, 3), 0);
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 1), 2);
        reply = home(&v, 0, &p, 1, NULL);
        ck_assert_int_eq(el_int(reply, 2), 1);
        freeReplyObject(reply);
        assert_hget(v.b[0].users, p.u, NULL);
        /* a rollback after the release restores nothing more (never twice) */
        reply = rollback(&v, 1, &p, "reconciler", "1", "1", NULL);
        assert_status(reply, "OK");
        ck_assert_int_eq(el_int(reply, 1), 0);
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 1), 2);
}
END_TEST

/* The C callers (consumer, closer, reconciler): sk_rollback_run and sk_release_run on the
 * trace's bucket 0 run the home step on the user's home bucket 2 themselves, also after
 * ALREADY (an interrupted pair completes). */
START_TEST(c_api_runs_home_step_on_other_bucket)
{
        const long long stock[NB] = { 3, 3, 0, 3 };
        voucher_t v;
        buy_t p;
        sk_rollback_res_t rr;
        sk_release_res_t rel;
        sk_order_row_t o;
        char errstr[512] = "";
        int64_t trace, user;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        freeReplyObject(deduct(&v, 2, &p)); /* OVERFLOW on 2 */
        freeReplyObject(take(&v, 0, 2, &p, NULL));
        sk_id_parse_cstr(p.t, &trace);
        sk_id_parse_cstr(p.u, &user);
        ck_assert_msg(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, v.vid, 0, trace,
                                      user, "reconciler", SK_REASON_LOST, -1, EXTRA_MS, &rr, errstr,
                                      sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(rr.restored, 1);
        ck_assert_int_eq(rr.home, 2);
        ck_assert_int_eq(rr.home_done, 1);
        ck_assert_int_eq(stock_of(&v, 0), 3);
        assert_hget(v.b[2].users, p.u, NULL);
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", v.b[2].trace, p.tr), 1);
        /* interrupted pair: users[U] back to T; a repeat (ALREADY) completes it */
        freeReplyObject(cmd("HSET %s %s %s", v.b[2].users, p.u, p.t));
        ck_assert_int_eq(sk_rollback_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, v.vid, 0,
                                         trace, user, "reconciler",
                                         SK_REASON_LOST, -1, EXTRA_MS, &rr, errstr,
                                         sizeof(errstr)), SK_OK);
        ck_assert_int_eq(rr.already, 1);
        ck_assert_int_eq(rr.home_done, 1);
        assert_hget(v.b[2].users, p.u, NULL);
        ck_assert_int_eq(stock_of(&v, 0), 3);

        /* release of an order whose unit came from bucket 0, home 2 */
        new_buy(&p);
        freeReplyObject(deduct(&v, 2, &p));
        freeReplyObject(take(&v, 0, 2, &p, NULL));
        freeReplyObject(settle(&v, 2, &p, 0));
        memset(&o, 0, sizeof(o));
        o.voucher_id = v.vid;
        o.bucket = 0;
        sk_id_parse_cstr(p.t, &o.trace_id);
        sk_id_parse_cstr(p.u, &o.user_id);
        sk_id_parse_cstr(p.o, &o.order_id);
        ck_assert_msg(sk_release_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, &o, "cancel",
                                     EXTRA_MS, &rel, errstr,
                                     sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(rel.restored, 1);
        ck_assert_int_eq(rel.released, 1);
        ck_assert_int_eq(rel.home, 2);
        ck_assert_int_eq(rel.home_done, 1);
        ck_assert_int_eq(stock_of(&v, 0), 3);
        assert_hget(v.b[2].users, p.u, NULL);
}
END_TEST

/* Issue 22 defect 6: the release of an order whose T is gone from Redis (lost data, a
 * DB-only order) must run the home step on the user's home bucket h, not on the order's
 * bucket j: the caller passes h (sk_home_bucket among the voucher's buckets). */
START_TEST(release_without_trace_uses_home)
{
        const long long stock[NB] = { 3, 3, 3, 3 };
        char errstr[512];
        voucher_t v;
        buy_t p;
        sk_order_row_t o;
        sk_release_res_t rel;
        int h;

        new_voucher(&v, stock, 1);
        do {
                new_buy(&p);
                sk_id_parse_cstr(p.u, &o.user_id);
        } while ((h = sk_home_bucket(o.user_id, NB)) == 0);
        /* U admitted with home h, its unit from bucket 0; then Redis lost T (no entry). */
        freeReplyObject(cmd("HSET %s %s %s", v.b[h].users, p.u, p.t));
        memset(&o, 0, sizeof(o));
        o.voucher_id = v.vid;
        o.bucket = 0;
        o.buckets = NB;
        sk_id_parse_cstr(p.t, &o.trace_id);
        sk_id_parse_cstr(p.u, &o.user_id);
        sk_id_parse_cstr(p.o, &o.order_id);
        ck_assert_msg(sk_release_run(sk_test_fx.r, sk_test_fx.conf.redis_prefix, &o, "cancel",
                                     EXTRA_MS, &rel, errstr,
                                     sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(rel.restored, 0);              /* no T: the rebuild counts the unit */
        ck_assert_int_eq(rel.home, h);
        ck_assert_int_eq(rel.home_done, 1);
        ck_assert_int_eq(rel.released, 1);
        assert_hget(v.b[h].users, p.u, NULL);           /* U may buy again */
        ck_assert_int_eq(cmd_int("HEXISTS %s %s", v.b[0].trace, p.tx), 1);
        ck_assert_int_eq(stock_of(&v, 0), 3);
}
END_TEST

/* The give-up of a purchase that took nothing (DESIGN.md 4 v5 "Give-up fence"): every
 * probed bucket empty, home.lua with the fence key writes f:T (PX = max(the request
 * deadline, 11 s)) instead of T:r and removes T:h and users[U]=T, so the home bucket's hashes are as
 * before the purchase; a late deduct of T is FENCED while f:T lives, even after a
 * restock; a repeat is harmless; users[U] naming another trace is kept. */
START_TEST(give_up_leaves_only_the_short_fence)
{
        const long long stock[NB] = { 0, 0, 0, 0 };
        voucher_t v;
        buy_t p, q;
        redisReply *reply;
        sk_home_res_t hr;
        char errstr[512] = "", fence[SK_KEY_MAX];
        int64_t trace, user;
        long long pttl;

        new_voucher(&v, stock, 1);
        new_buy(&p);
        reply = deduct(&v, 1, &p);
        assert_status(reply, "OVERFLOW");
        freeReplyObject(reply);
        for (int j = 0; j < NB; j++)
                if (j != 1)
                        assert_reject(take(&v, j, 1, &p, NULL), 10005);
        sk_id_parse_cstr(p.t, &trace);
        sk_id_parse_cstr(p.u, &user);
        ck_assert_msg(sk_home_give_up(sk_test_fx.r, sk_test_fx.conf.redis_prefix, v.vid, 1, trace,
                                      user, 3000, &hr,
                                      errstr, sizeof(errstr)) == SK_OK, "%s", errstr);
        ck_assert_int_eq(hr.fenced, 1);
        ck_assert_int_eq(hr.released, 1);
        for (int b = 0; b < NB; b++) {
                ck_assert_int_eq(cmd_int("HLEN %s", v.b[b].trace), 1); /* `_` only */
                ck_assert_int_eq(cmd_int("HLEN %s", v.b[b].users), 1);
        }
        sk_key_fence(fence, sk_test_fx.conf.redis_prefix, v.vid, 1, trace);
        /* PX = max(request deadline, 11 s): a 3 s deadline still fences for 11 s (the
         * deduct's ±5 s ts window + 1 s skew, DESIGN.md 4) */
        pttl = cmd_int("PTTL %s", fence);
        ck_assert_msg(pttl > 10000 && pttl <= SK_GIVEUP_FENCE_MIN_MS, "f:T PTTL %lld", pttl);
        ck_assert_int_eq(sk_giveup_fence_px_ms(3000), 11000);
        ck_assert_int_eq(sk_giveup_fence_px_ms(15000), 15000);
        /* a late deduct of T: FENCED, even with stock back in h */
        reply = deduct(&v, 1, &p);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        freeReplyObject(cmd("SET %s 2", v.b[1].stock));
        reply = deduct(&v, 1, &p);
        assert_status(reply, "FENCED");
        freeReplyObject(reply);
        ck_assert_int_eq(stock_of(&v, 1), 2);
        ck_assert_int_eq(cmd_int("HLEN %s", v.b[1].users), 1);
        /* a repeat of the give-up: nothing more to release */
        ck_assert_int_eq(sk_home_give_up(sk_test_fx.r, sk_test_fx.conf.redis_prefix, v.vid, 1,
                                         trace, user, 3000, &hr, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(hr.released, 0);
        /* the user buys again with another trace; a stale give-up of T keeps it */
        q = p;
        sk_id_format(sk_test_rand_id(), q.t);
        reply = deduct(&v, 1, &q);
        assert_status(reply, "OK");
        freeReplyObject(reply);
        ck_assert_int_eq(sk_home_give_up(sk_test_fx.r, sk_test_fx.conf.redis_prefix, v.vid, 1,
                                         trace, user, 3000, &hr, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(hr.released, 0);
        assert_hget(v.b[1].users, p.u, q.t);
        /* bad arguments: nothing written */
        ck_assert_int_eq(sk_home_give_up(sk_test_fx.r, sk_test_fx.conf.redis_prefix, v.vid, 1,
                                         trace, user, 0, &hr, errstr, sizeof(errstr)), SK_EINVAL);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("bucket_scripts", &(sk_test_fix_opts_t){ .redis_only = 1 });
}

int main(void)
{
        Suite *s = suite_create("bucket_scripts");
        TCase *tc = tcase_create("scripts");

        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, deduct_home_has_stock_one_round_trip);
        tcase_add_test(tc, deduct_overflow_writes_membership_and_probing);
        tcase_add_test(tc, deduct_fence_before_replay_and_probing);
        tcase_add_test(tc, deduct_and_take_missing_key_write_nothing);
        tcase_add_test(tc, take_admits_replays_and_settles);
        tcase_add_test(tc, take_fence_checks_and_args);
        tcase_add_test(tc, home_step_fences_and_releases_once);
        tcase_add_test(tc, home_step_only_own_trace_and_repoint);
        tcase_add_test(tc, rollback_release_home_step_same_bucket);
        tcase_add_test(tc, release_other_bucket_then_home);
        tcase_add_test(tc, c_api_runs_home_step_on_other_bucket);
        tcase_add_test(tc, release_without_trace_uses_home);
        tcase_add_test(tc, give_up_leaves_only_the_short_fence);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
