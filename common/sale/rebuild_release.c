/* rebuild_release.c: the order lifecycle's part of a rebuild (DESIGN.md 8 "rebuild", 13).
 * A rebuild sets Redis stock from the DB stock, which already counts the units of every
 * CANCELLED/CLOSED order; a release.lua still pending for one of them would give its unit
 * back a second time. So, in the rebuild's snapshot (the voucher row locked, before the
 * stock is written), every ended order whose trace lacks `T:x` gets one
 * ({"by":"rebuild","restored":0}): a later release.lua answers ALREADY and restores
 * nothing. A release landing between the snapshot and the SET is overwritten by the SET
 * (undersell the next drift pass repairs, never a double restore).
 * Every active order whose `T` is missing (a DB-only order of DESIGN.md 12, or a `T`
 * Redis lost) gets a stub `T` ("rebuilt":1, one unit, home = the buyer's home bucket) in its bucket's
 * trace hash, so its later release restores the unit the rebuilt stock counts as sold.
 * What it does not do: touch the DB or the stock. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/order.h"
#include "sk/traceset.h"

#define MARK_CHUNK 200

/* KEYS trace; ARGV E ts T1 T2 ...: HSETNX Ti:x, then the expiry rule of DESIGN.md 4. */
static const char MARK_LUA[] =
        "local e = ARGV[1]\n"
        "local rec = '{\"by\":\"rebuild\",\"restored\":0,\"ts\":' .. ARGV[2] .. '}'\n"
        "local n = 0\n"
        "for i = 3, #ARGV do\n"
        "  n = n + redis.call('HSETNX', KEYS[1], ARGV[i] .. ':x', rec)\n"
        "end\n"
        "redis.call('PEXPIREAT', KEYS[1], e, 'NX')\n"
        "redis.call('PEXPIREAT', KEYS[1], e, 'GT')\n"
        "return n\n";

/* KEYS trace; ARGV E T1 V1 T2 V2 ...: HSETNX Ti Vi, then the expiry rule. */
static const char STUB_LUA[] =
        "local e = ARGV[1]\n"
        "local n = 0\n"
        "for i = 2, #ARGV - 1, 2 do\n"
        "  n = n + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])\n"
        "end\n"
        "redis.call('PEXPIREAT', KEYS[1], e, 'NX')\n"
        "redis.call('PEXPIREAT', KEYS[1], e, 'GT')\n"
        "return n\n";

/* One EVAL of STUB_LUA for @p m rows of bucket @p b. */
static sk_err_t stub_chunk(sk_redis_t *r, const char *prefix, int b, int nb, const char *e_s,
                           const sk_order_row_t *const *rows, size_t m, int64_t *marked, char *errstr,
                           size_t errstr_size)
{
        static char ids[MARK_CHUNK][SK_ID_STRLEN], vals[MARK_CHUNK][320];
        const char *argv[2 * MARK_CHUNK + 5];
        char k_trace[SK_KEY_MAX], ts_s[24];
        redisReply *reply = NULL;
        sk_err_t err;
        size_t j;

        sk_key_voucher(k_trace, prefix, rows[0]->voucher_id, b, SK_KEY_TRACE);
        snprintf(ts_s, sizeof(ts_s), "%" PRId64, sk_now_ms());
        argv[0] = "EVAL";
        argv[1] = STUB_LUA;
        argv[2] = "1";
        argv[3] = k_trace;
        argv[4] = e_s;
        for (j = 0; j < m; j++) {
                const sk_order_row_t *o = rows[j];

                sk_id_format(o->trace_id, ids[j]);
                snprintf(vals[j], sizeof(vals[j]),
                         "{\"traceId\":\"%" PRId64 "\",\"orderId\":\"%" PRId64 "\",\"userId\":\"%" PRId64
                         "\",\"voucherId\":\"%" PRId64 "\",\"bucket\":%d,\"home\":%d,\"beforeQty\":1,"
                         "\"deductQty\":1,\"afterQty\":0,\"ts\":%s,\"rebuilt\":1}",
                         o->trace_id, o->order_id, o->user_id, o->voucher_id, b,
                         sk_home_bucket(o->user_id, nb), ts_s);
                argv[5 + 2 * j] = ids[j];
                argv[6 + 2 * j] = vals[j];
        }
        err = sk_redis_cmd(r, &reply, (int)(5 + 2 * m), argv, NULL, errstr, errstr_size);
        if (err == SK_OK && reply->type == REDIS_REPLY_INTEGER)
                *marked += reply->integer;
        if (reply)
                freeReplyObject(reply);
        return err;
}

/* The stub `T` of every active order of bucket @p b lacking one, in chunks; its `home`
 * is the buyer's home bucket (DESIGN.md 4), so a later release clears the right users. */
static sk_err_t stub_active(sk_db_t *db, sk_redis_t *r, const char *prefix, int64_t voucher_id, int b,
                            const char *e_s, int64_t *marked, char *errstr, size_t errstr_size)
{
        const sk_order_row_t *chunk[MARK_CHUNK];
        sk_order_row_t *rows = NULL;
        size_t n = 0, i, m = 0;
        int64_t v = 1;
        int is_null = 0, nb = 1;
        sk_err_t err;

        /* the voucher's bucket count (1 when there is no row or a bad one) */
        err = sk_db_i64(db, "SELECT buckets FROM tb_seckill_voucher WHERE voucher_id = ?",
                        SK_ARGS(SK_I64(voucher_id)), &v, &is_null, errstr, errstr_size);
        if (err != SK_OK && err != SK_ENOTFOUND)
                return err;
        if (err == SK_OK && !is_null && v >= 1 && v <= SK_BUCKETS_MAX)
                nb = (int)v;
        if ((err = sk_order_list_active(db, voucher_id, &rows, &n, errstr, errstr_size)) != SK_OK)
                return err;
        for (i = 0; i < n && err == SK_OK; i++) {
                if (rows[i].bucket != b)
                        continue;
                chunk[m++] = &rows[i];
                if (m == MARK_CHUNK) {
                        err = stub_chunk(r, prefix, b, nb, e_s, chunk, m, marked, errstr, errstr_size);
                        m = 0;
                }
        }
        if (m > 0 && err == SK_OK)
                err = stub_chunk(r, prefix, b, nb, e_s, chunk, m, marked, errstr, errstr_size);
        free(rows);
        return err;
}

sk_err_t sk_rebuild_mark_released(sk_db_t *db, sk_redis_t *r, const char *prefix,
                                  int64_t voucher_id, int bucket, int64_t expire_at_ms,
                                  int64_t *marked, char *errstr, size_t errstr_size)
{
        sk_order_row_t *rows = NULL;
        size_t n = 0, i, j, keep = 0;
        char k_trace[SK_KEY_MAX], e_s[24], ts_s[24];
        const char *argv[MARK_CHUNK + 6];
        char ids[MARK_CHUNK][SK_ID_STRLEN];
        sk_err_t err;

        *marked = 0;
        if ((err = sk_order_list_ended(db, voucher_id, &rows, &n, errstr, errstr_size)) != SK_OK)
                return err;
        /* Only the orders whose unit came from @p bucket: their trace lives there. */
        for (i = 0; i < n; i++)
                if (rows[i].bucket == bucket)
                        rows[keep++] = rows[i];
        n = keep;
        sk_key_voucher(k_trace, prefix, voucher_id, bucket, SK_KEY_TRACE);
        snprintf(e_s, sizeof(e_s), "%" PRId64, expire_at_ms);
        snprintf(ts_s, sizeof(ts_s), "%" PRId64, sk_now_ms());
        for (i = 0; i < n && err == SK_OK; i += MARK_CHUNK) {
                size_t m = n - i < MARK_CHUNK ? n - i : MARK_CHUNK;
                redisReply *reply = NULL;

                argv[0] = "EVAL";
                argv[1] = MARK_LUA;
                argv[2] = "1";
                argv[3] = k_trace;
                argv[4] = e_s;
                argv[5] = ts_s;
                for (j = 0; j < m; j++) {
                        sk_id_format(rows[i + j].trace_id, ids[j]);
                        argv[6 + j] = ids[j];
                }
                err = sk_redis_cmd(r, &reply, (int)(6 + m), argv, NULL, errstr, errstr_size);
                if (err == SK_OK && reply->type == REDIS_REPLY_INTEGER)
                        *marked += reply->integer;
                if (reply)
                        freeReplyObject(reply);
        }
        free(rows);
        if (err == SK_OK)
                err = stub_active(db, r, prefix, voucher_id, bucket, e_s, marked, errstr, errstr_size);
        return err;
}
