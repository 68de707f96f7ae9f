/* rc_drift.c: drift between Redis and the database for one voucher (rc_pass.h):
 *   - CREATED outcomes whose DEDUCT entry is gone from Redis (Redis lost data, DESIGN.md
 *     8), reported; an outcome with path 'db' (the DB-only purchase, DESIGN.md 12) is a
 *     decided purchase that never had a trace: never drift;
 *   - invariant 3 of DESIGN.md 9 (Redis stock and users vs the DB, sk_verify), rebuilt
 *     under --repair (sk_rebuild, DESIGN.md 8 "rebuild"); a bucketed voucher's stock per
 *     bucket (each bucket's DB stock and outcomes read in one snapshot), its users
 *     hashes together and each entry in its user's home bucket;
 *   - meta left at status 4 by a rebuild that died: reset from the DB when nobody holds
 *     the voucher lock;
 *   - undecided purchases whose trace hash expires within 6 h: alert.
 * The run lock is checked before the rebuild and the meta reset (rc_must_stop). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_pass.h"
#include "sk/drift_mark.h"
#include "sk/failpoint.h"
#include "sk/ids.h"
#include "sk/keys.h"
#include "sk/model.h"
#include "sk/outcome.h"
#include "sk/log.h"
#include "sk/rebuild.h"
#include "sk/verify.h"
#include "sk/vstatus.h"

#define EXPIRY_ALERT_MS (6 * 3600 * 1000LL) /* undecided and < 6 h of life left */

typedef struct drift_acc {
        sk_traceset_t *sets;
        int nb;
        sk_i64vec_t gone;
        int oom;
} drift_acc_t;

static int created_row(void *arg, const int64_t *cols, const int *nulls, int ncols)
{
        drift_acc_t *a = arg;
        sk_trace_entry_t *e;

        (void)nulls;
        (void)ncols;
        e = NULL;
        for (int b = 0; b < a->nb && !(e && e->deduct); b++)
                e = sk_traceset_get(&a->sets[b], cols[0], 0);
        /* A rebuild's stub T ("rebuilt":1) is no DEDUCT record: the entry is still gone. */
        if (!e || !e->deduct || strstr(e->deduct, "\"rebuilt\":1")) {
                if (sk_i64vec_push(&a->gone, cols[0]) != 0) {
                        a->oom = 1;
                        return 1;
                }
        }
        return 0;
}

/* CREATED outcomes of the voucher whose DEDUCT entry is not in Redis (re-checked with
 * HEXISTS: the scan may have missed a field written during it). */
static void drift_rows(rc_ctx_t *ctx, int64_t voucher_id, sk_traceset_t *sets, int nb,
                       rc_vstat_t *st)
{
        drift_acc_t a;
        char errstr[512], k_trace[SK_KEY_MAX], f[SK_KEY_MAX];
        size_t i;
        sk_err_t err;

        memset(&a, 0, sizeof(a));
        a.sets = sets;
        a.nb = nb;
        err = sk_db_rows(ctx->db,
                         "SELECT trace_id FROM tb_seckill_outcome"
                         " WHERE voucher_id = ? AND outcome = " SK_SQL_OUTCOME_CREATED
                         " AND path <> 'db'",
                         &voucher_id, 1, 1, created_row, &a, errstr, sizeof(errstr));
        if (err != SK_OK || a.oom) {
                st->errors++;
                rc_note(st, "drift query failed: %s", a.oom ? "out of memory" : errstr);
                free(a.gone.v);
                return;
        }
        for (i = 0; i < a.gone.n && !err; i++) {
                int64_t found = 0;
                sk_field_trace(f, a.gone.v[i], 0);
                for (int b = 0; b < nb && !found; b++) {
                        redisReply *reply = NULL;
                        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, b,
                                       SK_KEY_TRACE);
                        if ((err = sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr),
                                                 "HGET %s %s", k_trace, f)) != SK_OK) {
                                st->errors++;
                                rc_note(st, "HGET failed: %s", errstr);
                                break;
                        }
                        /* A rebuild's stub T ("rebuilt":1) is no DEDUCT record: still gone. */
                        found = reply->type == REDIS_REPLY_STRING &&
                                strstr(reply->str, "\"rebuilt\":1") == NULL;
                        freeReplyObject(reply);
                }
                if (!err && !found)
                        st->drift_rows++;
        }
        if (st->drift_rows)
                SK_LOG(SK_WARN, "drift_trace_gone", "voucher=%" PRId64 " created_without_trace=%"
                       PRId64, voucher_id, st->drift_rows);
        free(a.gone.v);
}

static int64_t redis_stock(rc_ctx_t *ctx, int64_t voucher_id, int b, int *missing,
                           char *errstr, size_t errstr_size)
{
        char k_stock[SK_KEY_MAX];
        redisReply *reply = NULL;
        int64_t v = -1;

        *missing = 1;
        sk_key_voucher(k_stock, ctx->conf->redis_prefix, voucher_id, b, SK_KEY_STOCK);
        if (sk_redis_cmdf(ctx->r, &reply, errstr, errstr_size, "GET %s", k_stock) != SK_OK)
                return -2;
        if (reply->type == REDIS_REPLY_STRING) {
                *missing = 0; /* "0" or a canonical positive count; anything else: -1 */
                if (strcmp(reply->str, "0") == 0)
                        v = 0;
                else if (sk_id_parse(reply->str, reply->len, &v) != 0)
                        v = -1;
        }
        freeReplyObject(reply);
        return v;
}

/* Bucket @p b's DB stock and the outcomes of the traces in @p set, in one consistent
 * snapshot: read apart, a consumer committing in between makes a trace CREATED whose
 * unit the stock read earlier does not show as sold, a false undersell. */
static sk_err_t db_snapshot(rc_ctx_t *ctx, int64_t vid, int b, sk_traceset_t *set,
                            int64_t *db_stock, char *errstr, size_t errstr_size)
{
        int64_t stock = 0;
        sk_err_t err;

        if ((err = sk_db_begin_snapshot(ctx->db, errstr, errstr_size)) != SK_OK)
                return err;
        err = sk_db_i64(ctx->db, "SELECT stock FROM tb_seckill_stock WHERE voucher_id = ?"
                        " AND bucket = ?", SK_ARGS(SK_I64(vid), SK_I64(b)), &stock, NULL, errstr,
                        errstr_size);
        if (err == SK_ENOTFOUND) {
                sk_seterr(errstr, errstr_size, "no tb_seckill_stock row for bucket %d", b);
                err = SK_EDB;
        }
        if (err == SK_OK)
                err = sk_traceset_load_db(ctx->db, set, 0, errstr, errstr_size);
        if (err == SK_OK)
                err = sk_db_commit(ctx->db, errstr, errstr_size);
        if (err != SK_OK)
                sk_db_rollback(ctx->db);
        *db_stock = stock;
        return err;
}

/* Bucket @p b of a bucketed voucher: Redis stock (read before and after a fresh scan of
 * its trace hash and the DB snapshot) vs the DB bucket row - units held by undecided
 * DEDUCTs and pending rollbacks (DESIGN.md 14). */
static sk_err_t bucket_figures(rc_ctx_t *ctx, int64_t vid, int b, struct rc_bucket_drift *bd,
                               char *errstr, size_t errstr_size)
{
        sk_traceset_t set;
        int64_t r1, r2, held = 0, db_stock = 0;
        int m1, m2;
        sk_err_t err;
        char k_trace[SK_KEY_MAX];

        memset(bd, 0, sizeof(*bd));
        sk_traceset_init(&set);
        if ((r1 = redis_stock(ctx, vid, b, &m1, errstr, errstr_size)) == -2)
                return SK_EREDIS;
        sk_key_voucher(k_trace, ctx->conf->redis_prefix, vid, b, SK_KEY_TRACE);
        if ((err = sk_traceset_scan(ctx->r, k_trace, 1000, &set, errstr, errstr_size)) == SK_OK)
                (void)SK_FAILPOINT("reconciler.drift_before_db"); /* test 0520: commits here */
        if (err != SK_OK ||
            (err = db_snapshot(ctx, vid, b, &set, &db_stock, errstr, errstr_size)) != SK_OK) {
                sk_traceset_free(&set);
                return err;
        }
        for (size_t i = 0; i < set.n; i++) {
                sk_trace_entry_t *e = &set.v[i];
                if (e->deduct && e->msg_ok && !e->restore && e->outcome != SK_OUTCOME_CREATED)
                        held += e->msg.deduct_qty;
        }
        sk_traceset_free(&set);
        if ((r2 = redis_stock(ctx, vid, b, &m2, errstr, errstr_size)) == -2)
                return SK_EREDIS;
        bd->judged = r1 == r2 && m1 == m2; /* traffic moved it: judge next pass */
        bd->missing = m1;
        bd->redis = r1;
        bd->expected = db_stock - held;
        bd->drift = m1 ? 0 : r1 - bd->expected;
        return SK_OK;
}

/* Per-bucket stock of a bucketed voucher into st->bk; st->stock_drift when any bucket
 * differs. */
static sk_err_t buckets_drift(rc_ctx_t *ctx, int64_t vid, int nb, rc_vstat_t *st,
                              char *errstr, size_t errstr_size)
{
        sk_err_t err;

        for (int b = 0; b < nb; b++) {
                struct rc_bucket_drift *bd = &st->bk[b];
                if ((err = bucket_figures(ctx, vid, b, bd, errstr, errstr_size)) != SK_OK)
                        return err;
                if (bd->judged && (bd->missing || bd->drift))
                        st->stock_drift = 1;
        }
        return SK_OK;
}

/* Invariant 3 of DESIGN.md 9 (sk_verify_voucher_conn): the users hashes of every
 * voucher (a bucketed one's compared together, each entry in its user's home bucket,
 * §9.3/§14), and the stock of a one-bucket voucher into bk[0] (a bucketed voucher's
 * stock is judged per bucket by buckets_drift). */
static sk_err_t verify_drift(rc_ctx_t *ctx, int64_t vid, int nb, rc_vstat_t *st,
                             char *errstr, size_t errstr_size)
{
        sk_verify_report_t vr;
        struct rc_bucket_drift *bd = &st->bk[0];
        sk_err_t err;

        err = sk_verify_voucher_conn(ctx->db, ctx->r, ctx->conf->redis_prefix, vid, 3, &vr,
                                     errstr, errstr_size);
        if (err != SK_OK)
                return err;
        if (nb == 1)
                bd->judged = vr.redis_stable;
        if (!vr.redis_stable) {
                /* Traffic is flowing: the figures are not one snapshot; judge next pass. */
                SK_LOG(SK_INFO, "drift_not_judged", "voucher=%" PRId64 " reason=redis_changing",
                       vid);
                return SK_OK;
        }
        if (nb == 1) {
                bd->missing = vr.redis_stock_missing;
                bd->redis = vr.redis_stock;
                bd->expected = vr.expected_redis_stock;
                bd->drift = bd->missing ? 0 : bd->redis - bd->expected;
                st->stock_drift = !vr.inv3_stock_ok;
        }
        st->users_drift = !vr.inv3_users_ok;
        if (st->stock_drift || st->users_drift)
                SK_LOG(SK_WARN, "drift", "voucher=%" PRId64 " redis_stock=%" PRId64 " missing=%d"
                       " expected_stock=%" PRId64 " db_stock=%" PRId64 " held=%" PRId64
                       " users_in_hash=%" PRId64 " users_not_active=%" PRId64
                       " active_not_in_hash=%" PRId64 " users_wrong_home=%" PRId64, vid,
                       vr.redis_stock, vr.redis_stock_missing, vr.expected_redis_stock,
                       vr.db_stock, vr.held_qty, vr.users_in_hash, vr.users_not_active,
                       vr.active_not_in_hash, vr.users_wrong_home);
        return SK_OK;
}

/* Rebuild by direction (DESIGN.md 14): undersell always, oversell above the
 * threshold, anything (missing keys, users) under --repair. */
static int rebuild_wanted(const rc_ctx_t *ctx, const rc_vstat_t *st, int nb)
{
        if (ctx->opts.repair && (st->stock_drift || st->users_drift))
                return 1;
        for (int b = 0; b < nb; b++) {
                const struct rc_bucket_drift *bd = &st->bk[b];
                if (!bd->judged || bd->missing)
                        continue;
                if (bd->drift < 0 || bd->drift > ctx->opts.drift_threshold)
                        return 1;
        }
        return 0;
}

/* The pending drift marks of the voucher (DESIGN.md 16 (d)) into @p marks; their count
 * (0 when unreadable: noted, the regular drift pass still runs). */
static int read_marks(rc_ctx_t *ctx, int64_t voucher_id, sk_drift_mark_t *marks, rc_vstat_t *st)
{
        char errstr[256];
        int n = 0;

        if (sk_drift_marks(ctx->db, voucher_id, marks, SK_DRIFT_MARKS_MAX, &n, errstr,
                           sizeof(errstr)) != SK_OK) {
                rc_note(st, "drift marks not read: %s", errstr);
                return 0;
        }
        if (n > 0) {
                char list[128] = "";
                size_t off = 0;

                for (int i = 0; i < n && off < sizeof(list) - 8; i++)
                        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "",
                                                marks[i].bucket);
                SK_LOG(SK_WARN, "drift_mark", "voucher=%" PRId64 " buckets=%s reason=\"a clamp or "
                       "rebuild copy whose COMMIT failed: rebuilt at once\"", voucher_id, list);
        }
        st->drift_marks = n;
        return n;
}

/* After a rebuild that followed them: clear the marks read before it (a mark written
 * since has another seq and stays for the next pass). */
static void clear_marks(rc_ctx_t *ctx, int64_t voucher_id, const sk_drift_mark_t *marks, int n)
{
        char errstr[256];

        for (int i = 0; i < n && !rc_must_stop(ctx); i++)
                if (sk_drift_mark_clear(ctx->db, voucher_id, &marks[i], NULL, errstr,
                                        sizeof(errstr)) != SK_OK)
                        SK_LOG(SK_WARN, "drift_mark_clear_failed", "voucher=%" PRId64 " bucket=%d "
                               "err=\"%s\"", voucher_id, marks[i].bucket, errstr);
}

/* Stock (per bucket, with direction) and users vs the DB; the rebuild when wanted, or at
 * once when a drift mark asks for it (DESIGN.md 16 (d)), judged or not. */
static void stock_users_drift(rc_ctx_t *ctx, int64_t voucher_id, int nb, rc_vstat_t *st)
{
        sk_drift_mark_t marks[SK_DRIFT_MARKS_MAX];      /* 4 KiB */
        sk_rebuild_report_t rr;
        char errstr[512];
        int nmarks = read_marks(ctx, voucher_id, marks, st);
        sk_err_t err;

        err = nb > 1 ? buckets_drift(ctx, voucher_id, nb, st, errstr, sizeof(errstr)) : SK_OK;
        if (err == SK_OK)
                err = verify_drift(ctx, voucher_id, nb, st, errstr, sizeof(errstr));
        if (err != SK_OK) {
                st->errors++;
                rc_note(st, "verify failed: %s", errstr);
                return;
        }
        for (int b = 0; b < nb; b++)
                if (st->bk[b].judged && st->bk[b].drift)
                        SK_LOG(SK_WARN, "bucket_drift", "voucher=%" PRId64 " bucket=%d"
                               " redis_stock=%" PRId64 " expected=%" PRId64 " drift=%" PRId64
                               " direction=%s", voucher_id, b, st->bk[b].redis,
                               st->bk[b].expected, st->bk[b].drift,
                               st->bk[b].drift < 0 ? "undersell" : "oversell");
        if (!st->stock_drift && !st->users_drift && !nmarks) {
                st->redis_ok = st->bk[0].judged || nb > 1;
                return;
        }
        if (!nmarks && !rebuild_wanted(ctx, st, nb)) {
                rc_note(st, "%s", "Redis stock/users drift (run with --repair)");
                return;
        }
        if (rc_must_stop(ctx))
                return;
        memset(&rr, 0, sizeof(rr));
        err = sk_rebuild_voucher_with(ctx->conf, ctx->db, ctx->r, voucher_id, 0, &rr, errstr,
                                      sizeof(errstr));
        if (err != SK_OK) {
                SK_LOG(SK_ERROR, "rebuild_failed", "voucher=%" PRId64 " err=\"%s\" detail=\"%s\"",
                       voucher_id, errstr, rr.detail);
                st->errors++;
                rc_note(st, "rebuild failed: %s", errstr);
                return;
        }
        SK_LOG(SK_INFO, "rebuilt", "voucher=%" PRId64 " stock=%" PRId64 " users=%" PRId64
               " status=%d fenced_failed=%" PRId64 " drift_marks=%d", voucher_id, rr.stock,
               rr.users, rr.status, rr.fenced_failed, nmarks);
        clear_marks(ctx, voucher_id, marks, nmarks);
        st->rebuilt = 1;
        st->redis_ok = 1;
}

static int meta_status(rc_ctx_t *ctx, int64_t voucher_id)
{
        char k_meta[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int status = 0;

        sk_key_voucher(k_meta, ctx->conf->redis_prefix, voucher_id, 0, SK_KEY_META);
        if (sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr), "HGET %s status", k_meta) != SK_OK)
                return -1;
        if (reply->type == REDIS_REPLY_STRING)
                (void)sk_parse_int(reply->str, 0, 100, &status);
        freeReplyObject(reply);
        return status;
}

static int64_t trace_pttl(rc_ctx_t *ctx, int64_t voucher_id)
{
        char k_trace[SK_KEY_MAX], errstr[256];
        redisReply *reply = NULL;
        int64_t v = -3;

        sk_key_voucher(k_trace, ctx->conf->redis_prefix, voucher_id, 0, SK_KEY_TRACE);
        if (sk_redis_cmdf(ctx->r, &reply, errstr, sizeof(errstr), "PTTL %s", k_trace) != SK_OK)
                return -3;
        if (reply->type == REDIS_REPLY_INTEGER)
                v = reply->integer;
        freeReplyObject(reply);
        return v;
}


void rc_meta_check(rc_ctx_t *ctx, int64_t voucher_id, int db_status, rc_vstat_t *st)
{
        char errstr[512];
        int written = 0;
        sk_err_t err;

        if (meta_status(ctx, voucher_id) != 4 || db_status == 4 || rc_must_stop(ctx))
                return;
        err = sk_voucher_reset_meta_with(ctx->conf, ctx->db, ctx->r, voucher_id, &written,
                                         errstr, sizeof(errstr));
        if (err == SK_OK && written) {
                SK_LOG(SK_WARN, "meta_reset", "voucher=%" PRId64 " status=%d", voucher_id,
                       db_status);
                st->meta_reset = 1;
        } else if (err == SK_EAGAIN) {
                SK_LOG(SK_INFO, "rebuild_in_progress", "voucher=%" PRId64, voucher_id);
                st->waiting++;
                rc_note(st, "%s", "paused: a rebuild holds the voucher lock");
        } else if (err != SK_OK) {
                st->errors++;
                rc_note(st, "meta reset failed: %s", errstr);
        }
}

void rc_drift(rc_ctx_t *ctx, int64_t voucher_id, sk_traceset_t *sets, int nb, int64_t end_ms,
              int64_t now_ms, rc_vstat_t *st)
{
        drift_rows(ctx, voucher_id, sets, nb, st);
        /* Keys that expire within the hour (end + window + 1 day) are not judged: a key
         * that has just expired is not Redis losing data. */
        if (end_ms + rc_expire_extra_ms(ctx) - now_ms >= 3600 * 1000LL)
                stock_users_drift(ctx, voucher_id, nb, st);
        st->drift = st->drift_rows + (st->stock_drift || st->users_drift ? 1 : 0);
}

void rc_expiry_check(rc_ctx_t *ctx, int64_t voucher_id, size_t undecided, rc_vstat_t *st)
{
        int64_t pttl;

        if (!undecided)
                return;
        pttl = trace_pttl(ctx, voucher_id);
        if (pttl >= 0 && pttl < EXPIRY_ALERT_MS) {
                SK_LOG(SK_ERROR, "undecided_near_expiry", "voucher=%" PRId64 " undecided=%zu"
                       " pttl_ms=%" PRId64, voucher_id, undecided, pttl);
                st->expiry_alert = 1;
                rc_note(st, "%s", "undecided traces and the trace hash expires within 6 h");
        }
}
