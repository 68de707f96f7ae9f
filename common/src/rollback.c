/* rollback.c: the failure reasons of DESIGN.md 7-8, the rollback.lua flags each one
 * implies, and the call of rollback.lua itself (sk/outcome.h). The database side of an
 * outcome (sk_outcome_*) lives in outcome.c; this file never touches the database and
 * never decides anything: it runs the script with the flags the reason implies and
 * reports what the script did. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk/outcome.h"
#include "sk/ids.h"
#include "sk/keys.h"

static const struct {
        sk_reason_t reason;
        const char *name;
        int restore, release, clamp;   /* DESIGN.md 4, "Flags by reason" */
} reasons[] = {
        { SK_REASON_NONE,           "none",           0, 0, 0 },
        { SK_REASON_SOLD_OUT,       "sold_out",       0, 1, 1 },
        { SK_REASON_HAS_ORDER,      "has_order",      1, 0, 0 },
        { SK_REASON_LOST,           "lost",           1, 1, 0 },
        { SK_REASON_FRONT_ROLLBACK, "front_rollback", 1, 1, 0 },
};
#define NREASONS (sizeof(reasons) / sizeof(reasons[0]))

const char *sk_reason_str(sk_reason_t r)
{
        for (size_t i = 0; i < NREASONS; i++)
                if (reasons[i].reason == r)
                        return reasons[i].name;
        return "unknown";
}

int sk_reason_parse(const char *s, sk_reason_t *out)
{
        if (!s)
                return -1;
        for (size_t i = 0; i < NREASONS; i++)
                if (strcmp(reasons[i].name, s) == 0) {
                        *out = reasons[i].reason;
                        return 0;
                }
        return -1;
}

void sk_reason_flags(sk_reason_t r, int *restore, int *release, int *clamp)
{
        *restore = *release = *clamp = 0;
        for (size_t i = 0; i < NREASONS; i++)
                if (reasons[i].reason == r) {
                        *restore = reasons[i].restore;
                        *release = reasons[i].release;
                        *clamp = reasons[i].clamp;
                        return;
                }
}

int64_t sk_expire_extra_ms(int reconcile_window_hours)
{
        return (int64_t)reconcile_window_hours * 3600 * 1000 + INT64_C(86400000);
}

static int reply_int(const redisReply *el, int *out)
{
        if (el->type == REDIS_REPLY_INTEGER) {
                *out = el->integer != 0;
                return 0;
        }
        return -1;
}

sk_err_t sk_rollback_run(sk_redis_t *r, const char *prefix, int64_t voucher_id,
                         int64_t trace_id, int64_t user_id, const char *mode,
                         sk_reason_t reason, int64_t clamp_to, int64_t expire_extra_ms,
                         sk_rollback_res_t *res, char *errstr, size_t errstr_size)
{
        sk_rollback_at_t at = { 0, -1, 0, 0 };

        return sk_rollback_run_at(r, prefix, voucher_id, &at, trace_id, user_id, mode, reason,
                                  clamp_to, expire_extra_ms, res, errstr, errstr_size);
}

/* The h element of a reply (an integer 0..15), else -1. */
static int reply_bucket(const redisReply *el)
{
        return el->type == REDIS_REPLY_INTEGER && el->integer >= 0 && el->integer < 16 ?
               (int)el->integer : -1;
}

static sk_err_t parse_rollback(const redisReply *reply, sk_rollback_res_t *res, char *errstr,
                               size_t errstr_size)
{
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
            reply->element[0]->type != REDIS_REPLY_STRING) {
                sk_seterr(errstr, errstr_size, "rollback.lua: unexpected reply");
                return SK_EREDIS;
        }
        if (strcmp(reply->element[0]->str, "OK") == 0) {
                if (reply->elements != 6 || reply_int(reply->element[1], &res->restored) ||
                    reply_int(reply->element[2], &res->released) ||
                    reply_int(reply->element[3], &res->clamped)) {
                        sk_seterr(errstr, errstr_size, "rollback.lua: malformed OK reply");
                        return SK_EREDIS;
                }
                res->home = reply_bucket(reply->element[4]);
        } else if (strcmp(reply->element[0]->str, "ALREADY") == 0) {
                res->already = 1;
                if (reply->elements >= 3)
                        res->home = reply_bucket(reply->element[2]);
        } else if (strcmp(reply->element[0]->str, "CLAIMED") == 0) {
                res->claimed = 1;
        } else {
                sk_seterr(errstr, errstr_size, "rollback.lua: unexpected status %s",
                          reply->element[0]->str);
                return SK_EREDIS;
        }
        return SK_OK;
}

sk_err_t sk_rollback_run_at(sk_redis_t *r, const char *prefix, int64_t voucher_id,
                            const sk_rollback_at_t *at, int64_t trace_id, int64_t user_id,
                            const char *mode, sk_reason_t reason, int64_t clamp_to,
                            int64_t expire_extra_ms, sk_rollback_res_t *res, char *errstr,
                            size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char trace_s[SK_ID_STRLEN], user_s[SK_ID_STRLEN] = "", clamp_s[32] = "", extra_s[32];
        char home_s[16] = "", repoint_s[SK_ID_STRLEN] = "";
        const char *keys[4] = { k_meta, k_stock, k_users, k_trace };
        const char *args[10];
        int restore, release, clamp;
        redisReply *reply = NULL;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        res->home = -1;
        if (!r || !prefix || !mode || !at || voucher_id <= 0 || trace_id <= 0 || user_id < 0 ||
            expire_extra_ms < 0 || at->bucket < 0 || at->bucket > 15 || at->home > 15 ||
            at->repoint < 0 ||
            (strcmp(mode, "front") && strcmp(mode, "consumer") && strcmp(mode, "reconciler"))) {
                sk_seterr(errstr, errstr_size, "rollback: invalid argument");
                return SK_EINVAL;
        }
        sk_reason_flags(reason, &restore, &release, &clamp);
        sk_key_voucher(k_meta, prefix, voucher_id, at->bucket, SK_KEY_META);
        sk_key_voucher(k_stock, prefix, voucher_id, at->bucket, SK_KEY_STOCK);
        sk_key_voucher(k_users, prefix, voucher_id, at->bucket, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, voucher_id, at->bucket, SK_KEY_TRACE);
        sk_id_format(trace_id, trace_s);
        if (user_id > 0)
                sk_id_format(user_id, user_s);
        /* Clamp only when the reason asks for it and the caller read a DB stock. */
        if (clamp && clamp_to >= 0)
                snprintf(clamp_s, sizeof(clamp_s), "%" PRId64, clamp_to);
        snprintf(extra_s, sizeof(extra_s), "%" PRId64, expire_extra_ms);
        if (at->home >= 0)
                snprintf(home_s, sizeof(home_s), "%d", at->home);
        if (at->repoint > 0)
                sk_id_format(at->repoint, repoint_s);

        args[0] = trace_s;
        args[1] = mode;
        args[2] = restore ? "1" : "0";
        args[3] = release ? "1" : "0";
        args[4] = clamp_s;
        args[5] = user_s;
        args[6] = sk_reason_str(reason);
        args[7] = extra_s;
        args[8] = home_s;
        args[9] = repoint_s;
        err = sk_redis_evalsha(r, SK_SCRIPT_ROLLBACK, 4, keys, 10, args, &reply,
                               errstr, errstr_size);
        if (err != SK_OK)
                return err;
        err = parse_rollback(reply, res, errstr, errstr_size);
        freeReplyObject(reply);
        if (err != SK_OK || res->claimed || at->no_home_step || user_id <= 0 ||
            res->home < 0 || res->home == at->bucket)
                return err;
        /* j != h: the home step is a second script on h (after OK and after ALREADY). */
        err = sk_home_run(r, prefix, voucher_id, res->home, at->bucket, trace_id, user_id,
                          at->repoint, reason, expire_extra_ms, NULL, &res->released, NULL,
                          errstr, errstr_size);
        res->home_run = err == SK_OK;
        return err;
}

sk_err_t sk_home_run(sk_redis_t *r, const char *prefix, int64_t voucher_id, int home,
                     int bucket, int64_t trace_id, int64_t user_id, int64_t repoint,
                     sk_reason_t reason, int64_t expire_extra_ms, int *fenced, int *released,
                     int *repointed, char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char trace_s[SK_ID_STRLEN], user_s[SK_ID_STRLEN], repoint_s[SK_ID_STRLEN] = "";
        char bucket_s[16] = "", extra_s[32];
        const char *keys[3] = { k_meta, k_users, k_trace };
        const char *args[6];
        const char *why = reason == SK_REASON_NONE ? "home" : sk_reason_str(reason);
        redisReply *reply = NULL;
        int f = 0, rel = 0, rep = 0;
        sk_err_t err;

        if (!r || !prefix || voucher_id <= 0 || home < 0 || home > 15 || bucket < -1 ||
            bucket > 15 || trace_id <= 0 || user_id <= 0 || repoint < 0 || expire_extra_ms < 0) {
                sk_seterr(errstr, errstr_size, "home: invalid argument");
                return SK_EINVAL;
        }
        sk_key_voucher(k_meta, prefix, voucher_id, home, SK_KEY_META);
        sk_key_voucher(k_users, prefix, voucher_id, home, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, voucher_id, home, SK_KEY_TRACE);
        sk_id_format(trace_id, trace_s);
        sk_id_format(user_id, user_s);
        if (repoint > 0)
                sk_id_format(repoint, repoint_s);
        if (bucket >= 0)
                snprintf(bucket_s, sizeof(bucket_s), "%d", bucket);
        snprintf(extra_s, sizeof(extra_s), "%" PRId64, expire_extra_ms);
        args[0] = trace_s;
        args[1] = user_s;
        args[2] = bucket_s;
        args[3] = repoint_s;
        args[4] = why;
        args[5] = extra_s;
        err = sk_redis_evalsha(r, SK_SCRIPT_HOME, 3, keys, 6, args, &reply, errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            strcmp(reply->element[0]->str, "OK") != 0 || reply_int(reply->element[1], &f) ||
            reply_int(reply->element[2], &rel) || reply_int(reply->element[3], &rep)) {
                sk_seterr(errstr, errstr_size, "home.lua: unexpected reply");
                err = SK_EREDIS;
        }
        freeReplyObject(reply);
        if (fenced)
                *fenced = f;
        if (released)
                *released = rel;
        if (repointed)
                *repointed = rep;
        return err;
}
