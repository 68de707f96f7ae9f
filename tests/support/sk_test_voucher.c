/* sk_test_voucher.c: seed a voucher and admit purchases (sk_test_voucher.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/rebuild.h"
#include "sk/scripts.h"

/* A Redis write that must succeed with a non-error reply. */
static void must(sk_redis_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void must(sk_redis_t *r, const char *fmt, ...)
{
        redisReply *reply;
        va_list ap;

        va_start(ap, fmt);
        reply = sk_test_vcmd(r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply && reply->type != REDIS_REPLY_ERROR, "redis %s: %s", fmt,
                      reply ? reply->str : "no reply");
        freeReplyObject(reply);
}

static void db_rows(const sk_conf_t *conf, const sk_test_voucher_t *v, int64_t vid, int nb)
{
        char sql[512], window[160];

        if (v->begin_ms || v->end_ms)
                snprintf(window, sizeof(window), "FROM_UNIXTIME(%lld), FROM_UNIXTIME(%lld)",
                         (long long)(v->begin_ms / 1000), (long long)(v->end_ms / 1000));
        else
                snprintf(window, sizeof(window), "UTC_TIMESTAMP(3) - INTERVAL 1 HOUR, "
                         "UTC_TIMESTAMP(3) + INTERVAL 1 HOUR");
        if (nb > 1)
                snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, "
                         "buckets, begin_time, end_time, status) VALUES (%" PRId64 ", %lld, %d, %s, %d)",
                         vid, v->init_stock, nb, window, v->db_status);
        else
                snprintf(sql, sizeof(sql), "INSERT INTO tb_seckill_voucher (voucher_id, init_stock, "
                         "begin_time, end_time, status) VALUES (%" PRId64 ", %lld, %s, %d)",
                         vid, v->init_stock, window, v->db_status);
        sk_test_conf_exec(conf, sql);
        for (int b = 0; b < nb; b++) {
                snprintf(sql, sizeof(sql), "INSERT IGNORE INTO tb_seckill_stock (voucher_id, bucket, "
                         "init_stock, stock) VALUES (%" PRId64 ", %d, %lld, %lld)", vid, b,
                         nb > 1 ? v->init_stock / nb : v->init_stock,
                         nb > 1 ? v->db_stocks[b] : v->db_stock);
                sk_test_conf_exec(conf, sql);
        }
}

int64_t sk_test_voucher(const sk_test_voucher_t *v)
{
        const sk_conf_t *conf = v->conf ? v->conf : &sk_test_fx.conf;
        sk_redis_t *r = v->r ? v->r : sk_test_fx.r;
        int64_t vid = v->vid ? v->vid : sk_test_rand_id(), now = sk_now_ms();
        int64_t begin = v->begin_ms || v->end_ms ? v->begin_ms : now - 3600000;
        int64_t end = v->begin_ms || v->end_ms ? v->end_ms : now + 3600000;
        int nb = v->buckets > 1 ? v->buckets : 1;
        char k[SK_KEY_MAX], errstr[512] = "";

        if (v->db_status > 0)
                db_rows(conf, v, vid, nb);
        if (v->preheat) {
                sk_rebuild_report_t rep;

                ck_assert_msg(sk_voucher_preheat(conf, vid, 5000, &rep, errstr, sizeof(errstr)) == SK_OK,
                              "preheat: %s", errstr);
        }
        for (int b = 0; b < nb; b++) {
                long long stock = nb > 1 ? v->stocks[b] : v->stock;

                if (v->status > 0 && !v->preheat) {
                        sk_key_voucher(k, conf->redis_prefix, vid, b, SK_KEY_META);
                        if (nb > 1)
                                must(r, "HSET %s begin_ms %lld end_ms %lld status %d buckets %d", k,
                                     (long long)begin, (long long)end, v->status, nb);
                        else
                                must(r, "HSET %s begin_ms %lld end_ms %lld status %d", k,
                                     (long long)begin, (long long)end, v->status);
                }
                if (stock >= 0 && !v->preheat) {
                        sk_key_voucher(k, conf->redis_prefix, vid, b, SK_KEY_STOCK);
                        must(r, "SET %s %lld", k, stock);
                }
                if ((v->status > 0 && stock >= 0) || v->preheat) {
                        /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
                        sk_key_voucher(k, conf->redis_prefix, vid, b, SK_KEY_USERS);
                        must(r, "HSET %s _ _", k);
                        sk_key_voucher(k, conf->redis_prefix, vid, b, SK_KEY_TRACE);
                        must(r, "HSET %s _ _", k);
                }
        }
        return vid;
}

int64_t sk_test_voucher_open(long long stock)
{
        int64_t now = sk_now_ms();

        return sk_test_voucher(&(sk_test_voucher_t){ .stock = stock, .init_stock = stock,
                                                     .db_stock = stock, .begin_ms = now - 60000,
                                                     .end_ms = now + 3600000, .status = 1,
                                                     .db_status = 1 });
}

int sk_test_deduct(int64_t vid, int64_t uid, int64_t trace, int64_t order,
                   sk_order_msg_t *msg, char *json)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char k_fence[SK_KEY_MAX], s_t[SK_ID_STRLEN], s_o[SK_ID_STRLEN], s_u[SK_ID_STRLEN];
        char s_v[SK_ID_STRLEN], ts[24];
        const char *keys[5] = { k_meta, k_stock, k_users, k_trace, k_fence };
        const char *args[5] = { s_t, s_o, s_u, s_v, ts };
        int64_t t_id = trace ? trace : sk_test_rand_id();
        const char *prefix = sk_test_fx.conf.redis_prefix;
        char errstr[512] = "";
        redisReply *reply = NULL;
        int rc = -1;

        sk_key_voucher(k_meta, prefix, vid, 0, SK_KEY_META);
        sk_key_voucher(k_stock, prefix, vid, 0, SK_KEY_STOCK);
        sk_key_voucher(k_users, prefix, vid, 0, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, vid, 0, SK_KEY_TRACE);
        sk_key_fence(k_fence, prefix, vid, 0, t_id);
        sk_id_format(t_id, s_t);
        sk_id_format(order ? order : sk_test_rand_id(), s_o);
        sk_id_format(uid, s_u);
        sk_id_format(vid, s_v);
        /* ts: this host's clock, as a front's snowflake timestamp (DESIGN.md 4) */
        snprintf(ts, sizeof(ts), "%" PRId64, sk_now_ms());
        ck_assert_msg(sk_script_eval(sk_test_fx.r, SK_SCRIPT_DEDUCT, 5, keys, 5, args, &reply,
                                     errstr, sizeof(errstr)) == SK_OK, "deduct: %s", errstr);
        reply = sk_test_admission_reply(reply);
        ck_assert(reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1);
        if (strcmp(reply->element[0]->str, "OK") == 0 || strcmp(reply->element[0]->str, "REPLAY") == 0) {
                const char *s = reply->element[1]->str;

                if (json)
                        snprintf(json, SK_MSG_MAX, "%s", s);
                if (msg)
                        ck_assert_msg(sk_msg_parse(s, strlen(s), msg, errstr, sizeof(errstr)) == SK_OK,
                                      "deduct json %s: %s", s, errstr);
                rc = 0;
        } else if (strcmp(reply->element[0]->str, "REJECT") == 0) {
                rc = (int)reply->element[1]->integer;
        }
        freeReplyObject(reply);
        return rc;
}

int64_t sk_test_admit(int64_t vid, int64_t uid, int64_t *order, sk_order_msg_t *msg, char *json)
{
        int64_t trace = sk_test_rand_id(), ord = sk_test_rand_id();
        char k[SK_KEY_MAX];

        /* as preheat lays a bucket out (DESIGN.md 4): users and trace with `_` */
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_USERS);
        must(sk_test_fx.r, "HSET %s _ _", k);
        sk_key_voucher(k, sk_test_fx.conf.redis_prefix, vid, 0, SK_KEY_TRACE);
        must(sk_test_fx.r, "HSET %s _ _", k);
        ck_assert_msg(sk_test_deduct(vid, uid, trace, ord, msg, json) == 0, "deduct not admitted");
        if (order)
                *order = ord;
        return trace;
}

void sk_test_parse_msg(const char *json, sk_order_msg_t *msg)
{
        char errstr[256] = "";

        ck_assert_msg(sk_msg_parse(json, strlen(json), msg, errstr, sizeof(errstr)) == SK_OK, "%s",
                      errstr);
}

/* An element of a synthesized reply (freeReplyObject frees it with its parent). */
static redisReply *new_el(int type)
{
        redisReply *el = calloc(1, sizeof(*el));

        ck_assert(el != NULL);
        el->type = type;
        return el;
}

redisReply *sk_test_admission_reply(redisReply *reply)
{
        redisReply *arr, *st;

        if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_INTEGER))
                return reply;
        arr = new_el(REDIS_REPLY_ARRAY);
        st = new_el(REDIS_REPLY_STRING);
        arr->element = calloc(2, sizeof(*arr->element));
        ck_assert(arr->element != NULL);
        arr->elements = 2;
        st->str = strdup(reply->type == REDIS_REPLY_STRING ? "OK" : "REJECT");
        ck_assert(st->str != NULL);
        st->len = strlen(st->str);
        arr->element[0] = st;
        arr->element[1] = reply; /* moved: the original reply is the second element */
        return arr;
}
