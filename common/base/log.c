/* log.c: one key=value line per event on stderr (STYLE.md 7):
 *   ts=2026-11-29T17:21:09.123Z lvl=warn svc=consumer event=db_retry partition=3 ...
 * The line is formatted into a stack buffer and written with a single write(2), so lines
 * from different threads never interleave (POSIX: writes up to PIPE_BUF to a pipe are
 * atomic; on a file or terminal one write per line is the best available). Lines longer
 * than the buffer are truncated and end with "..." before the newline.
 * It does not filter secrets: callers never pass passwords (conf masks them). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sk/log.h"

#define LOG_LINE_MAX 4096

int sk_log_level = SK_INFO;
static const char *g_svc = "seckill";

void sk_log_init(const char *svc)
{
        if (svc && *svc)
                g_svc = svc;
}

int sk_log_parse_level(const char *s, int *out)
{
        static const char *const names[] = { "debug", "info", "warn", "error" };
        int i;

        if (!s)
                return -1;
        for (i = 0; i < 4; i++) {
                if (strcmp(s, names[i]) == 0) {
                        *out = i;
                        return 0;
                }
        }
        if (strcmp(s, "warning") == 0) {
                *out = SK_WARN;
                return 0;
        }
        return -1;
}

static const char *level_name(int lvl)
{
        switch (lvl) {
        case SK_DEBUG: return "debug";
        case SK_INFO:  return "info";
        case SK_WARN:  return "warn";
        case SK_ERROR: return "error";
        }
        return lvl < SK_DEBUG ? "debug" : "error";
}

void sk_log_emit(int lvl, const char *event, const char *fmt, ...)
{
        char line[LOG_LINE_MAX];
        struct timespec ts;
        struct tm tm;
        size_t off = 0;
        int n;
        va_list ap;

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof(line),
                     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ lvl=%s svc=%s event=%s",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000L, level_name(lvl), g_svc,
                     event ? event : "-");
        if (n < 0)
                return;
        off = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;

        if (fmt && *fmt && off < sizeof(line) - 2) {
                line[off++] = ' ';
                va_start(ap, fmt);
                n = vsnprintf(line + off, sizeof(line) - off, fmt, ap);
                va_end(ap);
                if (n < 0)
                        n = 0;
                if ((size_t)n >= sizeof(line) - off) {
                        /* Truncated: mark it so a reader knows the line is incomplete. */
                        off = sizeof(line) - 5;
                        memcpy(line + off, "...", 3);
                        off += 3;
                } else {
                        off += (size_t)n;
                }
        }
        /* Strip any newline the caller embedded so one event stays one line. */
        for (size_t i = 0; i < off; i++)
                if (line[i] == '\n' || line[i] == '\r')
                        line[i] = ' ';
        line[off++] = '\n';

        {
                const char *p = line;
                size_t left = off;
                int saved = errno;
                while (left > 0) {
                        ssize_t w = write(STDERR_FILENO, p, left);
                        if (w < 0) {
                                if (errno == EINTR)
                                        continue;
                                break;
                        }
                        p += w;
                        left -= (size_t)w;
                }
                errno = saved;
        }
}
