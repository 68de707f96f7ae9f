/* 0218_rebuild_lock_lost.c: a rebuild whose voucher lock (a tb_lock row, DESIGN.md 16
 * (1)) is taken over stops before its next Redis write chunk. A voucher with 2,500 active
 * buyers is rebuilt (users in chunks of 1,000, sk/vstate.h); between the first and the
 * second chunk (failpoint rebuild.between_chunks=1*sleep) another holder writes the row,
 * as a second rebuild would after the row expired. Checks: the rebuild returns SK_EAGAIN
 * "voucher lock lost"; the scratch users hash holds the first chunk only (1,000 fields:
 * no chunk after the loss); the live stock key was not written; meta keeps the pause
 * (status 4: the new holder owns it now, the loser does not unpause). With the GET_LOCK
 * of before, nothing re-checked the lock: all three chunks and the stock were written.
 * The intruder waits for the first chunk to show in the scratch hash, so the test does not
 * depend on how fast the loaded host gets there. */
#include <pthread.h>
#include "sk_test.h"
#include "sk/failpoint.h"
#include "sk/rebuild.h"

#define BUYERS 2500

static char g_lock[256];

/* The scratch users hash's length, -1 without a reply (no ck_assert off the test's thread). */
static long long scratch_len(const char *tmp)
{
        redisReply *reply = sk_test_cmd(sk_test_fx.r, "HLEN %s", tmp);
        long long n = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;

        if (reply)
                freeReplyObject(reply);
        return n;
}

/* During the failpoint's sleep: another holder has the row. It waits for the first chunk to
 * be in the scratch hash (the rebuild is then inside the 2.5 s sleep), not for a fixed time:
 * a fixed 1 s took the row over before the first chunk on the loaded cluster pass. */
static void *take_over(void *arg)
{
        char errstr[256];
        sk_db_t *db = sk_db_connect(&sk_test_fx.conf.mysql, 0, 5, errstr, sizeof(errstr));
        char sql[512];
        int64_t deadline = sk_mono_ms() + 60000;

        while (scratch_len(arg) < 1000 && sk_mono_ms() < deadline)
                sk_sleep_ms(20, NULL);
        if (!db)
                return NULL;
        snprintf(sql, sizeof(sql), "UPDATE tb_lock SET holder = 'intruder:1:1', until = NOW(3) + "
                 "INTERVAL 60 SECOND, seq = seq + 1 WHERE name = '%s'", g_lock);
        (void)sk_db_exec(db, sql, errstr, sizeof(errstr));
        sk_db_close(db);
        return NULL;
}

START_TEST(lost_lock_stops_before_the_next_chunk)
{
        char errstr[512] = "", stock[SK_KEY_MAX], users[SK_KEY_MAX], tmp[SK_KEY_MAX + 16];
        char meta[SK_KEY_MAX], val[64];
        sk_rebuild_report_t rep;
        int64_t vid = sk_test_voucher(&(sk_test_voucher_t){ .init_stock = BUYERS + 100,
                                                            .db_stock = 100, .stock = -1,
                                                            .db_status = 1 });
        pthread_t th;
        sk_err_t err;

        sk_test_key(stock, vid, SK_KEY_STOCK);
        sk_test_key(users, vid, SK_KEY_USERS);
        sk_test_key(meta, vid, SK_KEY_META);
        snprintf(tmp, sizeof(tmp), "%s:rebuild", users);
        sk_test_exec("INSERT INTO tb_voucher_order (id, user_id, voucher_id, trace_id)"
                     " SELECT seq, seq, %" PRId64 ", 1000000000 + seq FROM seq_1_to_%d", vid, BUYERS);
        sk_voucher_lock_name(g_lock, sizeof(g_lock), &sk_test_fx.conf, vid);

        ck_assert_int_eq(sk_failpoint_setup("rebuild.between_chunks=1*sleep(2500)", errstr,
                                            sizeof(errstr)), 0);
        ck_assert_int_eq(pthread_create(&th, NULL, take_over, tmp), 0);
        err = sk_rebuild_voucher(&sk_test_fx.conf, vid, 5000, &rep, errstr, sizeof(errstr));
        pthread_join(th, NULL);
        ck_assert_int_eq(sk_failpoint_setup(NULL, errstr + 256, 256), 0);
        fprintf(stderr, "rebuild: %d %s\n", err, errstr);
        ck_assert_msg(err == SK_EAGAIN && strstr(errstr, "lock"), "%d %s", err, errstr);
        ck_assert_int_eq(sk_test_int_cmd("HLEN", tmp), 1000);   /* the first chunk only */
        ck_assert_int_eq(sk_test_int_cmd("EXISTS", stock), 0);  /* never set */
        sk_test_get_str(meta, "status", val, sizeof(val));
        ck_assert_str_eq(val, "4");                             /* the pause stays */
        ck_assert_int_eq(sk_test_i64("SELECT holder = 'intruder:1:1' FROM tb_lock WHERE name = '%s'",
                                     g_lock), 1);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("0218_rebuild_lock_lost");
        TCase *tc = tcase_create("rebuild");
        int rc;

        sk_test_fix_setup("rebuild_lost", &(sk_test_fix_opts_t){ .partitions = 2,
                                                                 .delivery_timeout_ms = 2000,
                                                                 .lock_wait_s = 5 });
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, lost_lock_stops_before_the_next_chunk);
        suite_add_tcase(s, tc);
        rc = sk_test_run(s);
        sk_test_fix_teardown();
        return rc;
}
