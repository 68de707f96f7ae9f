/* check_json_strict.c: sk/json_strict.h, signed JSON parsed strictly (DESIGN.md 15
 * "Hardening rules"): the payment callback body and the JWT segments. A member name
 * used twice (top level or nested), a NUL byte, a \u0000 escape, bytes before or after
 * the object and a non-object are refused with a reason; white space around the object
 * and distinct names are accepted. No network. */
#include <string.h>

#include "sk_test.h"
#include "sk/json_strict.h"

static const char *refusal(const char *text, size_t len)
{
        const char *why = NULL;
        cJSON *j = sk_json_strict_object(text, len, &why);

        cJSON_Delete(j);
        return j ? NULL : why;
}

#define REFUSED(lit) ck_assert_ptr_nonnull(refusal(lit, sizeof(lit) - 1))
#define ACCEPTED(lit) ck_assert_ptr_null(refusal(lit, sizeof(lit) - 1))

START_TEST(strict_object_rules)
{
        ACCEPTED("{\"a\":\"1\",\"b\":\"2\"}");
        ACCEPTED(" \r\n{\"a\":{\"b\":1,\"c\":[{\"d\":1},{\"d\":2}]}}\n");
        ACCEPTED("{\"a\":\"\\u0041\"}");
        ck_assert_str_eq(refusal("{\"a\":\"1\",\"a\":\"2\"}", 17), "a member name used twice");
        REFUSED("{\"a\":{\"b\":1,\"b\":2}}");
        REFUSED("{\"a\":[{\"b\":1,\"b\":2}]}");
        REFUSED("{\"a\":\"1\",\"\\u0061\":\"2\"}");        /* the same name once decoded */
        ck_assert_str_eq(refusal("{\"a\":\"7\\u00001\"}", 15), "NUL in the JSON document");
        REFUSED("{\"a\":\"7\0001\"}");
        ck_assert_str_eq(refusal("{\"a\":\"1\"}x", 10), "bytes after the JSON object");
        REFUSED("{\"a\":\"1\"}{}");
        REFUSED("{\"a\":\"1\"} ,");
        REFUSED("\xef\xbb\xbf{\"a\":\"1\"}");               /* a byte-order mark before */
        REFUSED("[1]");
        REFUSED("\"s\"");
        REFUSED("");
        REFUSED("{\"a\":");
        /* The length bounds the document: bytes past it are never read. */
        ck_assert_ptr_null(refusal("{\"a\":\"1\"}garbage", 9));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("json_strict");
        TCase *tc = tcase_create("json_strict");

        tcase_add_test(tc, strict_object_rules);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
