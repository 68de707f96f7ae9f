/* conf_secret.c: secrets read from files (DESIGN.md 2: "a secret may come from a URL, a
 * flag, the environment or a file (?password-file=, the *_FILE variables); its value is
 * never printed"). One reader serves both: the password of ?password-file=PATH and the
 * whole value of a VAR_FILE variable (SECKILL_MYSQL_URL_FILE, SECKILL_REDIS_URL_FILE).
 * Every error names the file, never its content. And the masks: a URL's password, the
 * librdkafka properties that hold secrets. Blocking file I/O; thread-safe on
 * distinct buffers. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sk/conf.h"
#include "sk/err.h"
#include "conf_int.h"

int sk__read_secret_file(const char *path, const char *what, char *dst, size_t dst_size,
                         char *errstr, size_t errstr_size)
{
        char buf[1026];         /* dst_size + 2 at most: a longer file is too long */
        size_t n, cap = dst_size + 2 < sizeof(buf) ? dst_size + 2 : sizeof(buf);
        FILE *f;
        int rc = -1;

        if (dst_size < 2 || dst_size + 2 > sizeof(buf)) {
                sk_seterr(errstr, errstr_size, "%s: internal error (buffer size)", path);
                return -1;
        }
        if (!(f = fopen(path, "rb"))) {
                sk_seterr(errstr, errstr_size, "%s: %s", path, strerror(errno));
                return -1;
        }
        n = fread(buf, 1, cap, f);
        if (ferror(f)) {
                sk_seterr(errstr, errstr_size, "%s: read error", path);
                goto done;
        }
        if (n == cap && fgetc(f) != EOF)
                n = cap + 1;    /* too long, whatever its end */
        if (n > 0 && n <= cap && buf[n - 1] == '\n') {
                n--;
                if (n > 0 && buf[n - 1] == '\r')
                        n--;
        }
        if (n == 0 || n >= dst_size) {
                sk_seterr(errstr, errstr_size, "%s: the %s must be 1..%zu bytes%s", path, what,
                          dst_size - 1, n == 0 ? " (the file is empty)" : "");
                goto done;
        }
        if (memchr(buf, '\0', n) || memchr(buf, '\n', n) || memchr(buf, '\r', n)) {
                sk_seterr(errstr, errstr_size, "%s: NUL, CR or LF inside the %s", path, what);
                goto done;
        }
        memcpy(dst, buf, n);
        dst[n] = '\0';
        rc = 0;
done:
        memset(buf, 0, sizeof(buf));
        fclose(f);
        return rc;
}

int sk_mysql_url_read_password_file(sk_mysql_url_t *m, char *errstr, size_t errstr_size)
{
        char err[400];

        if (!m->password_file[0])
                return 0;
        if (sk__read_secret_file(m->password_file, "password", m->password, sizeof(m->password),
                                 err, sizeof(err)) != 0) {
                sk_seterr(errstr, errstr_size, "password-file %s", err);
                return -1;
        }
        return 0;
}

/* Copies @p url into @p dst (conf_int.h) with the secret part of its userinfo replaced by ***
 * (DESIGN.md 15: no secret in any log line, error or --print-config, whatever its
 * characters). The userinfo ends at the LAST '@' after "://": a password may hold '/',
 * '?', '#', ':' or '@', so the first '/' is no bound. The user (before the first ':')
 * stays readable; a userinfo without ':' may be a bare password (redis://secret@host)
 * and is masked whole. Pure function, thread-safe. */
void sk__mask_url(const char *url, char *dst, size_t dst_size)
{
        const char *p = strstr(url, "://"), *at, *colon;

        if (!p) {
                sk__sfmt(dst, dst_size, "%s", url);
                return;
        }
        p += 3;
        at = strrchr(p, '@');
        if (!at) {
                sk__sfmt(dst, dst_size, "%s", url);
                return;
        }
        colon = memchr(p, ':', (size_t)(at - p));
        if (!colon)
                colon = p - 1;          /* "scheme://" + "***" + "@host" */
        sk__sfmt(dst, dst_size, "%.*s***%s", (int)(colon + 1 - url), url, at);
}

int sk_conf_secret_key(const char *k)
{
        static const char *const marks[] = { "password", "secret", "ssl.key", "keystore",
                                             "oauthbearer.config", "sasl.jaas", "private" };

        for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
                if (strstr(k, marks[i]))
                        return 1;
        return 0;
}
