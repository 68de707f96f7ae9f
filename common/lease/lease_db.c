/* lease_db.c: the tb_worker_lease protocol (DESIGN.md 2; contract in lease_db.h, the
 * generator around it in lease.c, the table in ddl/0002_worker_lease.sql).
 *
 * Take (id X, holder H): read (holder = H, lease_until < NOW(3), mint_until M, NOW(3));
 * if free (or already ours), one conditional UPDATE that sets holder = H,
 * lease_until = NOW(3) + lease, mint_until = GREATEST(mint_until, NOW(3) + 2/3 lease)
 * WHERE worker_id = X AND (lease_until < NOW(3) OR holder = H) AND mint_until = M (a
 * compare-and-set on M: whoever took and released X in between makes it miss); then
 * read back (holder = H, mint_until U, NOW(3)). Ours: the mint window is (M, U].
 * Renew: UPDATE ... the same SET ... WHERE worker_id = X AND holder = H, then read back.
 * Free (DESIGN.md 2, 12): lease_until < NOW(3), and for a row whose role is 'front'
 * lease_until + D < NOW(3) (D = the request deadline): the early drain counts on every
 * front lease row with lease_until >= since - D, so a front's row keeps its holder while
 * the purchases it admitted may still reach Kafka. The SET writes the taker's role.
 * Times travel as ms since the epoch (TIMESTAMPDIFF, not UNIX_TIMESTAMP, which stops
 * at 2038 on MariaDB 10.x); the session is UTC (sk/db.h). Every value (holder, role,
 * ids, intervals) is a bound parameter (sk/db.h); the SQL is constant. */
#include <stdint.h>
#include <string.h>
#include "lease_db.h"
#include "sk/dblock.h"
#include "sk/clock.h"

#define TAKE_TRIES 3          /* compare-and-set attempts on one id */
#define MS(col) "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " col ") DIV 1000"
/* The "free" condition of a row (DESIGN.md 2); its one argument: grace_us(ld). */
#define FREE_COND "lease_until < NOW(3) - INTERVAL IF(role = 'front', ?, 0) MICROSECOND"
/* The raising SET shared by take and renew; its four arguments: SET_ARGS(ld). */
#define SET_CLAUSE "SET holder = ?, role = ?, lease_until = NOW(3) + INTERVAL ? MICROSECOND, " \
                   "mint_until = GREATEST(mint_until, NOW(3) + INTERVAL ? MICROSECOND)"
#define SET_ARGS(ld) SK_STR((ld)->holder), SK_STR((ld)->role), \
                     SK_I64((int64_t)(ld)->lease_ms * 1000), \
                     SK_I64((int64_t)(ld)->lease_ms * 2 / 3 * 1000)

enum { TAKE_OK, TAKE_HELD, TAKE_FAR };

void sk_lease_db_make_holder(char *out, size_t size)
{
        sk_dblock_make_holder(out, size); /* one generator: lease and lock holders never collide */
}

/* D of a front's row in microseconds (FREE_COND). */
static int64_t grace_us(const sk_lease_db_t *ld)
{
        return (ld->front_grace_ms > 0 ? ld->front_grace_ms : 0) * 1000;
}

/* Read back (holder = H, mint_until, NOW(3)) of @p id into *r's until/db_now/mono.
 * @returns SK_OK with *ours set, or the DB error. */
static sk_err_t read_back(sk_lease_db_t *ld, int id, sk_lease_read_t *r, int *ours, char *errstr,
                          size_t errstr_size)
{
        int64_t v[3];
        sk_err_t err;

        if ((err = sk_db_row1(ld->db, "SELECT holder = ?, " MS("mint_until") ", " MS("NOW(3)")
                              " FROM tb_worker_lease WHERE worker_id = ?",
                              SK_ARGS(SK_STR(ld->holder), SK_I64(id)), v, 3, NULL, errstr,
                              errstr_size)) != SK_OK)
                return err;
        r->mono_ms = sk_mono_ms();
        *ours = v[0] == 1;
        r->until_ms = v[1];
        r->db_now_ms = v[2];
        return SK_OK;
}

/* One compare-and-set attempt on @p id. *outcome: TAKE_OK (window in *r), TAKE_HELD
 * (another holder, or the compare-and-set missed), TAKE_FAR (free but its mint_until
 * is more than a lease ahead and @p skip_far). */
static sk_err_t take_once(sk_lease_db_t *ld, int id, int skip_far, sk_lease_read_t *r, int *outcome,
                          char *errstr, size_t errstr_size)
{
        int64_t v[4];
        int ours = 0;
        sk_err_t err;

        err = sk_db_row1(ld->db, "SELECT holder = ?, " FREE_COND ", " MS("mint_until") ", "
                         MS("NOW(3)") " FROM tb_worker_lease WHERE worker_id = ?",
                         SK_ARGS(SK_STR(ld->holder), SK_I64(grace_us(ld)), SK_I64(id)), v, 4,
                         NULL, errstr, errstr_size);
        if (err == SK_ENOTFOUND) {
                sk_seterr(errstr, errstr_size, "tb_worker_lease has no row for worker id %d "
                          "(run `seckill-admin db migrate`)", id);
                return SK_EDB;
        }
        if (err == SK_EDB && strstr(errstr ? errstr : "", "error 1146"))
                sk_seterr(errstr, errstr_size, "tb_worker_lease is missing (run `seckill-admin "
                          "db migrate`)");
        if (err != SK_OK)
                return err;
        *outcome = TAKE_HELD;
        if (v[0] != 1 && v[1] != 1)
                return SK_OK;
        if (skip_far && v[2] > v[3] + ld->lease_ms) {
                *outcome = TAKE_FAR;
                return SK_OK;
        }
        /* The compare-and-set on the mint_until M just read (v[2], ms). */
        if ((err = sk_db_exec_args(ld->db, "UPDATE tb_worker_lease " SET_CLAUSE
                                   " WHERE worker_id = ? AND (" FREE_COND " OR holder = ?)"
                                   " AND mint_until = '1970-01-01 00:00:00'"
                                   " + INTERVAL ? MICROSECOND",
                                   SK_ARGS(SET_ARGS(ld), SK_I64(id), SK_I64(grace_us(ld)),
                                           SK_STR(ld->holder), SK_I64(v[2] * 1000)),
                                   NULL, errstr, errstr_size)) != SK_OK)
                return err;
        if ((err = read_back(ld, id, r, &ours, errstr, errstr_size)) != SK_OK)
                return err;
        if (ours) {
                r->from_ms = v[2] + 1;
                *outcome = TAKE_OK;
        }
        return SK_OK;
}

/* Take @p id, retrying a missed compare-and-set on a row that is still free. */
static sk_err_t take_id(sk_lease_db_t *ld, int id, int skip_far, sk_lease_read_t *r, int *outcome,
                        char *errstr, size_t errstr_size)
{
        sk_err_t err = SK_OK;

        for (int i = 0; i < TAKE_TRIES; i++) {
                if ((err = take_once(ld, id, skip_far, r, outcome, errstr, errstr_size)) != SK_OK ||
                    *outcome != TAKE_HELD)
                        break;
        }
        return err;
}

/* The lowest usable id: first among the free ids whose mint_until is past (mint at
 * once), then among those whose mint_until is at most a lease ahead. *id = -1: none. */
static sk_err_t take_lowest(sk_lease_db_t *ld, sk_lease_read_t *r, int *id, char *errstr,
                            size_t errstr_size)
{
        static const char *const sql[2] = {
                "SELECT MIN(worker_id) FROM tb_worker_lease WHERE worker_id > ? AND "
                FREE_COND " AND mint_until < NOW(3)",
                "SELECT MIN(worker_id) FROM tb_worker_lease WHERE worker_id > ? AND "
                FREE_COND " AND mint_until <= NOW(3) + INTERVAL ? MICROSECOND",
        };
        sk_err_t err;

        *id = -1;
        for (int pass = 0; pass < 2; pass++) {
                int64_t after = -1, next;
                int is_null = 0, outcome;

                for (;;) {
                        /* after, D, and (pass 1 only) one lease, in microseconds. */
                        const sk_db_arg_t args[3] = { SK_I64(after), SK_I64(grace_us(ld)),
                                                      SK_I64((int64_t)ld->lease_ms * 1000) };

                        err = sk_db_i64(ld->db, sql[pass], args, pass == 0 ? 2 : 3, &next,
                                        &is_null, errstr, errstr_size);
                        if (err != SK_OK)
                                return err;
                        if (is_null)
                                break;
                        err = take_id(ld, (int)next, 1, r, &outcome, errstr, errstr_size);
                        if (err != SK_OK)
                                return err;
                        if (outcome == TAKE_OK) {
                                *id = (int)next;
                                return SK_OK;
                        }
                        after = next;
                }
        }
        return SK_OK;
}

/* Renew @p id. *ours = 0: the lease is lost. */
sk_err_t sk_lease_db_renew(sk_lease_db_t *ld, int id, sk_lease_read_t *r, int *ours, char *errstr,
                      size_t errstr_size)
{
        sk_err_t err;

        if ((err = sk_db_exec_args(ld->db, "UPDATE tb_worker_lease " SET_CLAUSE
                                   " WHERE worker_id = ? AND holder = ?",
                                   SK_ARGS(SET_ARGS(ld), SK_I64(id), SK_STR(ld->holder)), NULL,
                                   errstr, errstr_size)) != SK_OK)
                return err;
        return read_back(ld, id, r, ours, errstr, errstr_size);
}

/* Free @p id if it is still ours (mint_until stays). Errors ignored: the lease then
 * ends by itself at lease_until. */
void sk_lease_db_release(sk_lease_db_t *ld, int id, int quiet)
{
        int64_t back_ms = 1 + (quiet && ld->front_grace_ms > 0 ? ld->front_grace_ms : 0);

        (void)sk_db_exec_args(ld->db, "UPDATE tb_worker_lease SET lease_until = NOW(3) - "
                              "INTERVAL ? MICROSECOND WHERE worker_id = ? AND holder = ?",
                              SK_ARGS(SK_I64(back_ms * 1000), SK_I64(id), SK_STR(ld->holder)),
                              NULL, NULL, 0);
}

/* Take conf's id, or the lowest usable one. SK_OK with *id = -1 (reason in errstr)
 * when there is nothing to take: conf's id is held by another process, or no id is
 * usable. Other codes: DB errors. */
sk_err_t sk_lease_db_take(sk_lease_db_t *ld, sk_lease_read_t *r, int *id, char *errstr, size_t errstr_size)
{
        int outcome = TAKE_HELD;
        sk_err_t err;

        *id = -1;
        if (ld->fixed_id < 0) {
                if ((err = take_lowest(ld, r, id, errstr, errstr_size)) != SK_OK)
                        return err;
                if (*id < 0)
                        sk_seterr(errstr, errstr_size, "no usable worker id in 0..%d",
                                  1023);
                return SK_OK;
        }
        if ((err = take_id(ld, ld->fixed_id, 0, r, &outcome, errstr, errstr_size)) != SK_OK)
                return err;
        if (outcome == TAKE_OK)
                *id = ld->fixed_id;
        else
                sk_seterr(errstr, errstr_size, "worker id %d is leased by another process",
                          ld->fixed_id);
        return SK_OK;
}

