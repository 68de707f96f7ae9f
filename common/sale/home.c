/* home.c: the home step and the settle of a probing purchase (sk/home.h, DESIGN.md 4):
 * home.lua and settle.lua on the user's home bucket. What it does not do: decide when
 * (the callers: the front's probing and rollback worker, rollback and release callers of
 * the consumer, closer and reconciler) or retry (the callers do; both are idempotent). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk/home.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/scripts.h"

static int reply_flag(const redisReply *el, int *out)
{
        if (el->type != REDIS_REPLY_INTEGER)
                return -1;
        *out = el->integer != 0;
        return 0;
}

/* home.lua's reply {"OK", fenced, released, repointed} into *@p res; frees @p reply.
 * @returns SK_OK, or SK_EREDIS on any other shape. */
static sk_err_t home_reply(redisReply *reply, sk_home_res_t *res, char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_EREDIS;

        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            strcmp(reply->element[0]->str, "OK") != 0 ||
            reply_flag(reply->element[1], &res->fenced) ||
            reply_flag(reply->element[2], &res->released) ||
            reply_flag(reply->element[3], &res->repointed))
                sk_seterr(errstr, errstr_size, "home.lua: unexpected reply");
        else
                err = SK_OK;
        freeReplyObject(reply);
        return err;
}

sk_err_t sk_home_step(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                      int64_t trace_id, int64_t user_id, int trace_bucket,
                      int64_t repoint_trace_id, sk_reason_t reason, int64_t expire_extra_ms,
                      sk_home_res_t *res, char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char trace_s[SK_ID_STRLEN], user_s[SK_ID_STRLEN], repoint_s[SK_ID_STRLEN] = "";
        char bucket_s[16] = "", extra_s[24];
        const char *keys[3] = { k_meta, k_users, k_trace };
        const char *args[6] = { trace_s, user_s, bucket_s, repoint_s, sk_reason_str(reason),
                                extra_s };
        redisReply *reply = NULL;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        if (!r || !prefix || voucher_id <= 0 || home < 0 || home >= SK_BUCKETS_MAX ||
            trace_id <= 0 || user_id <= 0 || trace_bucket >= SK_BUCKETS_MAX ||
            expire_extra_ms < 0) {
                sk_seterr(errstr, errstr_size, "home step: invalid argument");
                return SK_EINVAL;
        }
        sk_key_voucher(k_meta, prefix, voucher_id, home, SK_KEY_META);
        sk_key_voucher(k_users, prefix, voucher_id, home, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, voucher_id, home, SK_KEY_TRACE);
        sk_id_format(trace_id, trace_s);
        sk_id_format(user_id, user_s);
        if (repoint_trace_id > 0)
                sk_id_format(repoint_trace_id, repoint_s);
        else if (repoint_trace_id < 0)
                snprintf(repoint_s, sizeof(repoint_s), "0"); /* keep users[U] */
        if (trace_bucket >= 0)
                snprintf(bucket_s, sizeof(bucket_s), "%d", trace_bucket);
        snprintf(extra_s, sizeof(extra_s), "%" PRId64, expire_extra_ms);
        if ((err = sk_script_eval(r, SK_SCRIPT_HOME, 3, keys, 6, args, &reply, errstr,
                                  errstr_size)) != SK_OK)
                return err;
        return home_reply(reply, res, errstr, errstr_size);
}

int64_t sk_giveup_fence_px_ms(int64_t deadline_ms)
{
        return deadline_ms > SK_GIVEUP_FENCE_MIN_MS ? deadline_ms : SK_GIVEUP_FENCE_MIN_MS;
}

sk_err_t sk_home_give_up(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                         int64_t trace_id, int64_t user_id, int64_t deadline_ms,
                         sk_home_res_t *res, char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX], k_fence[SK_KEY_MAX];
        char trace_s[SK_ID_STRLEN], user_s[SK_ID_STRLEN], px_s[24];
        const char *keys[4] = { k_meta, k_users, k_trace, k_fence };
        const char *args[7] = { trace_s, user_s, "", "", sk_reason_str(SK_REASON_SOLD_OUT), "0",
                                px_s };
        redisReply *reply = NULL;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        if (!r || !prefix || voucher_id <= 0 || home < 0 || home >= SK_BUCKETS_MAX ||
            trace_id <= 0 || user_id <= 0 || deadline_ms <= 0 || deadline_ms > 999999999) {
                sk_seterr(errstr, errstr_size, "give-up: invalid argument");
                return SK_EINVAL;
        }
        sk_key_voucher(k_meta, prefix, voucher_id, home, SK_KEY_META);
        sk_key_voucher(k_users, prefix, voucher_id, home, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, voucher_id, home, SK_KEY_TRACE);
        sk_key_fence(k_fence, prefix, voucher_id, home, trace_id);
        sk_id_format(trace_id, trace_s);
        sk_id_format(user_id, user_s);
        snprintf(px_s, sizeof(px_s), "%" PRId64, sk_giveup_fence_px_ms(deadline_ms));
        if ((err = sk_script_eval(r, SK_SCRIPT_HOME, 4, keys, 7, args, &reply, errstr,
                                  errstr_size)) != SK_OK)
                return err;
        return home_reply(reply, res, errstr, errstr_size);
}

sk_err_t sk_home_settle(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                        int64_t trace_id, int bucket, int *state, char *errstr,
                        size_t errstr_size)
{
        char k_trace[SK_KEY_MAX], trace_s[SK_ID_STRLEN], bucket_s[16];
        const char *keys[1] = { k_trace };
        const char *args[2] = { trace_s, bucket_s };
        redisReply *reply = NULL;
        sk_err_t err;

        *state = -1;
        if (!r || !prefix || voucher_id <= 0 || home < 0 || home >= SK_BUCKETS_MAX ||
            trace_id <= 0 || bucket < 0 || bucket >= SK_BUCKETS_MAX || bucket == home) {
                sk_seterr(errstr, errstr_size, "settle: invalid argument");
                return SK_EINVAL;
        }
        sk_key_voucher(k_trace, prefix, voucher_id, home, SK_KEY_TRACE);
        sk_id_format(trace_id, trace_s);
        snprintf(bucket_s, sizeof(bucket_s), "%d", bucket);
        if ((err = sk_script_eval(r, SK_SCRIPT_SETTLE, 1, keys, 2, args, &reply, errstr,
                                  errstr_size)) != SK_OK)
                return err;
        err = SK_OK;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
            reply->element[0]->type != REDIS_REPLY_STRING) {
                sk_seterr(errstr, errstr_size, "settle.lua: unexpected reply");
                err = SK_EREDIS;
        } else if (strcmp(reply->element[0]->str, "OK") == 0) {
                *state = 1;
        } else if (strcmp(reply->element[0]->str, "ALREADY") == 0) {
                *state = 0;
        }
        freeReplyObject(reply);
        return err;
}
