/* timeparse.c: the times of `seckill-admin voucher create --begin/--end` (sk/timeparse.h):
 * epoch seconds or ISO-8601 with a zone, to ms since the Unix epoch (UTC). Pure: no
 * locale, no TZ, no libc time conversion (timegm is not in C11/POSIX and mktime reads
 * the local zone), so the result never depends on the machine. */
#include <stdint.h>
#include <string.h>

#include "sk/num.h"
#include "sk/err.h"
#include "sk/timeparse.h"

/* n decimal digits at *p into *v; advances *p. */
static int digits(const char **p, int n, int *v)
{
        int x = 0;
        for (int i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return -1;
                x = x * 10 + (c - '0');
        }
        *p += n;
        *v = x;
        return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
        int64_t era, yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = y - era * 400;
        doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
        static const int dm[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return m == 2 ? 28 + leap : dm[m - 1];
}

/* Fraction after '.' or ',' at *p (1..9 digits, kept to ms) into *ms. */
static int fraction(const char **p, int *ms)
{
        int nd = 0;

        *ms = 0;
        while (**p >= '0' && **p <= '9') {
                if (nd < 3)
                        *ms = *ms * 10 + (**p - '0');
                nd++;
                (*p)++;
        }
        if (nd == 0 || nd > 9)
                return -1;
        for (; nd < 3; nd++)
                *ms *= 10;
        return 0;
}

/* The zone at @p p ("Z", "+HH", "+HHMM", "+HH:MM", "-..."), the whole rest of the
 * string, into *off_s (seconds east of UTC). */
static int zone(const char *p, int *off_s)
{
        int sign, oh, om = 0;

        if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
                *off_s = 0;
                return 0;
        }
        if (*p != '+' && *p != '-')
                return -1;
        sign = *p++ == '-' ? -1 : 1;
        if (digits(&p, 2, &oh))
                return -1;
        if (*p == ':')
                p++;
        if (*p && digits(&p, 2, &om))
                return -1;
        if (*p != '\0' || oh > 23 || om > 59)
                return -1;
        *off_s = sign * (oh * 3600 + om * 60);
        return 0;
}

/* Epoch seconds, up to 9999-12-31T23:59:59Z. */
static int epoch_seconds(const char *s, int64_t *out_ms, char *errstr, size_t errstr_size)
{
        long v;

        if (strlen(s) > 12 || sk_parse_long(s, 0, 253402300799L, &v) != 0) {
                sk_seterr(errstr, errstr_size, "\"%s\": epoch seconds out of range", s);
                return -1;
        }
        *out_ms = (int64_t)v * 1000;
        return 0;
}

#define BAD_FORMAT "\"%s\" is not epoch seconds or ISO-8601 with a zone " \
                   "(2026-11-29T18:00:00Z, 2026-11-29T18:00:00+08:00)"

int sk_time_parse(const char *s, int64_t *out_ms, char *errstr, size_t errstr_size)
{
        const char *p = s;
        int y, mo, d, h, mi, sec = 0, ms = 0, off_s = 0;
        int64_t t_s;

        if (!s || !*s) {
                sk_seterr(errstr, errstr_size, "empty time");
                return -1;
        }
        if (strspn(s, "0123456789") == strlen(s))
                return epoch_seconds(s, out_ms, errstr, errstr_size);
        if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
            digits(&p, 2, &d))
                goto bad;
        if (*p != 'T' && *p != 't' && *p != ' ') {
                sk_seterr(errstr, errstr_size, "\"%s\": needs a time of day and a zone, "
                          "e.g. 2026-11-29T18:00:00Z", s);
                return -1;
        }
        p++;
        if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
                goto bad;
        if (*p == ':') {
                p++;
                if (digits(&p, 2, &sec))
                        goto bad;
                if ((*p == '.' || *p == ',') && (p++, fraction(&p, &ms) != 0))
                        goto bad;
        }
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 ||
            sec > 59) {
                sk_seterr(errstr, errstr_size, "\"%s\": date or time out of range", s);
                return -1;
        }
        if (*p == '\0') {
                sk_seterr(errstr, errstr_size, "\"%s\" has no zone and is ambiguous: add Z "
                          "(UTC) or an offset such as +08:00", s);
                return -1;
        }
        if (zone(p, &off_s) != 0)
                goto bad;
        t_s = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off_s;
        if (t_s < 0) {
                sk_seterr(errstr, errstr_size, "\"%s\" is before 1970", s);
                return -1;
        }
        *out_ms = t_s * 1000 + ms;
        return 0;
bad:
        sk_seterr(errstr, errstr_size, BAD_FORMAT, s);
        return -1;
}
