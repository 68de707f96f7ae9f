/* sk_test_redis.c: reading a voucher's Redis state in a test (sk_test_redis.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"

void sk_test_key(char *buf, int64_t vid, sk_key_kind_t kind)
{
        sk_key_voucher(buf, sk_test_fx.conf.redis_prefix, vid, 0, kind);
}

/* A command that must get a reply (an error reply included). */
static redisReply *cmd(sk_redis_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static redisReply *cmd(sk_redis_t *r, const char *fmt, ...)
{
        redisReply *reply;
        va_list ap;

        va_start(ap, fmt);
        reply = sk_test_vcmd(r ? r : sk_test_fx.r, fmt, ap);
        va_end(ap);
        ck_assert_msg(reply != NULL, "redis: %s: no reply", fmt);
        return reply;
}

long long sk_test_get_i64(sk_redis_t *r, const char *key)
{
        redisReply *reply = cmd(r, "GET %s", key);
        long long v = -1;

        if (reply->type == REDIS_REPLY_STRING)
                v = strtoll(reply->str, NULL, 10);
        freeReplyObject(reply);
        return v;
}

char *sk_test_hget(sk_redis_t *r, const char *key, const char *field)
{
        redisReply *reply = cmd(r, "HGET %s %s", key, field);
        char *s = NULL;

        if (reply->type == REDIS_REPLY_STRING)
                s = strndup(reply->str, reply->len);
        freeReplyObject(reply);
        return s;
}

void sk_test_get_str(const char *key, const char *field, char *out, size_t size)
{
        redisReply *reply = field ? cmd(NULL, "HGET %s %s", key, field) : cmd(NULL, "GET %s", key);

        ck_assert(reply->type != REDIS_REPLY_ERROR);
        snprintf(out, size, "%s", reply->type == REDIS_REPLY_STRING ? reply->str : "(nil)");
        freeReplyObject(reply);
}

long long sk_test_int_cmd(const char *name, const char *key)
{
        redisReply *reply = cmd(NULL, "%s %s", name, key);
        long long v;

        ck_assert_int_eq(reply->type, REDIS_REPLY_INTEGER);
        v = reply->integer;
        freeReplyObject(reply);
        return v;
}

redisReply *sk_test_wait_get(int timeout_s, const char *key)
{
        int64_t deadline = sk_mono_ms() + (int64_t)timeout_s * 1000;
        redisReply *reply;

        for (;;) {
                reply = cmd(NULL, "GET %s", key);
                if (reply->type == REDIS_REPLY_STRING || sk_mono_ms() > deadline)
                        return reply;
                freeReplyObject(reply);
                sk_sleep_ms(100, NULL);
        }
}

long long sk_test_stock(const sk_conf_t *conf, sk_redis_t *r, int64_t vid)
{
        char k[SK_KEY_MAX];

        sk_key_voucher(k, (conf ? conf : &sk_test_fx.conf)->redis_prefix, vid, 0, SK_KEY_STOCK);
        return sk_test_get_i64(r, k);
}

static int hexists(int64_t vid, sk_key_kind_t kind, const char *field)
{
        char k[SK_KEY_MAX];
        redisReply *reply;
        int v;

        sk_test_key(k, vid, kind);
        reply = cmd(NULL, "HEXISTS %s %s", k, field);
        v = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
        return v;
}

int sk_test_has_user(int64_t vid, int64_t uid)
{
        char f[SK_ID_STRLEN];

        sk_id_format(uid, f);
        return hexists(vid, SK_KEY_USERS, f);
}

int sk_test_user_is(int64_t vid, int64_t uid, int64_t trace)
{
        char k[SK_KEY_MAX], f[SK_ID_STRLEN];
        char *v;
        int is;

        sk_test_key(k, vid, SK_KEY_USERS);
        sk_id_format(uid, f);
        v = sk_test_hget(NULL, k, f);
        is = v && strtoll(v, NULL, 10) == trace;
        free(v);
        return is;
}

int sk_test_trace_field(int64_t vid, int64_t trace, char suffix)
{
        char f[48];

        sk_field_trace(f, trace, suffix);
        return hexists(vid, SK_KEY_TRACE, f);
}

int sk_test_fenced(int64_t vid, int64_t trace)
{
        return sk_test_trace_field(vid, trace, 'r');
}

/* The snapshot walk: "key|ttl-flag|hex(DUMP)" per key, no duplicates. */
typedef struct {
        sk_redis_t *r;
        char **items;
        size_t n, cap, total;
} snap_t;

static int snap_key(const char *key, size_t keylen, void *arg)
{
        snap_t *sn = arg;
        char name[SK_KEY_MAX + 64];
        redisReply *d, *t;
        size_t len, o, j;
        char *s;

        snprintf(name, sizeof(name), "%.*s", (int)keylen, key);
        d = cmd(sn->r, "DUMP %s", name);
        t = cmd(sn->r, "PTTL %s", name);
        len = strlen(name) + (d->type == REDIS_REPLY_STRING ? d->len * 2 : 0) + 64;
        s = malloc(len);
        ck_assert(s != NULL);
        o = (size_t)snprintf(s, len, "%s|%lld|", name, t->integer > 0 ? 1LL : t->integer);
        for (j = 0; d->type == REDIS_REPLY_STRING && j < d->len; j++)
                o += (size_t)snprintf(s + o, len - o, "%02x", (unsigned char)d->str[j]);
        for (j = 0; j < sn->n; j++)     /* SCAN may report a key twice */
                if (strcmp(sn->items[j], s) == 0)
                        break;
        if (j < sn->n) {
                free(s);
        } else {
                if (sn->n == sn->cap) {
                        sn->cap = sn->cap ? sn->cap * 2 : 64;
                        sn->items = realloc(sn->items, sn->cap * sizeof(*sn->items));
                        ck_assert(sn->items != NULL);
                }
                sn->items[sn->n++] = s;
                sn->total += strlen(s) + 1;
        }
        freeReplyObject(d);
        freeReplyObject(t);
        return 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

char *sk_test_snapshot(const sk_conf_t *conf, sk_redis_t *r)
{
        snap_t sn = { r, NULL, 0, 0, 1 };
        char match[96], errstr[256];
        char *out;

        /* Voucher keys only: the worker lease keys (<prefix>:worker:*) are renewed by the
         * front itself all the time. */
        snprintf(match, sizeof(match), "%s:{v:*", conf->redis_prefix);
        ck_assert_msg(sk_redis_scan(r, match, 1000, snap_key, &sn, errstr, sizeof(errstr)) == SK_OK,
                      "scan %s: %s", match, errstr);
        if (sn.n)
                qsort(sn.items, sn.n, sizeof(*sn.items), cmp_str);
        out = malloc(sn.total);
        ck_assert(out != NULL);
        out[0] = '\0';
        for (size_t i = 0; i < sn.n; i++) {
                strcat(out, sn.items[i]);
                strcat(out, "\n");
                free(sn.items[i]);
        }
        free(sn.items);
        return out;
}
