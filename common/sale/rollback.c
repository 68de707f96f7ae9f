/* rollback.c: the call of rollback.lua (sk/outcome.h) with the flags a failure reason
 * implies (the reason table is reason.c). The database side of an
 * outcome (sk_outcome_*) lives in outcome.c; this file never touches the database and
 * never decides anything: it runs the script with the flags the reason implies and
 * reports what the script did. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk/outcome.h"
#include "sk/ids.h"
#include "sk/home.h"
#include "sk/keys.h"
#include "sk/scripts.h"

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

sk_err_t sk_rollback_bucket(sk_redis_t *r, const char *prefix, const sk_rollback_args_t *a,
                            sk_rollback_res_t *res, char *errstr, size_t errstr_size)
{
        char k_meta[SK_KEY_MAX], k_stock[SK_KEY_MAX], k_users[SK_KEY_MAX], k_trace[SK_KEY_MAX];
        char trace_s[SK_ID_STRLEN], user_s[SK_ID_STRLEN] = "", clamp_s[32] = "", extra_s[32];
        char home_s[16] = "", repoint_s[SK_ID_STRLEN] = "";
        const char *keys[4] = { k_meta, k_stock, k_users, k_trace };
        const char *args[10];
        int restore, release, clamp, home = -1;
        redisReply *reply = NULL;
        sk_err_t err;

        memset(res, 0, sizeof(*res));
        res->home = -1;
        if (!r || !prefix || !a || !a->mode || a->voucher_id <= 0 || a->trace_id <= 0 ||
            a->user_id < 0 || a->expire_extra_ms < 0 || a->bucket < 0 ||
            a->bucket >= SK_BUCKETS_MAX || a->home >= SK_BUCKETS_MAX || a->repoint_trace_id < 0 ||
            (strcmp(a->mode, "front") && strcmp(a->mode, "consumer") &&
             strcmp(a->mode, "reconciler"))) {
                sk_seterr(errstr, errstr_size, "rollback: invalid argument");
                return SK_EINVAL;
        }
        sk_reason_flags(a->reason, &restore, &release, &clamp);
        sk_key_voucher(k_meta, prefix, a->voucher_id, a->bucket, SK_KEY_META);
        sk_key_voucher(k_stock, prefix, a->voucher_id, a->bucket, SK_KEY_STOCK);
        sk_key_voucher(k_users, prefix, a->voucher_id, a->bucket, SK_KEY_USERS);
        sk_key_voucher(k_trace, prefix, a->voucher_id, a->bucket, SK_KEY_TRACE);
        sk_id_format(a->trace_id, trace_s);
        if (a->user_id > 0)
                sk_id_format(a->user_id, user_s);
        /* Clamp only when the reason asks for it and the caller read a DB stock. */
        if (clamp && a->clamp_to >= 0)
                snprintf(clamp_s, sizeof(clamp_s), "%" PRId64, a->clamp_to);
        snprintf(extra_s, sizeof(extra_s), "%" PRId64, a->expire_extra_ms);
        if (a->home >= 0)
                snprintf(home_s, sizeof(home_s), "%d", a->home);
        if (a->repoint_trace_id > 0)
                sk_id_format(a->repoint_trace_id, repoint_s);

        args[0] = trace_s;
        args[1] = a->mode;
        args[2] = restore ? "1" : "0";
        args[3] = release ? "1" : "0";
        args[4] = clamp_s;
        args[5] = user_s;
        args[6] = sk_reason_str(a->reason);
        args[7] = extra_s;
        args[8] = home_s;
        args[9] = repoint_s;
        err = sk_script_eval(r, SK_SCRIPT_ROLLBACK, 4, keys, 10, args, &reply,
                             errstr, errstr_size);
        if (err != SK_OK)
                return err;

        err = SK_EREDIS;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
            reply->element[0]->type != REDIS_REPLY_STRING) {
                sk_seterr(errstr, errstr_size, "rollback.lua: unexpected reply");
                goto done;
        }
        if (strcmp(reply->element[0]->str, "OK") == 0) {
                if (reply->elements != 6 || reply_int(reply->element[1], &res->restored) ||
                    reply_int(reply->element[2], &res->released) ||
                    reply_int(reply->element[3], &res->clamped) ||
                    reply->element[4]->type != REDIS_REPLY_INTEGER ||
                    reply_int(reply->element[5], &res->repointed)) {
                        sk_seterr(errstr, errstr_size, "rollback.lua: malformed OK reply");
                        goto done;
                }
                home = (int)reply->element[4]->integer;
        } else if (strcmp(reply->element[0]->str, "ALREADY") == 0) {
                if (reply->elements != 3 || reply->element[2]->type != REDIS_REPLY_INTEGER) {
                        sk_seterr(errstr, errstr_size, "rollback.lua: malformed ALREADY reply");
                        goto done;
                }
                res->already = 1;
                home = (int)reply->element[2]->integer;
        } else if (strcmp(reply->element[0]->str, "CLAIMED") == 0) {
                res->claimed = 1;
                err = SK_OK;
                goto done;
        } else {
                sk_seterr(errstr, errstr_size, "rollback.lua: unexpected status %s",
                          reply->element[0]->str);
                goto done;
        }
        if (home < 0 || home >= SK_BUCKETS_MAX) {
                sk_seterr(errstr, errstr_size, "rollback.lua: home bucket %d out of range", home);
                goto done;
        }
        res->home = home;
        err = SK_OK;
done:
        freeReplyObject(reply);
        return err;
}

sk_err_t sk_rollback_trace(sk_redis_t *r, const char *prefix, const sk_rollback_args_t *a,
                           sk_rollback_res_t *res, char *errstr, size_t errstr_size)
{
        sk_err_t err = sk_rollback_bucket(r, prefix, a, res, errstr, errstr_size);
        int restore, release, clamp;
        sk_home_res_t hr;

        if (err != SK_OK || res->claimed || res->home == a->bucket)
                return err;
        /* DESIGN.md 4: the home step on h != j, after OK and after ALREADY. */
        if (a->user_id <= 0) {
                sk_seterr(errstr, errstr_size, "rollback: the home step needs the user id");
                return SK_EINVAL;
        }
        /* A reason that keeps the user (has_order without its T0 here) only fences h. */
        sk_reason_flags(a->reason, &restore, &release, &clamp);
        err = sk_home_step(r, prefix, a->voucher_id, res->home, a->trace_id, a->user_id,
                           a->bucket, a->repoint_trace_id > 0 ? a->repoint_trace_id :
                           release ? 0 : -1, a->reason, a->expire_extra_ms, &hr, errstr,
                           errstr_size);
        if (err == SK_OK) {
                res->home_done = 1;
                res->released = hr.released;
                res->repointed = hr.repointed;
        }
        return err;
}

sk_err_t sk_rollback_run(sk_redis_t *r, const char *prefix, int64_t voucher_id, int bucket,
                         int64_t trace_id, int64_t user_id, const char *mode,
                         sk_reason_t reason, int64_t clamp_to, int64_t expire_extra_ms,
                         sk_rollback_res_t *res, char *errstr, size_t errstr_size)
{
        sk_rollback_args_t a = { .voucher_id = voucher_id, .bucket = bucket, .home = -1,
                                 .trace_id = trace_id, .user_id = user_id, .mode = mode,
                                 .reason = reason, .clamp_to = clamp_to,
                                 .expire_extra_ms = expire_extra_ms };

        return sk_rollback_trace(r, prefix, &a, res, errstr, errstr_size);
}
