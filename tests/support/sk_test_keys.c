/* sk_test_keys.c: key sets for the unit tests of the signed texts (sk_test_keys.h): parse
 * a test's keys text with its kind's own parser, failing the test on an error.
 * What it does not do: write files (the reload tests write their own). */
#include <string.h>

#include "sk_test.h"

sk_keyfile_set_t *sk_test_keys(const sk_keyfile_kind_t *kind, const char *text)
{
        char err[256] = "";
        sk_keyfile_set_t *k = sk_keyfile_set_parse(kind, text, strlen(text), err, sizeof(err));

        ck_assert_msg(k != NULL, "parse: %s", err);
        return k;
}
