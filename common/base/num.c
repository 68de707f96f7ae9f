/* num.c: whole base-10 numbers within a range (sk/num.h), for configuration values,
 * URL ports and database columns read as text. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "sk/num.h"

int sk_parse_long(const char *s, long min, long max, long *out)
{
        char *end;
        long v;

        if (!s || !*s || isspace((unsigned char)*s))
                return -1;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -1;
        *out = v;
        return 0;
}

int sk_parse_int(const char *s, long min, long max, int *out)
{
        long v;

        if (min < -2147483647L - 1)
                min = -2147483647L - 1;
        if (max > 2147483647L)
                max = 2147483647L;
        if (sk_parse_long(s, min, max, &v) != 0)
                return -1;
        *out = (int)v;
        return 0;
}
