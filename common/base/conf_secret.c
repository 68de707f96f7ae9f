/* conf_secret.c: secrets read from files (DESIGN.md 2: "a secret may come from a URL, a
 * flag, the environment or a file (?password-file=, the *_FILE variables); its value is
 * never printed"). One reader serves both: the password of ?password-file=PATH and the
 * whole value of a VAR_FILE variable (SECKILL_MYSQL_URL_FILE, SECKILL_REDIS_URL_FILE);
 * another reads the librdkafka properties file (SECKILL_KAFKA_PROPERTIES_FILE, DESIGN.md
 * 15), after checking that others cannot read it.
 * Every error names the file, never its content. And the masks: a URL's password, the
 * librdkafka properties that hold secrets. Blocking file I/O; thread-safe on
 * distinct buffers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

#define KPROPS_MAX_BYTES 65536

/* [b, e) without white space at either end. */
static void trim(const char **b, const char **e)
{
        while (*b < *e && (**b == ' ' || **b == '\t' || **b == '\r'))
                (*b)++;
        while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
                (*e)--;
}

/* The properties of the @p n bytes of @p text into @p props (@p *np of them, at most
 * SK_MAX_KAFKA_PROPS). @returns 0, or the 1-based line number that is wrong. */
static int parse_kprops(const char *text, size_t n, char props[][2][256], int *np)
{
        const char *line = text, *end = text + n;
        int lineno = 0;

        while (line < end) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                const char *le = nl ? nl : end, *kb = line, *ke, *vb, *ve = le;

                lineno++;
                trim(&kb, &ve);
                if (kb == ve || *kb == '#' || *kb == '!')
                        goto next;
                if (!(vb = memchr(kb, '=', (size_t)(ve - kb))))
                        return lineno;
                ke = vb++;
                trim(&kb, &ke);
                trim(&vb, &ve);
                if (kb == ke || (size_t)(ke - kb) >= 256 || (size_t)(ve - vb) >= 256 ||
                    memchr(kb, '\0', (size_t)(ve - kb)) || *np == SK_MAX_KAFKA_PROPS)
                        return lineno;
                memcpy(props[*np][0], kb, (size_t)(ke - kb));
                props[*np][0][ke - kb] = '\0';
                memcpy(props[*np][1], vb, (size_t)(ve - vb));
                props[*np][1][ve - vb] = '\0';
                (*np)++;
next:
                line = nl ? nl + 1 : end;
        }
        return 0;
}

int sk__read_kafka_props(const char *path, sk_conf_t *conf, char *errstr, size_t errstr_size)
{
        static char buf[KPROPS_MAX_BYTES + 1];
        static char props[SK_MAX_KAFKA_PROPS][2][256];
        struct stat st;
        ssize_t got;
        size_t n = 0;
        int fd, np = 0, bad, rc = -1;

        if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
                sk_seterr(errstr, errstr_size, "cannot be read: %s", strerror(errno));
                return -1;
        }
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                sk_seterr(errstr, errstr_size, "is not a regular file");
                goto done;
        }
        if (st.st_mode & (S_IRWXO | S_IWGRP)) {
                sk_seterr(errstr, errstr_size, "has mode %04o: others may read it or its group "
                          "may write it (chmod 0640, owner root, group seckill)",
                          (unsigned)(st.st_mode & 07777));
                goto done;
        }
        while (n < sizeof(buf) && (got = read(fd, buf + n, sizeof(buf) - n)) > 0)
                n += (size_t)got;
        if (n == sizeof(buf)) {
                sk_seterr(errstr, errstr_size, "is larger than %d bytes", KPROPS_MAX_BYTES);
                goto done;
        }
        if ((bad = parse_kprops(buf, n, props, &np)) != 0) {
                sk_seterr(errstr, errstr_size, "line %d: not key=value (each under 256 chars, at "
                          "most %d properties with -X)", bad, SK_MAX_KAFKA_PROPS);
                goto done;
        }
        if (np + conf->nkafka_props > SK_MAX_KAFKA_PROPS) {
                sk_seterr(errstr, errstr_size, "more than %d properties with -X", SK_MAX_KAFKA_PROPS);
                goto done;
        }
        /* The file's properties first: a -X of the same key, applied later, wins. */
        memmove(conf->kafka_props[np], conf->kafka_props[0],
                (size_t)conf->nkafka_props * sizeof(conf->kafka_props[0]));
        memcpy(conf->kafka_props[0], props, (size_t)np * sizeof(props[0]));
        conf->nkafka_props += np;
        rc = 0;
done:
        memset(buf, 0, sizeof(buf));
        memset(props, 0, sizeof(props));
        close(fd);
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
