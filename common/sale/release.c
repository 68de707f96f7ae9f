/* release.c: the Redis side of a cancelled or closed order (sk/order.h, DESIGN.md 4 and
 * 13): release.lua, which gives the unit back to the voucher's Redis stock at most once
 * per trace (T:x) and lets the user buy again (the home step), and the deletion of the
 * order cache after a pay/cancel/close commit.
 * release.lua runs on the order's bucket j; when the user's home bucket h is another one,
 * the home step (home.lua, sk/home.h) follows on h, after OK and after ALREADY.
 * Also the pending-release check (which ended orders lack T:x), shared by the
 * reconciler's releases and verify.
 * What it does not do: touch the DB (order.c) or retry (the callers do; the script is
 * idempotent). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk/failpoint.h"
#include "sk/home.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/order.h"
#include "sk/scripts.h"

static int reply_flag(const redisReply *el, int *out)
{
        if (el->type != REDIS_REPLY_INTEGER)
                return -1;
        *out = el->integer != 0;
        return 0;
}

sk_err_t sk_release_pending(sk_redis_t *r, const char *k_trace, const int64_t *trace_ids,
                            size_t n, unsigned char *pending, char *errstr, size_t errstr_size)
{
        enum { CHUNK = 200 }; /* fields per HMGET */
        const char *argv[CHUNK + 2];
        size_t argvlen[CHUNK + 2];
        char fields[CHUNK][SK_ID_STRLEN + 2];
        sk_err_t err = SK_OK;
        size_t i, k;

        memset(pending, 0, n);
        argv[0] = "HMGET";
        argvlen[0] = 5;
        argv[1] = k_trace;
        argvlen[1] = strlen(k_trace);
        for (i = 0; i < n; i += CHUNK) {
                size_t m = n - i < CHUNK ? n - i : CHUNK;
                redisReply *reply = NULL;

                for (k = 0; k < m; k++) {
                        size_t len = sk_id_format(trace_ids[i + k], fields[k]);

                        memcpy(fields[k] + len, ":x", 3);
                        argv[k + 2] = fields[k];
                        argvlen[k + 2] = len + 2;
                }
                if ((err = sk_redis_cmd(r, &reply, (int)m + 2, argv, argvlen, errstr,
                                        errstr_size)) != SK_OK)
                        break;
                for (k = 0; reply->type == REDIS_REPLY_ARRAY && k < m && k < reply->elements; k++)
                        pending[i + k] = reply->element[k]->type != REDIS_REPLY_STRING;
                freeReplyObject(reply);
        }
        return err;
}

sk_err_t sk_release_run(sk_redis_t *r, const char *prefix, const sk_order_row_t *order,
                        const char *by, int64_t expire_extra_ms, sk_release_res_t *res,
                        char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char trace_s[SK_ID_STRLEN], user_s[SK_ID_STRLEN] = "", extra_s[24], home_s[8] = "";
        const char *keys[4] = { k_meta, k_stock, k_users, k_trace };
        const char *args[5] = { trace_s, user_s, by, extra_s, home_s };
        redisReply *reply = NULL;
        const int bucket = order ? order->bucket : 0; /* the order's bucket j */
        sk_home_res_t hr;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        if (!r || !prefix || !order || !by || order->voucher_id <= 0 || order->trace_id <= 0 ||
            expire_extra_ms < 0) {
                sk_seterr(errstr, errstr_size, "release: invalid argument");
                return SK_EINVAL;
        }
        sk_key_voucher(k_meta, prefix, order->voucher_id, bucket, SK_KEY_META);
        sk_key_voucher(k_stock, prefix, order->voucher_id, bucket, SK_KEY_STOCK);
        sk_key_voucher(k_users, prefix, order->voucher_id, bucket, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, order->voucher_id, bucket, SK_KEY_TRACE);
        sk_id_format(order->trace_id, trace_s);
        if (order->user_id > 0)
                sk_id_format(order->user_id, user_s);
        snprintf(extra_s, sizeof(extra_s), "%" PRId64, expire_extra_ms);
        /* The user's home bucket (DESIGN.md 4): release.lua reads it from T's entry, but T
         * may be gone from Redis (lost data, a DB-only order); without it the user would
         * be released in j instead of h. */
        if (order->buckets > 0 && order->user_id > 0)
                snprintf(home_s, sizeof(home_s), "%d", sk_home_bucket(order->user_id,
                                                                      order->buckets));
        err = sk_script_eval(r, SK_SCRIPT_RELEASE, 4, keys, home_s[0] ? 5 : 4, args, &reply,
                             errstr, errstr_size);
        if (err != SK_OK)
                return err;
        err = SK_EREDIS;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            reply->element[3]->type != REDIS_REPLY_INTEGER ||
            reply->element[3]->integer < 0 || reply->element[3]->integer >= SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "release.lua: unexpected reply");
        } else if (strcmp(reply->element[0]->str, "OK") == 0) {
                if (reply_flag(reply->element[1], &res->restored) == 0 &&
                    reply_flag(reply->element[2], &res->released) == 0)
                        err = SK_OK;
                else
                        sk_seterr(errstr, errstr_size, "release.lua: malformed OK reply");
        } else if (strcmp(reply->element[0]->str, "ALREADY") == 0) {
                res->already = 1;
                if (reply_flag(reply->element[2], &res->released) == 0)
                        err = SK_OK;
                else
                        sk_seterr(errstr, errstr_size, "release.lua: malformed ALREADY reply");
        } else {
                sk_seterr(errstr, errstr_size, "release.lua: unexpected status %s",
                          reply->element[0]->str);
        }
        if (err == SK_OK)
                res->home = (int)reply->element[3]->integer;
        freeReplyObject(reply);
        if (err != SK_OK || res->home == bucket)
                return err;
        /* DESIGN.md 4: the home step on h != j, after OK and after ALREADY. Failpoint
         * release.before_home (exit; error = the step fails as if Redis had): T:x
         * written in j, users[U] in h not released yet. */
        if (SK_FAILPOINT("release.before_home")) {
                sk_seterr(errstr, errstr_size, "failpoint release.before_home");
                return SK_EAGAIN;
        }
        if (order->user_id <= 0) {
                sk_seterr(errstr, errstr_size, "release: the home step needs the user id");
                return SK_EINVAL;
        }
        err = sk_home_step(r, prefix, order->voucher_id, res->home, order->trace_id,
                           order->user_id, bucket, 0, SK_REASON_NONE, expire_extra_ms, &hr,
                           errstr, errstr_size);
        if (err == SK_OK) {
                res->home_done = 1;
                res->released = hr.released;
        }
        return err;
}

sk_err_t sk_order_cache_del(sk_redis_t *r, const char *prefix, int64_t order_id,
                            char *errstr, size_t errstr_size)
{
        char key[SK_KEY_MAX];
        const char *argv[2] = { "DEL", key };
        redisReply *reply = NULL;
        sk_err_t err;

        sk_key_order(key, prefix, order_id);
        err = sk_redis_cmd(r, &reply, 2, argv, NULL, errstr, errstr_size);
        if (reply)
                freeReplyObject(reply);
        return err;
}
