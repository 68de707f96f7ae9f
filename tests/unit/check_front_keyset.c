/* check_front_keyset.c: producer/keyset.c, the front's reloadable key sets (DESIGN.md 15,
 * 18) with the real queue keys (sk/queue_token.h): SIGHUP installs a new file; a bad file
 * keeps the keys in force, is counted and is not read again until it changes; a changed
 * file is seen at the next recheck without a signal, an unchanged one is not re-read; a
 * reference taken before a reload stays valid after it. No network; files under /tmp. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sk_test.h"
#include "keyset.h"
#include "metrics.h"
#include "sk/queue_token.h"

#define K1 SK_TEST_QKEY1
#define K2 SK_TEST_QKEY2

static char path[64];
static sk_metric_t *reloads, *fails;

static void write_keys(const char *text)
{
        char tmp[80];
        FILE *f;

        /* written then renamed: a new inode, as an operator's tool would do */
        snprintf(tmp, sizeof(tmp), "%s.new", path);
        ck_assert_ptr_nonnull(f = fopen(tmp, "w"));
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(rename(tmp, path), 0);
}

/* The kid of the first key of the set in force ("" if none). */
static void first_kid(fr_keyset_t *ks, char out[SK_QTOKEN_KID_MAX + 1])
{
        sk_keyfile_set_t *k = fr_keyset_get(ks);
        sk_qtoken_t t = { .generation = "a1", .voucher_id = 7, .user_id = 9, .position = 1,
                          .expiry_ms = 2000000000000 };
        char tok[SK_QTOKEN_MAX + 1];

        out[0] = '\0';
        if (k && sk_qtoken_sign(k, &t, tok, sizeof(tok)) == 0)
                sscanf(tok, "v1.%16[^.]", out);
        sk_keyfile_set_free(k);
}

START_TEST(reload_rules)
{
        char err[512] = "", kid[SK_QTOKEN_KID_MAX + 1];
        fr_keyset_t ks = { .ev_loaded = "t_loaded", .ev_reloaded = "t_reloaded",
                           .ev_failed = "t_failed", .var = "SECKILL_QUEUE_KEYS_FILE",
                           .kind = &sk_qtoken_keyfile,
                           .m_reloads = &reloads, .m_failed = &fails,
                           .mu = PTHREAD_MUTEX_INITIALIZER, .path = path };
        sk_keyfile_set_t *held;

        write_keys(K1 "\n");
        ck_assert_int_eq(fr_keyset_init(&ks, err, sizeof(err)), 0);
        first_kid(&ks, kid);
        ck_assert_str_eq(kid, "k1");
        held = fr_keyset_get(&ks);

        /* SIGHUP: the promoted key signs at once */
        write_keys(K2 "\n" K1 "\n");
        fr_keyset_tick(&ks, 1);
        first_kid(&ks, kid);
        ck_assert_str_eq(kid, "k2");
        ck_assert_int_eq(sk_metric_value(reloads), 1);
        ck_assert_uint_eq(sk_keyfile_set_count(held), 1); /* the old set, still usable */
        sk_keyfile_set_free(held);

        /* A bad file: the keys in force stay, one failure counted */
        write_keys("k3 short\n");
        ck_assert_int_eq(sk_keyfile_changed(path, &ks.seen), 1);
        ks.checked_ms -= FR_KEYSET_RECHECK_MS; /* as if 10 s had passed */
        fr_keyset_tick(&ks, 0);
        first_kid(&ks, kid);
        ck_assert_str_eq(kid, "k2");
        ck_assert_int_eq(sk_metric_value(fails), 1);
        /* ... and it is not read again while it stays as it is */
        ks.checked_ms -= FR_KEYSET_RECHECK_MS;
        fr_keyset_tick(&ks, 0);
        ck_assert_int_eq(sk_metric_value(fails), 1);

        /* A changed file without a signal: not before the recheck period, then yes */
        write_keys(K1 "\n");
        fr_keyset_tick(&ks, 0);
        first_kid(&ks, kid);
        ck_assert_str_eq(kid, "k2");
        ks.checked_ms -= FR_KEYSET_RECHECK_MS;
        fr_keyset_tick(&ks, 0);
        first_kid(&ks, kid);
        ck_assert_str_eq(kid, "k1");
        ck_assert_int_eq(sk_metric_value(reloads), 2);
        ck_assert_int_eq(fr_keyset_loaded(&ks), 1);
        fr_keyset_destroy(&ks);
        ck_assert_int_eq(fr_keyset_loaded(&ks), 0);

        /* A bad file at start is a configuration error naming the variable */
        write_keys("nothing-here\n");
        ck_assert_int_eq(fr_keyset_init(&ks, err, sizeof(err)), -1);
        ck_assert_ptr_nonnull(strstr(err, "SECKILL_QUEUE_KEYS_FILE"));
        ck_assert_int_eq(unlink(path), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("front_keyset");
        TCase *tc = tcase_create("keyset");
        sk_metrics_t *reg;

        snprintf(path, sizeof(path), "/tmp/check_front_keyset.%d", (int)getpid());
        fr_metrics_init();
        reg = fr_m.reg;
        reloads = sk_metrics_counter(reg, "t_reloads_total", NULL, "test");
        fails = sk_metrics_counter(reg, "t_fails_total", NULL, "test");
        tcase_add_test(tc, reload_rules);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
