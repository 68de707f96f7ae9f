/* check_crc16.c: CRC-16/XMODEM and Redis Cluster key slots against the Redis Cluster
 * specification's test vectors and hash-tag rules (DESIGN.md 4, 4b). */
#include <stdio.h>
#include <string.h>

#include "sk_test.h"
#include "sk/crc16.h"

static int slot(const char *k)
{
        return sk_key_slot(k, strlen(k));
}

START_TEST(crc16_vectors)
{
        /* The specification's check value of CRC-16/XMODEM (CCITT). */
        ck_assert_uint_eq(sk_crc16("123456789", 9), 0x31C3);
        ck_assert_uint_eq(sk_crc16("", 0), 0);
        ck_assert_uint_eq(sk_crc16("A", 1), 0x58E5);
        ck_assert_int_eq(slot("123456789"), 0x31C3 & 16383);
        /* CLUSTER KEYSLOT values of a real Redis 7 cluster. */
        ck_assert_int_eq(slot("foo"), 12182);
        ck_assert_int_eq(slot("bar"), 5061);
        ck_assert_int_eq(slot("hello"), 866);
        ck_assert_int_eq(slot("somekey"), 11058);
        ck_assert_int_eq(slot("{user1000}.following"), 3443);
        ck_assert_int_eq(slot("foo{}{bar}"), 8363);
        ck_assert_int_eq(slot("foo{{bar}}zap"), 4015);
}
END_TEST

START_TEST(hash_tags)
{
        /* {user1000}: both keys hash "user1000". */
        ck_assert_int_eq(slot("{user1000}.following"), slot("{user1000}.followers"));
        ck_assert_int_eq(slot("{user1000}.following"), slot("user1000"));
        /* foo{}{bar}: an empty tag means the whole key is hashed. */
        ck_assert_int_eq(slot("foo{}{bar}"), sk_crc16("foo{}{bar}", 10) & 16383);
        ck_assert_int_ne(slot("foo{}{bar}"), slot("bar"));
        /* foo{{bar}}zap: the tag is "{bar" (first '{', then the first '}'). */
        ck_assert_int_eq(slot("foo{{bar}}zap"), slot("{bar"));
        /* foo{bar}{zap}: only the first tag counts. */
        ck_assert_int_eq(slot("foo{bar}{zap}"), slot("bar"));
        /* No closing brace: the whole key. */
        ck_assert_int_eq(slot("foo{bar"), sk_crc16("foo{bar", 7) & 16383);
        /* The project's keys: all keys of one bucket share one slot (DESIGN.md 4). */
        ck_assert_int_eq(slot("seckill:{v:42:0}:meta"), slot("seckill:{v:42:0}:trace"));
        ck_assert_int_eq(slot("seckill:{v:42:0}:stock"), slot("v:42:0"));
        /* Binary-safe: a NUL inside the key is hashed. */
        ck_assert_int_eq(sk_key_slot("a\0b", 3), sk_crc16("a\0b", 3) & 16383);
        ck_assert_int_ne(sk_key_slot("a\0b", 3), sk_key_slot("a", 1));
}
END_TEST

START_TEST(slot_range)
{
        char k[32];

        for (int i = 0; i < 5000; i++) {
                int n = snprintf(k, sizeof(k), "key:%d", i);
                int s = sk_key_slot(k, (size_t)n);
                ck_assert_int_ge(s, 0);
                ck_assert_int_lt(s, SK_CLUSTER_SLOTS);
        }
}
END_TEST

static Suite *crc16_suite(void)
{
        Suite *s = suite_create("crc16");
        TCase *tc = tcase_create("crc16");

        tcase_add_test(tc, crc16_vectors);
        tcase_add_test(tc, hash_tags);
        tcase_add_test(tc, slot_range);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(crc16_suite());
}
