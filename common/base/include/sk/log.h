/* sk/log.h: one key=value line per event on stderr:
 *   ts=2026-11-29T17:21:09.123Z lvl=warn svc=consumer event=db_retry partition=3 ...
 * The level is checked inside the macro, before any formatting (redis, kcat).
 * Thread-safe: each line is written with a single write(2). Not async-signal-safe. */
#pragma once
#include <stdarg.h>

typedef enum { SK_DEBUG = 0, SK_INFO = 1, SK_WARN = 2, SK_ERROR = 3 } sk_log_level_t;

extern int sk_log_level; /* lines below this level are skipped; default SK_INFO */

/** @brief Set the service name printed as svc= (borrowed; must outlive logging). */
void sk_log_init(const char *svc);
/** @brief Parse "debug|info|warn|error" into *out. @returns 0, or -1 if unknown. */
int sk_log_parse_level(const char *s, int *out);
/** @brief Emit one line; use SK_LOG, which checks the level first.
 *  @p event is a stable snake_case name; @p fmt formats the key=value rest. */
void sk_log_emit(int lvl, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#define SK_LOG(lvl, event, ...) do {                                    \
                if ((lvl) >= sk_log_level)                              \
                        sk_log_emit((lvl), (event), __VA_ARGS__);       \
        } while (0)
