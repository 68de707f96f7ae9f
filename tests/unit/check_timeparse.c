/* check_timeparse.c: sk_time_parse (sk/timeparse.h; seckill-admin --begin/--end). Pure,
 * no network. Epoch seconds or ISO-8601 with a zone; a zone-less time is ambiguous and
 * rejected; the output is untouched on every rejection. */
#include <string.h>
#include "sk_test.h"
#include "sk/timeparse.h"

static int64_t ok_ms(const char *s)
{
        char errstr[256] = "";
        int64_t ms = -1;
        ck_assert_msg(sk_time_parse(s, &ms, errstr, sizeof(errstr)) == 0, "%s: %s", s, errstr);
        return ms;
}

static void bad(const char *s, const char *why)
{
        char errstr[256] = "";
        int64_t ms = 12345;
        ck_assert_msg(sk_time_parse(s, &ms, errstr, sizeof(errstr)) == -1, "%s accepted", s);
        ck_assert_msg(ms == 12345, "%s: output touched", s);
        if (why)
                ck_assert_msg(strstr(errstr, why) != NULL, "%s: reason \"%s\"", s, errstr);
}

START_TEST(epoch_seconds)
{
        ck_assert(ok_ms("0") == 0);
        ck_assert(ok_ms("1795975200") == INT64_C(1795975200000));
        ck_assert(ok_ms("253402300799") == INT64_C(253402300799000));
        bad("253402300800", "out of range");
        bad("-5", NULL);
        bad("", "empty");
}
END_TEST

START_TEST(iso_with_zone)
{
        /* 2026-11-29T18:00:00Z = 1795975200 */
        ck_assert(ok_ms("2026-11-29T18:00:00Z") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-29t18:00:00z") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-29 18:00:00Z") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-29T18:00Z") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-30T02:00:00+08:00") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-30T02:00:00+0800") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-30T02:00:00+08") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-29T13:00:00-05:00") == INT64_C(1795975200000));
        ck_assert(ok_ms("2026-11-29T18:00:00.5Z") == INT64_C(1795975200500));
        ck_assert(ok_ms("2026-11-29T18:00:00,123456789Z") == INT64_C(1795975200123));
        ck_assert(ok_ms("1970-01-01T00:00:00Z") == 0);
        ck_assert(ok_ms("2028-02-29T00:00:00Z") == INT64_C(1835395200000));
        ck_assert(ok_ms("2040-01-01T00:00:00.123Z") == INT64_C(2208988800123));
}
END_TEST

START_TEST(rejects)
{
        bad("2026-11-29T18:00:00", "ambiguous");
        bad("2026-11-29T18:00", "ambiguous");
        bad("2026-11-29", "time of day");
        bad("2027-02-29T00:00:00Z", "out of range");
        bad("2026-13-01T00:00:00Z", "out of range");
        bad("2026-11-29T24:00:00Z", "out of range");
        bad("2026-11-29T18:60:00Z", "out of range");
        bad("2026-11-29T18:00:60Z", "out of range");
        bad("2026-11-29T18:00:00+24:00", NULL);
        bad("2026-11-29T18:00:00Zjunk", NULL);
        bad("2026-11-29T18:00:00.Z", NULL);
        bad("2026-11-29T18:00:00 UTC", NULL);
        bad("1969-12-31T23:59:59Z", "before 1970");
        bad("26-11-29T18:00:00Z", NULL);
        bad("tomorrow", NULL);
        bad("1764439200.5", NULL);
        bad("2026-11-29T18:00:00.1234567890Z", NULL);
        bad("2026-11-29T18:00:00+08:0", NULL);
        bad("2026-11-29T18:00:00+0800x", NULL);
        bad("2026-11-29T18:00:00Z ", NULL);
        bad("2026-11-29T18:00:00z1", NULL);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("timeparse");
        TCase *tc = tcase_create("parse");

        tcase_add_test(tc, epoch_seconds);
        tcase_add_test(tc, iso_with_zone);
        tcase_add_test(tc, rejects);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
