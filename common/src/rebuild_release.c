/* rebuild_release.c: the order lifecycle's part of a rebuild (DESIGN.md 8 "rebuild", 13).
 * A rebuild sets Redis stock from the DB stock, which already counts the units of every
 * CANCELLED/CLOSED order; a release.lua still pending for one of them would give its unit
 * back a second time. So, in the rebuild's snapshot (the voucher row locked, before the
 * stock is written), every ended order whose trace lacks `T:x` gets one
 * ({"by":"rebuild","restored":0}): a later release.lua answers ALREADY and restores
 * nothing. A release landing between the snapshot and the SET is overwritten by the SET
 * (undersell the next drift pass repairs, never a double restore).
 * What it does not do: touch the DB or the stock. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/order.h"

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
        return err;
}
