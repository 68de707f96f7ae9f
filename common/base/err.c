/* err.c: names of the sk_err_t codes and the errstr helper (STYLE.md 4).
 * Pure functions: no logging, no allocation, thread-safe. */
#include <stdarg.h>
#include <stdio.h>

#include "sk/err.h"

const char *sk_err2str(sk_err_t err)
{
        switch (err) {
        case SK_OK:        return "ok";
        case SK_EINVAL:    return "invalid";
        case SK_EAGAIN:    return "transient";
        case SK_ENOMEM:    return "no_memory";
        case SK_EKAFKA:    return "kafka";
        case SK_EREDIS:    return "redis";
        case SK_EDB:       return "db";
        case SK_ENOTFOUND: return "not_found";
        case SK_EEXIST:    return "exists";
        case SK_EUNKNOWN:  return "unknown_outcome";
        case SK_ESTOP:     return "stopped";
        case SK_EFAIL:     return "failpoint";
        }
        return "unknown_error";
}

void sk_seterr(char *errstr, size_t errstr_size, const char *fmt, ...)
{
        va_list ap;

        if (!errstr || errstr_size == 0)
                return;
        va_start(ap, fmt);
        /* vsnprintf always NUL-terminates when size > 0 and truncates silently. */
        if (vsnprintf(errstr, errstr_size, fmt, ap) < 0)
                errstr[0] = '\0';
        va_end(ap);
}
