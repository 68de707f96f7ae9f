/* sk/err.h: error codes shared by every module (0 = success, negative = failure),
 * and the errstr convention: a caller-supplied buffer receives the reason.
 * Thread-safe: everything here is pure. */
#pragma once
#include <stddef.h>

typedef enum {
        SK_OK      = 0,
        SK_EINVAL  = -1,  /* bad argument, config or input: retrying will not help */
        SK_EAGAIN  = -2,  /* transient (timeout, queue full, lock wait, connection lost): retry with backoff */
        SK_ENOMEM  = -3,  /* allocation failed */
        SK_EKAFKA  = -4,  /* Kafka error that is not known to be transient */
        SK_EREDIS  = -5,  /* Redis error that is not known to be transient */
        SK_EDB     = -6,  /* database error that is not known to be transient */
        SK_ENOTFOUND = -7,/* the thing asked for does not exist */
        SK_EEXIST  = -8,  /* already exists / duplicate key */
        SK_EUNKNOWN = -9, /* outcome unknown (I/O error or timeout after the request was sent) */
        SK_ESTOP   = -10, /* stopped by a signal or shutdown request */
        SK_EFAIL   = -11, /* a failpoint fired with action `error` */
} sk_err_t;

/** @brief Short static name of @p err ("ok", "invalid", ...). Never NULL. */
const char *sk_err2str(sk_err_t err);

/** @brief printf-style write of a reason into @p errstr (always NUL-terminated,
 *  truncated to @p errstr_size). NULL @p errstr or size 0 is a no-op. */
void sk_seterr(char *errstr, size_t errstr_size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
