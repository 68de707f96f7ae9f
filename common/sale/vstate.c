/* vstate.c: the Redis writes of a voucher's admission state (sk/vstate.h; DESIGN.md 4,
 * 8). One inline script (VSTATE_LUA) with one operation per call; every write is
 * followed by PEXPIREAT E NX then PEXPIREAT E GT. Big users hashes go in chunks of
 * SK_VSTATE_CHUNK fields, one script call each, so Redis never runs one long command.
 *
 * What it does not do: read the database, decide anything, or retry. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/failpoint.h"
#include "sk/ids.h"
#include "sk/outcome.h"
#include "sk/vstate.h"

/* ARGV[1] = op, ARGV[2] = E (absolute expiry, ms). Ids are strings (no tonumber).
 *  status   KEYS meta                ARGV status       -> previous status or nil
 *  unstatus KEYS meta                ARGV prev|""      -> "OK" ("" removes the field)
 *  meta     KEYS meta                ARGV begin end st n -> 1 written | 0 meta missing
 *  hset     KEYS hash                ARGV f1 v1 ...    -> "OK"
 *  drop     KEYS hash                                  -> "OK" (UNLINK)
 *  rebuild  KEYS meta stock users tmp trace  ARGV stock begin end st n -> {"OK","SET"}
 *  preheat  KEYS meta stock users tmp trace  ARGV stock begin end st n (tmp unused)
 *           (n: the voucher's bucket count N, meta field `buckets`, DESIGN.md 4)
 *           both give users and trace the placeholder field `_` (DESIGN.md 4: every key of
 *           the bucket exists, so deduct.lua and take.lua never meet one missing)
 *           -> {"SOLD_DOWN", current} (nothing written) | {"OK", "SET"|"KEPT"} */
static const char VSTATE_LUA[] =
        "local op, e = ARGV[1], ARGV[2]\n"
        "local function expire(k)\n"
        "  redis.call('PEXPIREAT', k, e, 'NX')\n"
        "  redis.call('PEXPIREAT', k, e, 'GT')\n"
        "end\n"
        "local function placeholders()\n"
        "  redis.call('HSET', KEYS[3], '_', '_')\n"
        "  expire(KEYS[3])\n"
        "  redis.call('HSET', KEYS[5], '_', '_')\n"
        "  expire(KEYS[5])\n"
        "end\n"
        "local function meta(b, en, st, n)\n"
        "  redis.call('HSET', KEYS[1], 'begin_ms', b, 'end_ms', en, 'status', st, 'buckets', n)\n"
        "  expire(KEYS[1])\n"
        "end\n"
        "if op == 'status' then\n"
        "  local prev = redis.call('HGET', KEYS[1], 'status')\n"
        "  redis.call('HSET', KEYS[1], 'status', ARGV[3])\n"
        "  expire(KEYS[1])\n"
        "  return prev\n"
        "elseif op == 'unstatus' then\n"
        "  if ARGV[3] == '' then redis.call('HDEL', KEYS[1], 'status')\n"
        "  else redis.call('HSET', KEYS[1], 'status', ARGV[3]) end\n"
        "  if redis.call('EXISTS', KEYS[1]) == 1 then expire(KEYS[1]) end\n"
        "  return 'OK'\n"
        "elseif op == 'meta' then\n"
        "  if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
        "  meta(ARGV[3], ARGV[4], ARGV[5], ARGV[6])\n"
        "  return 1\n"
        "elseif op == 'hset' then\n"
        "  redis.call('HSET', KEYS[1], unpack(ARGV, 3))\n"
        "  expire(KEYS[1])\n"
        "  return 'OK'\n"
        "elseif op == 'drop' then\n"
        "  redis.call('UNLINK', KEYS[1])\n"
        "  return 'OK'\n"
        "elseif op == 'rebuild' then\n"
        "  redis.call('UNLINK', KEYS[3])\n"
        "  if redis.call('EXISTS', KEYS[4]) == 1 then\n"
        "    redis.call('RENAME', KEYS[4], KEYS[3])\n"
        "    expire(KEYS[3])\n"
        "  end\n"
        "  redis.call('SET', KEYS[2], ARGV[3])\n"
        "  expire(KEYS[2])\n"
        "  placeholders()\n"
        "  meta(ARGV[4], ARGV[5], ARGV[6], ARGV[7])\n"
        "  return {'OK', 'SET'}\n"
        "elseif op == 'preheat' then\n"
        "  local how = 'SET'\n"
        "  local cur = redis.call('GET', KEYS[2])\n"
        "  if cur then\n"
        "    if cur ~= ARGV[3] then return {'SOLD_DOWN', cur} end\n"
        "    how = 'KEPT'\n"
        "  else\n"
        "    redis.call('SET', KEYS[2], ARGV[3])\n"
        "  end\n"
        "  expire(KEYS[2])\n"
        "  placeholders()\n"
        "  meta(ARGV[4], ARGV[5], ARGV[6], ARGV[7])\n"
        "  return {'OK', how}\n"
        "end\n"
        "return redis.error_reply('ERR SKARG unknown op')\n";

void sk_vstate_keys(sk_vstate_keys_t *k, const char *prefix, int64_t voucher_id, int bucket)
{
        sk_key_voucher(k->meta, prefix, voucher_id, bucket, SK_KEY_META);
        sk_key_voucher(k->stock, prefix, voucher_id, bucket, SK_KEY_STOCK);
        sk_key_voucher(k->users, prefix, voucher_id, bucket, SK_KEY_USERS);
        sk_key_voucher(k->trace, prefix, voucher_id, bucket, SK_KEY_TRACE);
        snprintf(k->users_tmp, sizeof(k->users_tmp), "%s:rebuild", k->users);
}

int64_t sk_vstate_expiry(const sk_conf_t *conf, const sk_voucher_row_t *row)
{
        return row->end_ms + sk_expire_extra_ms(conf->reconcile_window_hours);
}

/* EVAL VSTATE_LUA @p op with @p nkeys keys and @p nargs further args (after op and E). */
static sk_err_t eval_op(sk_redis_t *r, const char *op, int64_t expiry_ms, int nkeys,
                        const char *const *keys, size_t nargs, const char *const *args,
                        redisReply **reply, char *errstr, size_t errstr_size)
{
        size_t argc = 3 + (size_t)nkeys + 2 + nargs, i = 0;
        const char **argv = malloc(argc * sizeof(*argv));
        char nk[16], e[32];
        sk_err_t err;

        if (!argv) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        snprintf(nk, sizeof(nk), "%d", nkeys);
        snprintf(e, sizeof(e), "%" PRId64, expiry_ms);
        argv[i++] = "EVAL";
        argv[i++] = VSTATE_LUA;
        argv[i++] = nk;
        for (int n = 0; n < nkeys; n++)
                argv[i++] = keys[n];
        argv[i++] = op;
        argv[i++] = e;
        for (size_t a = 0; a < nargs; a++)
                argv[i++] = args[a];
        err = sk_redis_cmd(r, reply, (int)argc, argv, NULL, errstr, errstr_size);
        free(argv);
        return err;
}

/* eval_op whose reply is not needed. */
static sk_err_t eval_void(sk_redis_t *r, const char *op, int64_t expiry_ms, int nkeys,
                          const char *const *keys, size_t nargs, const char *const *args,
                          char *errstr, size_t errstr_size)
{
        redisReply *reply = NULL;
        sk_err_t err = eval_op(r, op, expiry_ms, nkeys, keys, nargs, args, &reply, errstr,
                               errstr_size);
        if (reply)
                freeReplyObject(reply);
        return err;
}

sk_err_t sk_vstate_exists(sk_redis_t *r, const char *key, int *exists, char *errstr,
                          size_t errstr_size)
{
        const char *argv[2] = { "EXISTS", key };
        redisReply *reply = NULL;
        sk_err_t err;

        if ((err = sk_redis_cmd(r, &reply, 2, argv, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        *exists = reply->type == REDIS_REPLY_INTEGER && reply->integer > 0;
        freeReplyObject(reply);
        return SK_OK;
}

sk_err_t sk_vstate_pause(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                         int *prev, char *errstr, size_t errstr_size)
{
        const char *keys[1] = { k->meta }, *args[1] = { "4" };
        redisReply *reply = NULL;
        sk_err_t err;
        long v;

        *prev = -1;
        if ((err = eval_op(r, "status", expiry_ms, 1, keys, 1, args, &reply, errstr,
                           errstr_size)) != SK_OK)
                return err;
        if (reply->type == REDIS_REPLY_STRING && sk_parse_long(reply->str, 0, 1000, &v) == 0)
                *prev = (int)v;
        freeReplyObject(reply);
        return SK_OK;
}

sk_err_t sk_vstate_unpause(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                           int prev, char *errstr, size_t errstr_size)
{
        const char *keys[1] = { k->meta };
        char st[16] = "";
        const char *args[1] = { st };

        if (prev >= 0)
                snprintf(st, sizeof(st), "%d", prev);
        return eval_void(r, "unstatus", expiry_ms, 1, keys, 1, args, errstr, errstr_size);
}

/* begin_ms, end_ms, status, buckets of @p row as strings into @p num. */
static void meta_args(const sk_voucher_row_t *row, char num[4][24])
{
        snprintf(num[3], sizeof(num[3]), "%d", row->buckets > 0 ? row->buckets : 1);
        snprintf(num[0], sizeof(num[0]), "%" PRId64, row->begin_ms);
        snprintf(num[1], sizeof(num[1]), "%" PRId64, row->end_ms);
        snprintf(num[2], sizeof(num[2]), "%d", row->status);
}

sk_err_t sk_vstate_meta(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                        const sk_voucher_row_t *row, int *written, char *errstr,
                        size_t errstr_size)
{
        const char *keys[1] = { k->meta };
        char num[4][24];
        const char *args[4] = { num[0], num[1], num[2], num[3] };
        redisReply *reply = NULL;
        sk_err_t err;

        meta_args(row, num);
        if ((err = eval_op(r, "meta", expiry_ms, 1, keys, 4, args, &reply, errstr,
                           errstr_size)) != SK_OK)
                return err;
        *written = reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
        freeReplyObject(reply);
        return SK_OK;
}

sk_err_t sk_vstate_sold_down(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t stock,
                             int *sold_down, char *cur, size_t cur_size, char *errstr,
                             size_t errstr_size)
{
        const char *argv[2] = { "GET", k->stock };
        redisReply *reply = NULL;
        char want[24];
        sk_err_t err;

        *sold_down = 0;
        if ((err = sk_redis_cmd(r, &reply, 2, argv, NULL, errstr, errstr_size)) != SK_OK)
                return err;
        snprintf(want, sizeof(want), "%" PRId64, stock);
        if (reply->type == REDIS_REPLY_STRING && strcmp(reply->str, want) != 0) {
                *sold_down = 1;
                if (cur && cur_size)
                        snprintf(cur, cur_size, "%s", reply->str);
        }
        freeReplyObject(reply);
        return SK_OK;
}

/* The holder's re-check before a Redis write chunk (DESIGN.md 16): SK_EAGAIN when the
 * lock is lost or unconfirmed. NULL: no lock to check. */
static sk_err_t guard(sk_dblock_t *lk, char *errstr, size_t errstr_size)
{
        char why[256];

        if (!lk || sk_dblock_check(lk, why, sizeof(why)) == SK_OK)
                return SK_OK;
        sk_seterr(errstr, errstr_size, "voucher lock not confirmed before a Redis write: %s", why);
        return SK_EAGAIN;
}

sk_err_t sk_vstate_write_users(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                               const sk_i64vec_t *buyers, int replace, sk_dblock_t *lk,
                               char *errstr, size_t errstr_size)
{
        const char *key = replace ? k->users_tmp : k->users;
        const char *keys[1] = { key };
        const char *args[2 * SK_VSTATE_CHUNK];
        char (*num)[SK_ID_STRLEN + 1] = NULL;
        size_t pairs = buyers->n / 2;
        sk_err_t err = SK_OK;

        /* A scratch hash left by a rebuild that died is emptied first. */
        if (replace && (err = guard(lk, errstr, errstr_size)) != SK_OK)
                return err;
        if (replace && (err = eval_void(r, "drop", expiry_ms, 1, keys, 0, NULL, errstr,
                                        errstr_size)) != SK_OK)
                return err;
        if (pairs == 0)
                return SK_OK;
        if (!(num = malloc(2 * SK_VSTATE_CHUNK * sizeof(*num)))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return SK_ENOMEM;
        }
        for (size_t off = 0; off < pairs && err == SK_OK; off += SK_VSTATE_CHUNK) {
                size_t m = pairs - off < SK_VSTATE_CHUNK ? pairs - off : SK_VSTATE_CHUNK;

                if (off > 0 && SK_FAILPOINT("rebuild.between_chunks")) {
                        sk_seterr(errstr, errstr_size, "failpoint rebuild.between_chunks");
                        err = SK_EAGAIN;
                        break;
                }
                if ((err = guard(lk, errstr, errstr_size)) != SK_OK)
                        break;
                for (size_t i = 0; i < 2 * m; i++) {
                        sk_id_format(buyers->v[2 * off + i], num[i]);
                        args[i] = num[i];
                }
                err = eval_void(r, "hset", expiry_ms, 1, keys, 2 * m, args, errstr, errstr_size);
        }
        free(num);
        return err;
}

sk_err_t sk_vstate_commit(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t expiry_ms,
                          const sk_voucher_row_t *row, int64_t stock, int replace,
                          int *sold_down, char *cur, size_t cur_size, char *errstr,
                          size_t errstr_size)
{
        const char *keys[5] = { k->meta, k->stock, k->users, k->users_tmp, k->trace };
        char stock_s[24], num[4][24];
        const char *args[5] = { stock_s, num[0], num[1], num[2], num[3] };
        const char *op = replace ? "rebuild" : "preheat";
        redisReply *reply = NULL;
        sk_err_t err;

        *sold_down = 0;
        snprintf(stock_s, sizeof(stock_s), "%" PRId64, stock);
        meta_args(row, num);
        if ((err = eval_op(r, op, expiry_ms, 5, keys, 5, args, &reply, errstr,
                           errstr_size)) != SK_OK)
                return err;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING) {
                sk_seterr(errstr, errstr_size, "%s script: unexpected reply", op);
                freeReplyObject(reply);
                return SK_EREDIS;
        }
        if (strcmp(reply->element[0]->str, "SOLD_DOWN") == 0) {
                *sold_down = 1;
                if (cur && cur_size)
                        snprintf(cur, cur_size, "%s",
                                 reply->element[1]->type == REDIS_REPLY_STRING
                                 ? reply->element[1]->str : "?");
        }
        freeReplyObject(reply);
        return SK_OK;
}
