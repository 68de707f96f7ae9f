/* keyfile.c: the one reader of the line-per-key secret files (sk/keyfile.h, DESIGN.md 15,
 * 18): read at most 64 KiB, split and trim the lines, skip blanks and comments, hand each
 * kept line to the caller's hook; the reference-counted key set both key modules keep
 * their parsed keys in; the file's stamp for reloaders; the wipe of secrets.
 * What it does not do: know any key format (paysig.c and queue_token.c parse their own
 * lines) or decide when to reload. */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sk/err.h"
#include "sk/keyfile.h"

void sk_wipe(void *p, size_t n)
{
        volatile unsigned char *v = p;

        while (v && n--)
                *v++ = 0;
}

int sk_keyfile_parse(const char *text, size_t len, size_t max_lines, const char *what,
                     sk_keyfile_line_fn on_line, void *arg, char *errstr, size_t errstr_size)
{
        size_t pos = 0, kept = 0;
        int lineno = 0;

        while (pos < len) {
                const char *line = text + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t n = nl ? (size_t)(nl - line) : len - pos;
                char why[256] = "";

                pos += n + (nl ? 1 : 0);
                lineno++;
                while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                        n--;
                if (n == 0 || line[0] == '#')
                        continue;
                if (memchr(line, '\0', n)) {
                        sk_seterr(errstr, errstr_size, "line %d: a NUL byte", lineno);
                        return -1;
                }
                if (kept == max_lines) {
                        sk_seterr(errstr, errstr_size, "more than %zu keys in the %s", max_lines,
                                  what);
                        return -1;
                }
                if (on_line(arg, line, n, lineno, kept, why, sizeof(why)) != 0) {
                        sk_seterr(errstr, errstr_size, "line %d: %s", lineno, why);
                        return -1;
                }
                kept++;
        }
        if (kept == 0) {
                sk_seterr(errstr, errstr_size, "no key in the %s", what);
                return -1;
        }
        return (int)kept;
}

int sk_keyfile_load(const char *path, size_t max_lines, const char *what,
                    sk_keyfile_line_fn on_line, void *arg, char *errstr, size_t errstr_size)
{
        char *buf;
        FILE *f;
        size_t n;
        int rc = -1;

        if (!(f = fopen(path, "rb"))) {
                sk_seterr(errstr, errstr_size, "cannot open the %s %s: %s", what, path,
                          strerror(errno));
                return -1;
        }
        if (!(buf = malloc(SK_KEYFILE_MAX_BYTES + 1))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                fclose(f);
                return -1;
        }
        n = fread(buf, 1, SK_KEYFILE_MAX_BYTES + 1, f);
        if (ferror(f))
                sk_seterr(errstr, errstr_size, "cannot read the %s %s", what, path);
        else if (n > SK_KEYFILE_MAX_BYTES)
                sk_seterr(errstr, errstr_size, "the %s %s is over %d bytes", what, path,
                          SK_KEYFILE_MAX_BYTES);
        else
                rc = sk_keyfile_parse(buf, n, max_lines, what, on_line, arg, errstr, errstr_size);
        fclose(f);
        sk_wipe(buf, SK_KEYFILE_MAX_BYTES + 1);
        free(buf);
        return rc;
}

void sk_keyfile_stamp(const char *path, sk_keyfile_stamp_t *out)
{
        struct stat st;

        memset(out, 0, sizeof(*out));
        if (stat(path, &st) != 0)
                return;
        out->dev = (uint64_t)st.st_dev;
        out->ino = (uint64_t)st.st_ino;
        out->size = (int64_t)st.st_size;
        out->mtime_s = (int64_t)st.st_mtim.tv_sec;
        out->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
}

int sk_keyfile_changed(const char *path, const sk_keyfile_stamp_t *seen)
{
        sk_keyfile_stamp_t now;

        sk_keyfile_stamp(path, &now);
        if (now.ino == 0 && now.dev == 0)
                return 1; /* gone or unreadable: the reload says why, once */
        return now.dev != seen->dev || now.ino != seen->ino || now.size != seen->size ||
               now.mtime_s != seen->mtime_s || now.mtime_ns != seen->mtime_ns;
}

struct sk_keyfile_set {
        atomic_int refs;                /* the only field that changes after the parse */
        size_t n;                       /* kept lines */
        const sk_keyfile_kind_t *kind;
        alignas(max_align_t) unsigned char body[]; /* kind->body_size bytes */
};

/* An empty set of @p kind with one reference; NULL (and the reason) when out of memory. */
static sk_keyfile_set_t *set_new(const sk_keyfile_kind_t *kind, char *errstr,
                                 size_t errstr_size)
{
        sk_keyfile_set_t *set = calloc(1, sizeof(*set) + kind->body_size);

        if (!set) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        atomic_init(&set->refs, 1);
        set->kind = kind;
        return set;
}

/* The result of a parse or load into @p set: the set, or NULL after freeing it. */
static sk_keyfile_set_t *set_done(sk_keyfile_set_t *set, int kept)
{
        if (kept < 0) {
                sk_keyfile_set_free(set);
                return NULL;
        }
        set->n = (size_t)kept;
        return set;
}

sk_keyfile_set_t *sk_keyfile_set_parse(const sk_keyfile_kind_t *kind, const char *text,
                                       size_t len, char *errstr, size_t errstr_size)
{
        sk_keyfile_set_t *set = set_new(kind, errstr, errstr_size);

        if (!set)
                return NULL;
        return set_done(set, sk_keyfile_parse(text, len, kind->max_lines, kind->what,
                                               kind->on_line, set->body, errstr, errstr_size));
}

sk_keyfile_set_t *sk_keyfile_set_load(const sk_keyfile_kind_t *kind, const char *path,
                                      char *errstr, size_t errstr_size)
{
        sk_keyfile_set_t *set = set_new(kind, errstr, errstr_size);

        if (!set)
                return NULL;
        return set_done(set, sk_keyfile_load(path, kind->max_lines, kind->what, kind->on_line,
                                             set->body, errstr, errstr_size));
}

const void *sk_keyfile_set_body(const sk_keyfile_set_t *set, const sk_keyfile_kind_t *kind)
{
        return set && set->kind == kind ? set->body : NULL;
}

size_t sk_keyfile_set_count(const sk_keyfile_set_t *set)
{
        return set ? set->n : 0;
}

sk_keyfile_set_t *sk_keyfile_set_ref(sk_keyfile_set_t *set)
{
        if (set)
                atomic_fetch_add(&set->refs, 1);
        return set;
}

void sk_keyfile_set_free(sk_keyfile_set_t *set)
{
        if (!set || atomic_fetch_sub(&set->refs, 1) != 1)
                return;
        sk_wipe(set, sizeof(*set) + set->kind->body_size);
        free(set);
}
