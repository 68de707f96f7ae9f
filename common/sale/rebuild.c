/* rebuild.c: preheat and rebuild of a voucher's Redis admission state (sk/rebuild.h;
 * DESIGN.md 4 and the "rebuild" row of DESIGN.md 8).
 *
 * The database is the book of record: both operations copy the DB's stock, active
 * buyers and window into Redis. Preheat is for a voucher that cannot have sold yet (or
 * whose Redis stock is intact): it never overwrites a stock key that differs from the DB.
 * The rebuild is for a voucher whose Redis state is lost or drifted: it first pauses
 * admission (status 4) and waits until nothing of this voucher is in flight (its
 * partitions consumed by the group, every DEDUCT decided and fenced), then overwrites
 * stock and users from the DB and writes meta last, which also lifts the pause.
 *
 * Pieces: the voucher's rows and lock in voucher.c, the Redis writes (chunked users)
 * in vstate.c, its partitions in vkafka.c, the trace check in rebuild_traces.c, the
 * releases still pending for ended orders in rebuild_release.c. What it
 * does not do: log, exit, retry beyond the rebuild's wait, or undo anything in Redis
 * (the rebuild overwrites the whole state instead). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rebuild_int.h"
#include "sk/drift_mark.h"
#include "sk/order.h"
#include "sk/clock.h"
#include "sk/vkafka.h"

#define REBUILD_POLL_MS 250     /* between two checks of Kafka and the trace hash */

/* The holder's re-check (and renewal) of the voucher's tb_lock row before a Redis write
 * (DESIGN.md 16): SK_EAGAIN with the reason when the row is lost or unconfirmed. */
static sk_err_t guard(sk_dblock_t *lk, char *errstr, size_t errstr_size)
{
        char why[256];

        if (sk_dblock_check(lk, why, sizeof(why)) == SK_OK)
                return SK_OK;
        sk_seterr(errstr, errstr_size, "voucher lock lost, nothing more written: %s", why);
        return SK_EAGAIN;
}

/* The keys of every bucket of one voucher (DESIGN.md 4). */
typedef struct rb_keys {
        int n;                          /* N, the voucher's buckets (1..SK_BUCKETS_MAX) */
        sk_vstate_keys_t b[SK_BUCKETS_MAX];
} rb_keys_t;

static void rb_keys(rb_keys_t *k, const char *prefix, const sk_voucher_row_t *row)
{
        k->n = row->buckets > 0 && row->buckets <= SK_BUCKETS_MAX ? row->buckets : 1;
        for (int b = 0; b < k->n; b++)
                sk_vstate_keys(&k->b[b], prefix, row->voucher_id, b);
}

static void rep_init(sk_rebuild_report_t *rep)
{
        memset(rep, 0, sizeof(*rep));
        rep->stock = -1;
        rep->status = -1;
        rep->prev_status = -1;
}

/* Record `T:x` (by rebuild) for every CANCELLED/CLOSED order of bucket @p bucket that
 * lacks one (sk/order.h), unless this is a preheat whose stock key exists (then the stock
 * is not set and the releases stay the reconciler's). */
static sk_err_t mark_released(sk_redis_t *r, const sk_vstate_keys_t *k, int64_t voucher_id,
                              int bucket, int64_t expire_at_ms, int replace, sk_db_t *db,
                              const char *prefix, char *errstr, size_t errstr_size)
{
        int64_t marked = 0;
        int exists = 0;
        sk_err_t err;

        if (!replace) {
                if ((err = sk_vstate_exists(r, k->stock, &exists, errstr, errstr_size)) != SK_OK)
                        return err;
                if (exists)
                        return SK_OK;
        }
        return sk_rebuild_mark_released(db, r, prefix, voucher_id, bucket, expire_at_ms, &marked,
                                        errstr, errstr_size);
}

/* The pairs (user, trace) of @p buyers whose user's home bucket (sk_home_bucket among
 * @p n) is @p b, into @p out (emptied first). */
static sk_err_t buyers_of(const sk_i64vec_t *buyers, int n, int b, sk_i64vec_t *out,
                          char *errstr, size_t errstr_size)
{
        out->n = 0;
        for (size_t i = 0; i + 1 < buyers->n; i += 2) {
                if (sk_home_bucket(buyers->v[i], n) != b)
                        continue;
                if (sk_i64vec_push(out, buyers->v[i]) != SK_OK ||
                    sk_i64vec_push(out, buyers->v[i + 1]) != SK_OK) {
                        sk_seterr(errstr, errstr_size, "out of memory");
                        return SK_ENOMEM;
                }
        }
        return SK_OK;
}

/* Write bucket @p b's state from the snapshot: T:x records, users (its home buyers),
 * then stock and meta in one step. */
static sk_err_t copy_bucket(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r, sk_dblock_t *lk,
                            const rb_keys_t *k, int b, int replace, const sk_voucher_row_t *row,
                            const sk_i64vec_t *buyers, sk_i64vec_t *mine, int *sold_down,
                            char *cur, size_t cur_size, char *errstr, size_t errstr_size)
{
        int64_t e = sk_vstate_expiry(conf, row);
        sk_err_t err;

        /* Pending releases (DESIGN.md 8 rebuild row, 13) are recorded as T:x before the
         * stock is set from the DB: always for a rebuild, for a preheat only when it sets
         * a missing stock key. */
        if ((err = guard(lk, errstr, errstr_size)) != SK_OK ||
            (err = mark_released(r, &k->b[b], row->voucher_id, b, e, replace, db,
                                 conf->redis_prefix, errstr, errstr_size)) != SK_OK ||
            (err = buyers_of(buyers, k->n, b, mine, errstr, errstr_size)) != SK_OK ||
            (err = sk_vstate_write_users(r, &k->b[b], e, mine, replace, lk, errstr,
                                         errstr_size)) != SK_OK ||
            (err = guard(lk, errstr, errstr_size)) != SK_OK)
                return err;
        return sk_vstate_commit(r, &k->b[b], e, row, row->bucket_stock[b], replace, sold_down,
                                cur, cur_size, errstr, errstr_size);
}

/* Read the voucher row (FOR UPDATE) and its active buyers in one transaction and write
 * them to Redis, bucket by bucket (@p replace: rebuild, else preheat) before COMMIT: a
 * consumer's stock UPDATE for this voucher waits for us, so the Redis copy is one
 * consistent view of the DB. Buckets go last to first, so bucket 0's meta (whose
 * `buckets` the front reads) is the voucher's last write. *row is updated when read. */
static sk_err_t copy_state(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r, sk_dblock_t *lk,
                           const rb_keys_t *k, int64_t voucher_id, int replace,
                           sk_voucher_row_t *row, sk_i64vec_t *buyers, int *sold_down,
                           char *cur, size_t cur_size, char *errstr, size_t errstr_size)
{
        sk_i64vec_t mine = { 0 };
        sk_err_t err;

        buyers->n = 0;
        *sold_down = 0;
        if ((err = sk_db_begin(db, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_voucher_get(db, voucher_id, 1, row, errstr, errstr_size)) != SK_OK ||
            (err = sk_voucher_active_buyers(db, voucher_id, buyers, errstr, errstr_size)) != SK_OK)
                goto fail;
        if (row->buckets != k->n) {
                sk_seterr(errstr, errstr_size, "voucher %" PRId64 ": buckets changed (%d, was %d)",
                          voucher_id, row->buckets, k->n);
                err = SK_EAGAIN;
                goto fail;
        }
        /* Preheat: refuse a sold-down stock of any bucket before writing anything. */
        for (int b = 0; !replace && b < k->n; b++)
                if ((err = sk_vstate_sold_down(r, &k->b[b], row->bucket_stock[b], sold_down,
                                               cur, cur_size, errstr, errstr_size)) != SK_OK ||
                    *sold_down)
                        goto fail;
        for (int b = k->n - 1; b >= 0; b--)
                if ((err = copy_bucket(conf, db, r, lk, k, b, replace, row, buyers, &mine, sold_down,
                                       cur, cur_size, errstr, errstr_size)) != SK_OK ||
                    *sold_down)
                        goto fail;
        sk_i64vec_free(&mine);
        /* Nothing was written in the DB. A failed COMMIT means the view copied may not be
         * the cluster's (DESIGN.md 16 (d)): a drift mark per bucket makes the reconciler's
         * next pass rebuild the voucher at once. A mark that cannot be written either
         * leaves the drift to the reconciler's regular pass. */
        if (sk_db_commit(db, NULL, 0) != SK_OK) {
                sk_db_rollback(db);
                if (!sk_db_connected(db))
                        (void)sk_db_reconnect(db, NULL, 0);
                for (int b = 0; b < k->n; b++)
                        (void)sk_drift_mark(db, voucher_id, b, "rebuild", NULL, 0);
        }
        return SK_OK;
fail:
        sk_i64vec_free(&mine);
        sk_db_rollback(db); /* read-only: ending it releases the row lock */
        return err;
}

/* One check: the voucher's partitions, then (only when they are consumed) the trace
 * hash. *settled = 1 when both are done; @p why says what is left. Errors that need a
 * human (SK_EINVAL, SK_EKAFKA) are returned; transient ones are reported in @p why. */
static sk_err_t check_once(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r, sk_dblock_t *lk,
                           sk_vkafka_t *vk, const rb_keys_t *k, int64_t voucher_id,
                           sk_rebuild_report_t *rep, int *settled, char *why, size_t why_size)
{
        sk_vkafka_state_t ks;
        sk_err_t err;

        *settled = 0;
        err = sk_vkafka_check(vk, voucher_id, k->n, &ks, why, why_size);
        if (err == SK_EINVAL || err == SK_EKAFKA)
                return err;
        rep->lag = err == SK_OK ? ks.lag : -1;
        if (err != SK_OK)
                return SK_OK;
        if (ks.lag > 0) {
                sk_seterr(why, why_size,
                          "group %s has %" PRId64 " message(s) of %s left to consume on the "
                          "voucher's partitions", conf->group_id, ks.lag, conf->topic);
                return SK_OK;
        }
        rep->undecided = 0;
        rep->deducts = 0;
        err = SK_OK;
        for (int b = 0; b < k->n && err == SK_OK; b++)
                err = rb_settle_traces(conf, db, r, lk, &k->b[b], voucher_id, rep, why,
                                       why_size);
        if (err == SK_OK && rep->undecided == 0) {
                *settled = 1;
                return SK_OK;
        }
        if (err != SK_OK && err != SK_EAGAIN && err != SK_EUNKNOWN)
                return err;
        if (err == SK_OK)
                sk_seterr(why, why_size, "%" PRId64 " DEDUCT(s) of %" PRId64
                          " have no outcome yet", rep->undecided, rep->deducts);
        return SK_OK;
}

/* Step 3 of the rebuild: wait up to @p wait_ms until nothing is in flight. */
static sk_err_t wait_settled(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                             sk_dblock_t *lk, const rb_keys_t *k, int64_t voucher_id, int wait_ms,
                             sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        int64_t start_ms = sk_mono_ms(), deadline_ms = start_ms + wait_ms;
        sk_vkafka_t *vk;
        char why[512] = "";
        sk_err_t err;

        if (!(vk = sk_vkafka_open(conf, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "kafka: %s", why);
                return SK_EKAFKA;
        }
        for (;;) {
                int settled = 0;

                /* Each check may write (pending rollbacks, FAILED front_rollback); the
                 * lock is re-checked first, and renewed, on every round of the wait. */
                if ((err = guard(lk, errstr, errstr_size)) != SK_OK)
                        break;
                err = check_once(conf, db, r, lk, vk, k, voucher_id, rep, &settled, why,
                                 sizeof(why));
                rep->waited_ms = sk_mono_ms() - start_ms;
                if (err != SK_OK) {
                        sk_seterr(errstr, errstr_size, "%s", why);
                        break;
                }
                if (settled)
                        break;
                if (sk_mono_ms() >= deadline_ms) {
                        sk_seterr(rep->detail, sizeof(rep->detail), "%s", why);
                        sk_seterr(errstr, errstr_size,
                                  "voucher %" PRId64 " not settled after %d ms: %s",
                                  voucher_id, wait_ms, why);
                        err = SK_EAGAIN;
                        break;
                }
                sk_sleep_ms(REBUILD_POLL_MS, NULL);
        }
        sk_vkafka_close(vk);
        return err;
}

/* Put back the status every bucket's meta had before the pause (best effort), only while
 * the lock is still ours: a holder that lost it leaves meta to the new holder (or to the
 * reconciler's meta reset once nobody holds it). */
static void unpause_all(const sk_conf_t *conf, sk_redis_t *r, sk_dblock_t *lk,
                        const rb_keys_t *k, const sk_voucher_row_t *row, const int *prev)
{
        if (sk_dblock_check(lk, NULL, 0) != SK_OK)
                return;
        for (int b = 0; b < k->n; b++)
                (void)sk_vstate_unpause(r, &k->b[b], sk_vstate_expiry(conf, row), prev[b],
                                        NULL, 0);
}

/* The rebuild with the voucher lock already held on @p db's session. */
static sk_err_t rebuild_locked(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                               sk_dblock_t *lk, int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                               char *errstr, size_t errstr_size)
{
        sk_voucher_row_t row;
        rb_keys_t k;
        sk_i64vec_t buyers = { 0 };
        int sold_down = 0, prev[SK_BUCKETS_MAX];
        sk_err_t err = SK_OK;

        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) != SK_OK)
                return err;
        rb_keys(&k, conf->redis_prefix, &row);
        if (wait_ms <= 0)
                wait_ms = 2 * conf->kafka_delivery_timeout_ms;
        /* 2. Pause admission on every bucket: deduct.lua and take.lua answer 10013 from
         * now on. */
        for (int b = 0; b < k.n; b++)
                prev[b] = -1;
        if ((err = guard(lk, errstr, errstr_size)) != SK_OK)
                return err;
        for (int b = 0; b < k.n && err == SK_OK; b++)
                err = sk_vstate_pause(r, &k.b[b], sk_vstate_expiry(conf, &row), &prev[b], errstr,
                                      errstr_size);
        rep->prev_status = prev[0];
        if (err != SK_OK) {
                unpause_all(conf, r, lk, &k, &row, prev);
                return err;
        }
        /* 3. Wait until nothing is in flight; 4. copy the book of record (the row is
         * read again: the consumers committed while we waited). */
        if ((err = wait_settled(conf, db, r, lk, &k, voucher_id, wait_ms, rep, errstr,
                                errstr_size)) != SK_OK ||
            (err = copy_state(conf, db, r, lk, &k, voucher_id, 1, &row, &buyers, &sold_down, NULL,
                              0, errstr, errstr_size)) != SK_OK) {
                /* Not rebuilt: lift our pause again (best effort; a reconciler pass that
                 * finds status 4 with nobody holding the lock resets meta from the DB). */
                unpause_all(conf, r, lk, &k, &row, prev);
                sk_i64vec_free(&buyers);
                return err;
        }
        rep->stock = row.stock;
        rep->users = (int64_t)(buyers.n / 2);
        rep->status = row.status;
        sk_i64vec_free(&buyers);
        return SK_OK;
}

sk_err_t sk_rebuild_voucher_with(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                 int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                                 char *errstr, size_t errstr_size)
{
        sk_rebuild_report_t local;
        sk_dblock_t *lk = NULL;
        sk_err_t err;

        if (!rep)
                rep = &local;
        rep_init(rep);
        if ((err = sk_voucher_lock(conf, voucher_id, -1, &lk, errstr, errstr_size)) != SK_OK)
                return err;
        err = rebuild_locked(conf, db, r, lk, voucher_id, wait_ms, rep, errstr, errstr_size);
        sk_dblock_close(lk);
        return err;
}

sk_err_t sk_rebuild_voucher(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_db_t *db;
        sk_redis_t *r;
        sk_err_t err;

        if ((err = sk_voucher_connect(conf, &db, &r, errstr, errstr_size)) != SK_OK) {
                if (rep)
                        rep_init(rep);
                return err;
        }
        err = sk_rebuild_voucher_with(conf, db, r, voucher_id, wait_ms, rep, errstr,
                                      errstr_size);
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}

/* Whether a message of the voucher waits unconsumed on its partitions; a broker that
 * does not answer (a leader moving, a topic just created) is asked again until @p wait_ms
 * passed; a range not read to the end by then counts as a message. */
static sk_err_t partitions_have_messages(const sk_conf_t *conf, int64_t voucher_id,
                                         int buckets, int wait_ms, int *has, char *errstr,
                                         size_t errstr_size)
{
        int64_t deadline_ms = sk_mono_ms() + wait_ms;
        sk_vkafka_t *vk;
        char why[256];
        sk_err_t err;

        *has = 0;
        if (!(vk = sk_vkafka_open(conf, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "kafka: %s", why);
                return SK_EKAFKA;
        }
        for (;;) {
                int64_t left = deadline_ms - sk_mono_ms();
                err = sk_vkafka_pending(vk, voucher_id, buckets,
                                        left > 0 ? (int)left : 0, has, errstr, errstr_size);
                if (err != SK_EAGAIN || sk_mono_ms() >= deadline_ms)
                        break;
                sk_sleep_ms(REBUILD_POLL_MS, NULL);
        }
        sk_vkafka_close(vk);
        if (err == SK_EAGAIN) {
                *has = 1; /* not known: treat as sales */
                err = SK_OK;
        }
        return err;
}

/* Whether voucher @p row, whose Redis stock key is missing, could have sales anywhere
 * (DESIGN.md 8, last sentence of the rebuild row): Redis remnants (meta, trace), the DB
 * (sk_voucher_db_sales), or messages on its partitions. */
static sk_err_t could_have_sales(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                                 const rb_keys_t *k, const sk_voucher_row_t *row,
                                 int wait_ms, int *sales, char *errstr, size_t errstr_size)
{
        char why[256];
        sk_err_t err;

        *sales = 0;
        for (int b = 0; b < k->n; b++) {
                int meta = 0, trace = 0;

                if ((err = sk_vstate_exists(r, k->b[b].meta, &meta, errstr, errstr_size)) != SK_OK ||
                    (err = sk_vstate_exists(r, k->b[b].trace, &trace, errstr, errstr_size)) != SK_OK)
                        return err;
                if (meta || trace) {
                        *sales = 1;
                        return SK_OK;
                }
        }
        if ((err = sk_voucher_db_sales(db, row, sales, why, sizeof(why))) != SK_OK) {
                sk_seterr(errstr, errstr_size, "%s", why);
                return err;
        }
        if (*sales)
                return SK_OK;
        return partitions_have_messages(conf, row->voucher_id, k->n, wait_ms, sales, errstr,
                                        errstr_size);
}

/* The preheat with the voucher lock held: a rebuild when a bucket's stock is missing and
 * the voucher could have sales, else the plain copy (a fresh voucher: every bucket SET). */
static sk_err_t preheat_locked(const sk_conf_t *conf, sk_db_t *db, sk_redis_t *r,
                               sk_dblock_t *lk, int64_t voucher_id, int wait_ms, sk_rebuild_report_t *rep,
                               char *errstr, size_t errstr_size)
{
        sk_voucher_row_t row;
        rb_keys_t k;
        sk_i64vec_t buyers = { 0 };
        char cur[64] = "";
        int stock_exists = 1, sales = 0, sold_down = 0;
        sk_err_t err;

        if ((err = sk_voucher_get(db, voucher_id, 0, &row, errstr, errstr_size)) != SK_OK)
                return err;
        rb_keys(&k, conf->redis_prefix, &row);
        for (int b = 0; b < k.n && stock_exists; b++)
                if ((err = sk_vstate_exists(r, k.b[b].stock, &stock_exists, errstr,
                                            errstr_size)) != SK_OK)
                        return err;
        if (!stock_exists &&
            (err = could_have_sales(conf, db, r, &k, &row,
                                    wait_ms > 0 ? wait_ms : 2 * conf->kafka_delivery_timeout_ms,
                                    &sales, errstr, errstr_size)) != SK_OK)
                return err;
        if (!stock_exists && sales) {
                /* Redis lost this voucher's stock after sales may have begun: a fresh SET
                 * would re-admit units still in flight. Rebuild instead (DESIGN.md 8). */
                rep->rebuilt = 1;
                return rebuild_locked(conf, db, r, lk, voucher_id, wait_ms, rep, errstr,
                                      errstr_size);
        }
        err = copy_state(conf, db, r, lk, &k, voucher_id, 0, &row, &buyers, &sold_down, cur,
                         sizeof(cur), errstr, errstr_size);
        if (err == SK_OK && sold_down) {
                sk_seterr(errstr, errstr_size,
                          "refusing to overwrite Redis stock %s of voucher %" PRId64
                          " (DB stock %" PRId64 " over %d bucket(s); sold down or drifted; "
                          "nothing written; use --rebuild-from-db)", cur, voucher_id, row.stock,
                          k.n);
                err = SK_EEXIST;
        }
        if (err == SK_OK) {
                rep->stock = row.stock;
                rep->users = (int64_t)(buyers.n / 2);
                rep->status = row.status;
        }
        sk_i64vec_free(&buyers);
        return err;
}

sk_err_t sk_voucher_preheat(const sk_conf_t *conf, int64_t voucher_id, int wait_ms,
                            sk_rebuild_report_t *rep, char *errstr, size_t errstr_size)
{
        sk_rebuild_report_t local;
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        sk_dblock_t *lk = NULL;
        sk_err_t err;

        if (!rep)
                rep = &local;
        rep_init(rep);
        if ((err = sk_voucher_connect(conf, &db, &r, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = sk_voucher_lock(conf, voucher_id, -1, &lk, errstr, errstr_size)) == SK_OK) {
                err = preheat_locked(conf, db, r, lk, voucher_id, wait_ms, rep, errstr,
                                     errstr_size);
                sk_dblock_close(lk);
        }
        sk_redis_close(r);
        sk_db_close(db);
        return err;
}
