/* rc_bucket.c: the repairs that span the buckets of one voucher (rc_pass.h; DESIGN.md
 * v4 4 "Overflow probing", "Home step", 14 "Drift, by direction"), run after every
 * bucket's trace hash was scanned and before any bucket is judged:
 *
 *   users[U] = T in home h, T:h = probing, T older than the probing grace:
 *       T found in bucket k      settle.lua on h (T:h = k); T is judged in k as usual
 *       T found nowhere          rollback.lua mode reconciler (lost) on every bucket,
 *                                then the home step (home.lua, no bucket)
 *   users[U] = T in home h, T's bucket j holds T:r or T:x (or h holds the home fence),
 *   j = h included:              the home step (home.lua on h): users[U] re-pointed to
 *                                the trace of the user's active order, else released
 *   a take T in bucket b whose outcome names bucket o != b (and o holds T): a stray
 *                                take: rollback.lua restores b, no home step; T is
 *                                not judged in b
 *
 * Every act is idempotent (the scripts are), so a pass that dies midway is finished by
 * the next one. Users entries "_" (preheat's placeholder) are not buyers. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rc_pass.h"
#include "sk/home.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/outcome.h"
#include "sk/snowflake.h"

int rc_nbuckets(rc_ctx_t *ctx, int64_t voucher_id, rc_vstat_t *st)
{
        int64_t v = 1;
        char errstr[512];
        sk_err_t err = sk_db_i64(ctx->db, "SELECT buckets FROM tb_seckill_voucher"
                                 " WHERE voucher_id = ?", SK_ARGS(SK_I64(voucher_id)), &v, NULL,
                                 errstr, sizeof(errstr));

        if (err != SK_OK && err != SK_ENOTFOUND) {
                st->errors++;
                rc_note(st, "buckets read failed: %s", errstr);
                return 1;
        }
        return err == SK_OK && v >= 1 && v <= SK_BUCKETS_MAX ? (int)v : 1;
}

/* The probing grace, from T's snowflake time: the front's request deadline (2 x
 * delivery timeout + 1 s) or --grace-seconds, whichever is longer (main.c refuses a
 * --grace-seconds below the deadline; this keeps the floor for any caller). */
static int64_t probing_grace_ms(const rc_ctx_t *ctx)
{
        int64_t deadline = rc_request_deadline_ms(ctx->conf);
        int64_t grace = (int64_t)ctx->opts.grace_s * 1000;

        return grace > deadline ? grace : deadline;
}

/* sk_redis_hscan callback: one U -> T field of a users hash into the pairs vector. */
static sk_err_t user_pair(const char *f, size_t flen, const char *val, size_t vlen, void *arg)
{
        sk_i64vec_t *out = arg;
        int64_t u, t;

        if (sk_id_parse(f, flen, &u) != 0 || sk_id_parse(val, vlen, &t) != 0)
                return SK_OK; /* "_" and anything that is not U -> T */
        if (sk_i64vec_push(out, u) != 0 || sk_i64vec_push(out, t) != 0)
                return SK_ENOMEM;
        return SK_OK;
}

/* users of bucket @p h as pairs (user, trace) into @p out (HSCAN; "_" skipped). */
static sk_err_t scan_users(rc_ctx_t *ctx, int64_t voucher_id, int h, sk_i64vec_t *out,
                           char *errstr, size_t errstr_size)
{
        char k_users[SK_KEY_MAX];

        sk_key_voucher(k_users, ctx->conf->redis_prefix, voucher_id, h, SK_KEY_USERS);
        return sk_redis_hscan(ctx->r, k_users, 1000, user_pair, out, errstr, errstr_size);
}

/* The bucket whose trace hash holds the DEDUCT entry of @p t, or -1. */
static int deduct_bucket(sk_traceset_t *sets, int nb, int64_t t, int prefer)
{
        sk_trace_entry_t *e;

        if (prefer >= 0 && prefer < nb && (e = sk_traceset_get(&sets[prefer], t, 0)) && e->deduct)
                return prefer;
        for (int k = 0; k < nb; k++)
                if ((e = sk_traceset_get(&sets[k], t, 0)) && e->deduct)
                        return k;
        return -1;
}

/* T probing longer than grace (DESIGN.md 14): settle where it was taken, or give up. */
static void repair_probing(rc_ctx_t *ctx, int64_t vid, sk_traceset_t *sets, int nb, int h,
                           int64_t u, int64_t t, rc_vstat_t *st)
{
        int64_t extra = rc_expire_extra_ms(ctx);
        char errstr[512];
        int k = deduct_bucket(sets, nb, t, -1);
        sk_err_t err = SK_OK;

        if (rc_must_stop(ctx))
                return;
        if (k >= 0 && k != h) {
                int state = 0;
                if ((err = sk_home_settle(ctx->r, ctx->conf->redis_prefix, vid, h, t, k, &state,
                                          errstr, sizeof(errstr))) == SK_OK) {
                        SK_LOG(SK_WARN, "probing_settled", "voucher=%" PRId64 " trace=%" PRId64
                               " home=%d bucket=%d", vid, t, h, k);
                        st->probing_settled++;
                }
        } else {
                sk_rollback_res_t res;
                sk_home_res_t hr;
                sk_rollback_args_t a = { .voucher_id = vid, .home = h, .trace_id = t,
                                         .user_id = u, .mode = "reconciler",
                                         .reason = SK_REASON_LOST, .clamp_to = -1,
                                         .expire_extra_ms = extra };
                for (int b = 0; b < nb && err == SK_OK; b++) {
                        a.bucket = b;
                        err = sk_rollback_bucket(ctx->r, ctx->conf->redis_prefix, &a, &res,
                                                 errstr, sizeof(errstr));
                }
                if (err == SK_OK)
                        err = sk_home_step(ctx->r, ctx->conf->redis_prefix, vid, h, t, u, -1, 0,
                                           SK_REASON_LOST, extra, &hr, errstr, sizeof(errstr));
                if (err == SK_OK) {
                        SK_LOG(SK_WARN, "probing_rolled_back", "voucher=%" PRId64 " trace=%"
                               PRId64 " home=%d", vid, t, h);
                        st->probing_rolled_back++;
                }
        }
        if (err != SK_OK) {
                st->errors++;
                rc_note(st, "probing repair failed: %s", errstr);
        }
}

/* users[U] = T still names a trace that was fenced or released: the home step (users[U]
 * re-pointed to the trace of the user's active order when there is one, else released). */
static void repair_home(rc_ctx_t *ctx, int64_t vid, sk_traceset_t *sets, int nb, int h,
                        int64_t u, int64_t t, rc_vstat_t *st)
{
        sk_trace_entry_t *eh = sk_traceset_get(&sets[h], t, 0), *ej = NULL;
        int prefer = -1, j, home_fence;
        int64_t t0 = 0;
        sk_home_res_t hr;
        char errstr[512];
        sk_err_t err;

        if (eh && eh->home_st)
                (void)sk_parse_int(eh->home_st, 0, 15, &prefer);
        j = deduct_bucket(sets, nb, t, prefer >= 0 ? prefer : h);
        if (j >= 0)
                ej = sk_traceset_get(&sets[j], t, 0);
        /* j = h too: rollback.lua and release.lua do the home step themselves, but a
         * has_order rollback may re-point users[U] to a T0 that a cancel or close ended
         * meanwhile (its release named T, not T0), or keep T when T0 ended before the
         * consumer read it: users[U] must never name a fenced or released
         * trace once this pass has run. */
        home_fence = eh && eh->restore; /* h holds T:r: fenced there, a step half done */
        if (!home_fence && !(ej && (ej->restore || ej->release)))
                return;
        if (rc_must_stop(ctx))
                return;
        /* A user who holds an active order (T was a has_order duplicate) stays blocked by
         * that order's trace T0 (DESIGN.md 4): re-point instead of releasing. */
        err = sk_db_i64(ctx->db, "SELECT trace_id FROM tb_voucher_order WHERE voucher_id = ?"
                        " AND active_user_id = ?", SK_ARGS(SK_I64(vid), SK_I64(u)), &t0, NULL,
                        errstr, sizeof(errstr));
        if (err != SK_OK && err != SK_ENOTFOUND) {
                st->errors++;
                rc_note(st, "active order read failed: %s", errstr);
                return;
        }
        if (err == SK_OK && t0 == t)
                return; /* T is the user's active order: users[U] = T is right */
        if (sk_home_step(ctx->r, ctx->conf->redis_prefix, vid, h, t, u, j,
                         err == SK_OK ? t0 : 0, SK_REASON_NONE,
                         rc_expire_extra_ms(ctx), &hr, errstr, sizeof(errstr)) != SK_OK) {
                st->errors++;
                rc_note(st, "home step failed: %s", errstr);
                return;
        }
        SK_LOG(SK_WARN, "home_step", "voucher=%" PRId64 " trace=%" PRId64 " home=%d bucket=%d",
               vid, t, h, j);
        st->home_steps++;
}

/* Takes of bucket @p b decided in another bucket o (outcome row's bucket, o holding T). */
static void repair_strays(rc_ctx_t *ctx, int64_t vid, sk_traceset_t *sets, int nb, int b,
                          int64_t now_ms, rc_vstat_t *st)
{
        int64_t grace = (int64_t)ctx->opts.grace_s * 1000;
        char errstr[512];

        for (size_t i = 0; i < sets[b].n; i++) {
                sk_trace_entry_t *e = &sets[b].v[i], *eo;
                int64_t o = -1;
                sk_err_t err;
                sk_rollback_res_t res;
                sk_rollback_args_t ra = { .voucher_id = vid, .bucket = b, .home = -1,
                                          .trace_id = e->trace_id, .user_id = e->msg.user_id,
                                          .mode = "reconciler", .reason = SK_REASON_LOST,
                                          .clamp_to = -1,
                                          .expire_extra_ms = rc_expire_extra_ms(ctx) };

                if (!e->deduct || !e->msg_ok || !e->outcome || e->msg.bucket == e->msg.home ||
                    now_ms - e->msg.ts_ms < grace)
                        continue;
                err = sk_db_i64(ctx->db, "SELECT bucket FROM tb_seckill_outcome WHERE trace_id = ?",
                                SK_ARGS(SK_I64(e->trace_id)), &o, NULL, errstr, sizeof(errstr));
                if (err != SK_OK && err != SK_ENOTFOUND) {
                        st->errors++;
                        rc_note(st, "outcome bucket read failed: %s", errstr);
                        return;
                }
                if (err != SK_OK || o == b || o < 0 || o >= nb ||
                    !(eo = sk_traceset_get(&sets[o], e->trace_id, 0)) || !eo->deduct)
                        continue;
                e->skip = 1; /* decided in bucket o: not judged here */
                if (e->restore)
                        continue; /* restored already */
                if (rc_must_stop(ctx))
                        return;
                ra.home = e->msg.home; /* no home step: the purchase lives on in bucket o */
                if (sk_rollback_bucket(ctx->r, ctx->conf->redis_prefix, &ra, &res, errstr,
                                       sizeof(errstr)) != SK_OK) {
                        st->errors++;
                        rc_note(st, "stray restore failed: %s", errstr);
                        continue;
                }
                SK_LOG(SK_WARN, "stray_take_restored", "voucher=%" PRId64 " trace=%" PRId64
                       " bucket=%d outcome_bucket=%" PRId64 " restored=%d", vid, e->trace_id, b,
                       o, res.restored);
                st->stray_restored++;
        }
}

void rc_repair_buckets(rc_ctx_t *ctx, int64_t vid, sk_traceset_t *sets, int nb, int64_t now_ms,
                       rc_vstat_t *st)
{
        int64_t pgrace = probing_grace_ms(ctx), grace = (int64_t)ctx->opts.grace_s * 1000;
        char errstr[512];

        for (int h = 0; h < nb; h++) {
                sk_i64vec_t uv = { 0 };

                if (scan_users(ctx, vid, h, &uv, errstr, sizeof(errstr)) != SK_OK) {
                        st->errors++;
                        rc_note(st, "users scan failed: %s", errstr);
                        free(uv.v);
                        continue;
                }
                for (size_t i = 0; i + 1 < uv.n && !rc_must_stop(ctx); i += 2) {
                        int64_t u = uv.v[i], t = uv.v[i + 1], age;
                        sk_trace_entry_t *eh = sk_traceset_get(&sets[h], t, 0);

                        age = now_ms - sk_snowflake_ts_ms(t);
                        if (eh && eh->home_st && strcmp(eh->home_st, "probing") == 0) {
                                if (age >= pgrace)
                                        repair_probing(ctx, vid, sets, nb, h, u, t, st);
                        } else if (age >= grace) {
                                repair_home(ctx, vid, sets, nb, h, u, t, st);
                        }
                }
                free(uv.v);
        }
        if (nb > 1)
                for (int b = 0; b < nb && !rc_must_stop(ctx); b++)
                        repair_strays(ctx, vid, sets, nb, b, now_ms, st);
}
