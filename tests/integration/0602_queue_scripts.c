/* 0602_queue_scripts.c: the waiting room's scripts against the real Redis (DESIGN.md 4
 * `{q:ID}`, 18, invariant 8), through sk/queue_room.h:
 *   - two "fronts" (two connections) advance one room at once, one with fresh stock
 *     readings, one with older readings of more units: the newest reading wins, positions
 *     are admitted in order and never past the window of the accepted reading;
 *   - the pre-queue: no position before begin, ranks 1..n after it, a later joiner n+1;
 *     a join before the pre-queue opens is NOTOPEN and writes nothing;
 *   - the used bit: set once (a second set is USED), cleared after a 503 (set again OK),
 *     a token of another generation is OTHERGEN;
 *   - a use counts against the stock only from a reading taken after its purchase was
 *     answered (done), or after its bound: a reading between the bit and the deduct
 *     admits nothing for it (invariant 8);
 *   - every key the scripts create carries the expiry E. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk_test.h"
#include "sk/clock.h"
#include "sk/queue.h"
#include "sk/queue_room.h"
#include "sk/redis.h"

static sk_qroom_t room_of(int64_t vid, int64_t begin_ms, int pct)
{
        return (sk_qroom_t){ .prefix = sk_test_fx.conf.redis_prefix, .voucher_id = vid,
                             .begin_ms = begin_ms, .end_ms = sk_now_ms() + 3600000,
                             .conf = { .mode = 1, .open_s = 600, .ttl_s = 60, .overbook_pct = pct },
                             .expire_at_ms = sk_now_ms() + 3600000 + 86400000 };
}

static void join(sk_redis_t *r, const sk_qroom_t *room, int64_t uid, sk_qroom_view_t *v)
{
        char errstr[256];

        ck_assert_msg(sk_qroom_join(r, room, uid, 0, v, errstr, sizeof(errstr)) == SK_OK,
                      "join: %s", errstr);
}

typedef struct adv_arg {
        const sk_qroom_t *room;
        int64_t units, read_ms;         /* read_ms 0: Redis time now (fresh) */
        int rounds;
        int64_t max_up_to;
} adv_arg_t;

static void *advancer(void *p)
{
        adv_arg_t *a = p;
        char errstr[256];
        sk_redis_t *r = sk_test_redis(&sk_test_fx.conf);

        for (int i = 0; i < a->rounds; i++) {
                sk_qroom_adv_t adv;
                int64_t t = a->read_ms ? a->read_ms : sk_now_ms();

                ck_assert_msg(sk_qroom_advance(r, a->room, a->units, t, -1, 0, 0, &adv, errstr,
                                               sizeof(errstr)) == SK_OK, "advance: %s", errstr);
                if (adv.up_to > a->max_up_to)
                        a->max_up_to = adv.up_to;
        }
        sk_redis_close(r);
        return NULL;
}

START_TEST(two_fronts_newest_reading_wins)
{
        sk_qroom_t room = room_of(9001, sk_now_ms() - 1000, 100);
        sk_qroom_view_t v;
        char errstr[256];
        sk_qroom_adv_t adv;
        pthread_t ta, tb;
        adv_arg_t fresh = { .room = &room, .units = 5, .rounds = 200 };
        adv_arg_t stale = { .room = &room, .units = 50, .read_ms = 1, .rounds = 200 };

        for (int64_t u = 1; u <= 20; u++) {
                join(sk_test_fx.r, &room, 1000 + u, &v);
                ck_assert_int_eq(v.position, u);        /* after begin: arrival order */
        }
        /* the first reading, then both fronts at once: the stale one never wins again */
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 5, sk_now_ms(), -1, 0, 0, &adv, errstr,
                                   sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.up_to, 5);
        ck_assert(pthread_create(&ta, NULL, advancer, &fresh) == 0);
        ck_assert(pthread_create(&tb, NULL, advancer, &stale) == 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        ck_assert_int_eq(fresh.max_up_to, 5);
        ck_assert_int_eq(stale.max_up_to, 5);     /* never past the window of 5 units */
        /* a newer reading of fewer units: nothing more, live stays 5 > window 2 */
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 2, sk_now_ms() + 1000, -1, 0, 0, &adv,
                                   errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.window, 2);
        ck_assert_int_eq(adv.up_to, 5);
        ck_assert_int_eq(adv.live, 5);
        /* admitted exactly positions 1..5 */
        for (int64_t u = 1; u <= 20; u++) {
                ck_assert(sk_qroom_poll(sk_test_fx.r, &room, 1000 + u, &v, errstr, sizeof(errstr)) == SK_OK);
                ck_assert_int_eq(sk_qroom_state(&v, 60, room.end_ms, NULL) == SK_QSTATE_ADMITTED, u <= 5);
        }
}
END_TEST

START_TEST(prequeue_ranks_after_begin)
{
        sk_qroom_t room = room_of(9002, sk_now_ms() + 1500, 100);
        sk_qroom_view_t v;
        char errstr[256];
        int seen[4] = { 0 };

        for (int64_t u = 1; u <= 3; u++) {
                join(sk_test_fx.r, &room, u, &v);
                ck_assert_int_eq(v.begun, 0);
                ck_assert_int_eq(v.position, 0);
                ck_assert_int_eq(sk_qroom_state(&v, 60, room.end_ms, NULL), SK_QSTATE_PREQUEUE);
        }
        ck_assert_int_eq(v.npre, 3);
        while (sk_now_ms() < room.begin_ms + 50)
                sk_sleep_ms(50, NULL);
        join(sk_test_fx.r, &room, 4, &v);
        ck_assert_int_eq(v.begun, 1);
        ck_assert_int_eq(v.position, 4);
        for (int64_t u = 1; u <= 3; u++) {
                ck_assert(sk_qroom_poll(sk_test_fx.r, &room, u, &v, errstr, sizeof(errstr)) == SK_OK);
                ck_assert(v.position >= 1 && v.position <= 3);
                ck_assert_int_eq(seen[v.position], 0);
                seen[v.position] = 1;
        }
        ck_assert(sk_qroom_poll(sk_test_fx.r, &room, 77, &v, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(v.tag, SK_QVIEW_NOTMEMBER);
        /* before the pre-queue opens (Redis time): NOTOPEN, nothing written */
        room = room_of(9004, sk_now_ms() + 700000, 100);
        join(sk_test_fx.r, &room, 1, &v);
        ck_assert_int_eq(v.tag, SK_QVIEW_NOTOPEN);
        ck_assert(sk_qroom_poll(sk_test_fx.r, &room, 1, &v, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(v.tag, SK_QVIEW_NOROOM);
}
END_TEST

START_TEST(used_bit_once_and_expiry)
{
        sk_qroom_t room = room_of(9003, sk_now_ms() - 1000, 100);
        sk_qroom_view_t v;
        sk_qroom_adv_t adv;
        sk_quse_t res;
        char errstr[256], key[SK_QUEUE_KEY_MAX];
        const char *kinds[] = { "state", "post", "ticks", "used" };

        join(sk_test_fx.r, &room, 5, &v);
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 3, sk_now_ms(), 3, 0, 0, &adv, errstr,
                                   sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.up_to, 1);
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 1, 1, &res, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(res, SK_QUSE_OK);
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 1, 1, &res, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(res, SK_QUSE_USED);
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 1, 0, &res, errstr, sizeof(errstr)) == SK_OK);
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 1, 1, &res, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(res, SK_QUSE_OK);
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, "abc", 1, 1, &res, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(res, SK_QUSE_OTHERGEN);
        ck_assert(sk_qroom_poll(sk_test_fx.r, &room, 5, &v, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(sk_qroom_state(&v, 60, room.end_ms, NULL), SK_QSTATE_USED);
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                redisReply *rep;

                sk_queue_key(key, sizeof(key), room.prefix, room.voucher_id, kinds[i]);
                rep = sk_test_cmd(sk_test_fx.r, "PEXPIRETIME %s", key);
                ck_assert_ptr_nonnull(rep);
                ck_assert_msg(rep->integer == room.expire_at_ms, "%s: PEXPIRETIME %lld, want %lld",
                              kinds[i], (long long)rep->integer, (long long)room.expire_at_ms);
                freeReplyObject(rep);
        }
}
END_TEST

/* Invariant 8 (the bug of 0606 under ASan): the front sets the used bit, then sends the
 * deduct; a stock reading taken in between still shows the unit. Such a reading must not
 * admit a position for it: the use counts against the stock only from a reading taken
 * after the purchase was answered ("done"), at the latest after the bound. */
START_TEST(use_counts_once_its_deduct_shows)
{
        sk_qroom_t room = room_of(9004, sk_now_ms() - 1000, 100);
        sk_qroom_view_t v;
        sk_qroom_adv_t adv;
        sk_quse_t res;
        char errstr[256];
        int64_t t0 = sk_now_ms();

        room.use_bound_ms = 600000;
        join(sk_test_fx.r, &room, 1, &v);
        join(sk_test_fx.r, &room, 2, &v);
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 1, t0, -1, 0, 0, &adv, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.up_to, 1);
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 1, SK_QUSE_SET, &res, errstr,
                               sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(res, SK_QUSE_OK);
        /* a reading taken after the used bit, before the deduct: 1 unit still shows */
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 1, t0 + 1000, -1, 0, 0, &adv, errstr,
                                   sizeof(errstr)) == SK_OK);
        ck_assert_msg(adv.up_to == 1, "position 2 admitted on a reading that did not show the deduct (up_to %lld)",
                      (long long)adv.up_to);
        /* the purchase answered (202): its deduct applied; the next reading shows 0 units */
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 1, SK_QUSE_DONE, &res, errstr,
                               sizeof(errstr)) == SK_OK);
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 0, t0 + 2000, -1, 0, 0, &adv, errstr,
                                   sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.up_to, 1);
        ck_assert(sk_qroom_poll(sk_test_fx.r, &room, 2, &v, errstr, sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(sk_qroom_state(&v, 60, room.end_ms, NULL), SK_QSTATE_SOLD_OUT);
        /* the unit comes back (a FAILED purchase's rollback): position 2 admitted */
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 1, t0 + 3000, -1, 0, 0, &adv, errstr,
                                   sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.up_to, 2);
        /* a use never marked done counts from its bound on (a front that died): with the
         * bound past, a reading of 1 unit admits position 3 */
        join(sk_test_fx.r, &room, 3, &v);
        room.use_bound_ms = 1;
        ck_assert(sk_qroom_use(sk_test_fx.r, &room, adv.generation, 2, SK_QUSE_SET, &res, errstr,
                               sizeof(errstr)) == SK_OK);
        sk_sleep_ms(5, NULL);
        ck_assert(sk_qroom_advance(sk_test_fx.r, &room, 1, t0 + 4000, -1, 0, 0, &adv, errstr,
                                   sizeof(errstr)) == SK_OK);
        ck_assert_int_eq(adv.up_to, 3);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("queue_scripts", &(sk_test_fix_opts_t){ .redis_only = 1 });
}

int main(void)
{
        Suite *s = suite_create("queue_scripts");
        TCase *tc = tcase_create("queue");

        tcase_add_checked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, two_fronts_newest_reading_wins);
        tcase_add_test(tc, prequeue_ranks_after_begin);
        tcase_add_test(tc, used_bit_once_and_expiry);
        tcase_add_test(tc, use_counts_once_its_deduct_shows);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
