/* sk_test_keys.h: key sets for the unit tests of the signed texts (DESIGN.md 15, 18): a
 * keys file's text the test writes, parsed as a kind of sk/keyfile.h (sk_qtoken_keyfile
 * for admission tokens and position tickets, sk_paysig_keyfile for the payment
 * signature), or the test fails; two queue keys file lines.
 * Not for production: the secrets are fixed strings. Thread-safe (no state). */
#pragma once
#include "sk/keyfile.h"

#define SK_TEST_QKEY1 "k1 first-secret-0123456789abcdef"   /* a queue keys file's line */
#define SK_TEST_QKEY2 "k2 second-secret-0123456789abcdef"

/** @brief The key set of @p kind (borrowed) from @p text (borrowed, NUL-terminated: a
 *  keys file's text); a parse error fails the test (ck_assert, the reason in the
 *  message). @returns an owned set (sk_keyfile_set_free). */
sk_keyfile_set_t *sk_test_keys(const sk_keyfile_kind_t *kind, const char *text);
