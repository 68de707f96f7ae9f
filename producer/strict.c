/* producer/strict.c: strict bytes in the request line and the headers the front reads
 * (DESIGN.md 3, DESIGN.md 15 "Hardening rules", producer/strict.h). Control bytes and
 * bytes >= 0x80 are seen in the values libmicrohttpd hands over. A NUL is not:
 * libmicrohttpd 0.9.75 parses the header block in place and reports each string up to
 * its first NUL, so "X-User-Id: 70\0 0008" arrives as "70". What it does keep is the
 * block itself: every string it reports points into it, and
 * MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE is its stored length from the method to the
 * body. So the front walks the block as the parser stored it: the method, the URI (its
 * length up to the first NUL taken by the URI log callback, before the query is cut
 * off, against the length the parser kept: up to the space before the version), the
 * version and each line the front reads, each of which must end exactly where the next
 * line (or the block) begins, with the CR LF the parser turned into two NULs. A byte
 * between is a NUL hidden inside the line; a line that does not end in CR LF (a bare
 * LF) is refused too, as its end could not be told from a NUL.
 * What it does not do: parse any value (identity.c, http.c, framing.c do, after this
 * check); look inside header lines the front does not read. */
#include <string.h>
#include <strings.h>

#include "strict.h"

/* The headers the front reads (DESIGN.md 3), and the ones it may read for the
 * payment callback and idempotent requests. */
static const char *const read_headers[] = {
        "X-User-Id", "Authorization", "X-Payment-Signature", "Content-Type", "Content-Length",
        "Transfer-Encoding", "Idempotency-Key", "X-Forwarded-For", "X-Real-IP", "Origin",
        "Sec-Fetch-Site",
};

int fr_strict_value(const char *v, size_t len)
{
        size_t i;

        for (i = 0; i < len; i++) {
                unsigned char c = (unsigned char)v[i];

                if ((c < 0x20 && c != '\t') || c >= 0x7f)
                        return 0;
        }
        return 1;
}

int fr_strict_path(const char *url)
{
        const unsigned char *p;

        for (p = (const unsigned char *)url; *p; p++)
                if (*p <= 0x20 || *p >= 0x7f)
                        return 0;
        return 1;
}

int fr_strict_is_read_header(const char *key)
{
        size_t i;

        for (i = 0; i < sizeof(read_headers) / sizeof(read_headers[0]); i++)
                if (!strcasecmp(key, read_headers[i]))
                        return 1;
        return 0;
}

/* The walk over the stored header block [start, end). */
typedef struct walk {
        const char *start, *end;
        const char *line_end;   /* where the previous line's text ended (its CR LF follows) */
        int line_read;          /* the previous line is one the front reads */
        const char *why;        /* the verdict: NULL = clean */
} walk_t;

/* 1 if the two bytes at @p p are the CR LF the parser turned into NULs and lie inside
 * the block. */
static int crlf_at(const walk_t *w, const char *p)
{
        return p >= w->start && p + 2 <= w->end && p[0] == '\0' && p[1] == '\0';
}

static enum MHD_Result check_one(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                 const char *value, size_t value_size)
{
        walk_t *w = cls;
        const char *p;
        int read;

        (void)kind;
        if (!key || !value)
                return MHD_YES;
        read = fr_strict_is_read_header(key);
        /* The previous line, if the front reads it, ends in CR LF right before this one. */
        if (w->line_read && !(crlf_at(w, w->line_end) && w->line_end + 2 == key)) {
                w->why = "NUL or bare LF in a line the front reads";
                return MHD_NO;
        }
        if (read) {
                /* In the block, "Name:" then only SP or HTAB up to the value, the value
                 * visible ASCII (its length is the parser's, up to any NUL). */
                if (key < w->start || value + value_size > w->end || value < key + key_size + 1) {
                        w->why = "folded or relocated header line";
                        return MHD_NO;
                }
                for (p = key + key_size + 1; p < value; p++)
                        if (*p != ' ' && *p != '\t') {
                                w->why = "NUL before a header value";
                                return MHD_NO;
                        }
                if (!fr_strict_value(value, value_size)) {
                        w->why = "NUL, control or non-ASCII byte in a header";
                        return MHD_NO;
                }
        }
        w->line_end = value + value_size;
        w->line_read = read;
        return MHD_YES;
}

/* The request line as stored: METHOD NUL (SP)* URI NUL VERSION(8 bytes) NUL NUL. */
static const char *check_request_line(walk_t *w, const char *method, const char *url,
                                       const char *version, size_t uri_cstr_len)
{
        size_t mlen = strlen(method);
        const char *p;

        if (!(method == w->start && url > method + mlen && version > url && version + 8 <= w->end))
                return "request line not as the parser stores it";
        for (p = method + mlen + 1; p < url; p++)
                if (*p != ' ')
                        return "NUL in the request method";
        if (version[-1] != '\0' || (size_t)(version - 1 - url) != uri_cstr_len)
                return "NUL in the request target";
        if (memchr(version, '\0', 8))
                return "NUL in the HTTP version";
        w->line_end = version + 8;
        w->line_read = 1;
        return NULL;
}

const char *fr_strict_request(struct MHD_Connection *conn, const char *method, const char *url,
                              const char *version, size_t uri_cstr_len)
{
        const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        walk_t w = { NULL, NULL, NULL, 0, NULL };

        if (!fr_strict_path(url))
                return "control or non-ASCII byte in the path";
        if (!ci || !method || !version)
                return "request header block unavailable";
        w.start = method;
        w.end = method + ci->header_size;
        if ((w.why = check_request_line(&w, method, url, version, uri_cstr_len)))
                return w.why;
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, check_one, &w);
        if (w.why)
                return w.why;
        /* The last line read ends with its CR LF and the blank line's: exactly four NULs,
         * then the block ends. */
        if (w.line_read && !(w.line_end + 4 == w.end && crlf_at(&w, w.line_end) &&
                             crlf_at(&w, w.line_end + 2)))
                return "NUL or bare LF in a line the front reads";
        return NULL;
}
