/* conf_url.c: URL pieces of the configuration (DESIGN.md 2): percent-decoding,
 * host[:port] with bracketed IPv6, mysql:// and mysql-galera:// URLs with
 * several hosts, ?password-file= (DESIGN.md 16) and the TLS options (DESIGN.md 15). Shared by conf.c and redis_url.c
 * through conf_url.h. Pure functions, thread-safe. */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "sk/num.h"
#include "sk/url.h"
#include "sk/err.h"
#include "conf_url.h"

static int hexval(int c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Percent-decodes [b, b+len) into dst (size dst_size). @returns 0 or -1. */
int sk__pct_decode(const char *b, size_t len, char *dst, size_t dst_size)
{
        size_t i, o = 0;

        for (i = 0; i < len; i++) {
                int c = (unsigned char)b[i];
                if (c == '%') {
                        int h, l;
                        if (i + 2 >= len)
                                return -1;
                        h = hexval((unsigned char)b[i + 1]);
                        l = hexval((unsigned char)b[i + 2]);
                        if (h < 0 || l < 0 || (h == 0 && l == 0))
                                return -1;
                        c = h * 16 + l;
                        i += 2;
                }
                if (o + 1 >= dst_size)
                        return -1;
                dst[o++] = (char)c;
        }
        dst[o] = '\0';
        return 0;
}

static int valid_host_char(int c)
{
        return isalnum(c) || c == '.' || c == '-' || c == '_';
}

/* Parses "host[:port]" of [b, e) with an optional default port (0 = port required).
 * host may be a bracketed IPv6 literal "[::1]", stored without brackets. */
int sk__parse_host_port(const char *b, const char *e, char *host, size_t host_size,
                           int *port, int default_port, char *errstr, size_t errstr_size)
{
        const char *hb, *he, *pe = NULL;
        size_t hl;

        if (b < e && *b == '[') {
                const char *rb = memchr(b, ']', (size_t)(e - b));
                if (!rb) {
                        sk_seterr(errstr, errstr_size, "unterminated [ in host");
                        return -1;
                }
                hb = b + 1;
                he = rb;
                for (const char *p = hb; p < he; p++)
                        if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.') {
                                sk_seterr(errstr, errstr_size, "bad IPv6 address");
                                return -1;
                        }
                pe = rb + 1;
                if (pe < e && *pe != ':') {
                        sk_seterr(errstr, errstr_size, "unexpected text after ]");
                        return -1;
                }
        } else {
                hb = b;
                he = memchr(b, ':', (size_t)(e - b));
                if (!he)
                        he = e;
                for (const char *p = hb; p < he; p++)
                        if (!valid_host_char((unsigned char)*p)) {
                                sk_seterr(errstr, errstr_size, "bad character in host");
                                return -1;
                        }
                pe = he;
        }
        hl = (size_t)(he - hb);
        if (hl == 0) {
                sk_seterr(errstr, errstr_size, "missing host");
                return -1;
        }
        if (hl >= host_size) {
                sk_seterr(errstr, errstr_size, "host too long (max %zu chars)", host_size - 1);
                return -1;
        }
        if (pe < e) {           /* ":port" */
                char num[16];
                size_t nl = (size_t)(e - pe - 1);
                if (nl == 0 || nl >= sizeof(num)) {
                        sk_seterr(errstr, errstr_size, "bad port (1..65535)");
                        return -1;
                }
                memcpy(num, pe + 1, nl);
                num[nl] = '\0';
                if (!isdigit((unsigned char)num[0]) || sk_parse_int(num, 1, 65535, port) != 0) {
                        sk_seterr(errstr, errstr_size, "a port is out of range (1..65535)");
                        return -1;
                }
        } else if (default_port) {
                *port = default_port;
        } else {
                sk_seterr(errstr, errstr_size, "missing port");
                return -1;
        }
        memcpy(host, hb, hl);
        host[hl] = '\0';
        return 0;
}

int sk_hostport_parse(const char *s, char *host, size_t host_size, int *port)
{
        char tmp[256];
        int p = 0;

        if (!s || sk__parse_host_port(s, s + strlen(s), tmp, sizeof(tmp), &p, 0, NULL, 0) != 0)
                return -1;
        if (strlen(tmp) >= host_size)
                return -1;
        memcpy(host, tmp, strlen(tmp) + 1);
        *port = p;
        return 0;
}

/* Splits "scheme://" off @p url; returns the rest or NULL. */
const char *sk__strip_scheme(const char *url, const char *scheme)
{
        size_t n = strlen(scheme);

        if (!url || strncmp(url, scheme, n) != 0 || strncmp(url + n, "://", 3) != 0)
                return NULL;
        return url + n + 3;
}

/* Parses the comma-separated host[:port] list [b, e) into m->hosts. @returns 0 or -1. */
static int parse_mysql_hosts(const char *b, const char *e, sk_mysql_url_t *m, char *errstr,
                             size_t errstr_size)
{
        const char *hb = b;

        m->nhosts = 0;
        for (;;) {
                const char *he = memchr(hb, ',', (size_t)(e - hb));
                sk_mysql_host_t *h;
                if (!he)
                        he = e;
                if (m->nhosts == SK_MYSQL_MAX_HOSTS) {
                        sk_seterr(errstr, errstr_size, "more than %d hosts", SK_MYSQL_MAX_HOSTS);
                        return -1;
                }
                h = &m->hosts[m->nhosts];
                if (sk__parse_host_port(hb, he, h->host, sizeof(h->host), &h->port, 3306, errstr,
                                        errstr_size) != 0)
                        return -1;
                m->nhosts++;
                if (he == e)
                        break;
                hb = he + 1;
        }
        memcpy(m->host, m->hosts[0].host, sizeof(m->host));
        m->port = m->hosts[0].port;
        return 0;
}

/* The path options of a MySQL URL: name, where it goes. */
static char *path_opt(sk_mysql_url_t *m, const char *k, size_t klen, size_t *size)
{
        static const struct { const char *name; size_t off; } opts[] = {
                { "password-file", offsetof(sk_mysql_url_t, password_file) },
                { "ssl-ca", offsetof(sk_mysql_url_t, ssl_ca) },
                { "ssl-cert", offsetof(sk_mysql_url_t, ssl_cert) },
                { "ssl-key", offsetof(sk_mysql_url_t, ssl_key) },
        };

        for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
                if (strlen(opts[i].name) == klen && !strncmp(opts[i].name, k, klen)) {
                        *size = sizeof(m->password_file); /* every path field is this size */
                        return (char *)m + opts[i].off;
                }
        return NULL;
}

/* ssl-mode=V (DESIGN.md 15 "Transport"). VERIFY_CA is not offered: MariaDB Connector/C
 * 3.3 checks the chain only together with the host name. @returns 0 or -1. */
static int ssl_mode_opt(const char *v, size_t len, sk_mysql_url_t *m, int *seen, char *errstr,
                        size_t errstr_size)
{
        if (*seen) {
                sk_seterr(errstr, errstr_size, "ssl-mode given twice");
                return -1;
        }
        *seen = 1;
        if (len == 8 && !strncmp(v, "REQUIRED", 8)) {
                m->ssl_mode = SK_MYSQL_SSL_REQUIRED;
        } else if (len == 15 && !strncmp(v, "VERIFY_IDENTITY", 15)) {
                m->ssl_mode = SK_MYSQL_SSL_VERIFY_IDENTITY;
        } else {
                sk_seterr(errstr, errstr_size, "ssl-mode must be REQUIRED or VERIFY_IDENTITY (VERIFY_CA: "
                          "the client library checks the chain only with the host name)");
                return -1;
        }
        return 0;
}

/* The rules between the TLS options, once all are read. */
static int check_ssl(sk_mysql_url_t *m, int mode_seen, char *errstr, size_t errstr_size)
{
        if (!mode_seen && m->ssl_ca[0])
                m->ssl_mode = SK_MYSQL_SSL_VERIFY_IDENTITY;  /* a CA given means: check against it */
        if (m->ssl_mode == SK_MYSQL_SSL_VERIFY_IDENTITY && !m->ssl_ca[0]) {
                sk_seterr(errstr, errstr_size, "ssl-mode=VERIFY_IDENTITY needs ssl-ca=PATH (the CA file)");
                return -1;
        }
        if (!m->ssl_cert[0] != !m->ssl_key[0]) {
                sk_seterr(errstr, errstr_size, "ssl-cert and ssl-key go together");
                return -1;
        }
        if (m->ssl_cert[0] && m->ssl_mode == SK_MYSQL_SSL_OFF)
                m->ssl_mode = SK_MYSQL_SSL_REQUIRED;
        return 0;
}

/* Parses the query "k=v[&k=v...]" of [b, e): password-file, ssl-ca, ssl-cert, ssl-key
 * (paths), ssl-mode. @returns 0 or -1. */
static int parse_mysql_opts(const char *b, const char *e, sk_mysql_url_t *m, char *errstr,
                            size_t errstr_size)
{
        const char *ob = b;
        int mode_seen = 0;

        while (ob < e) {
                const char *oe = memchr(ob, '&', (size_t)(e - ob));
                const char *eq;
                char *dst;
                size_t size = 0, klen;

                if (!oe)
                        oe = e;
                eq = memchr(ob, '=', (size_t)(oe - ob));
                klen = eq ? (size_t)(eq - ob) : 0;
                if (!eq || eq + 1 == oe) {
                        sk_seterr(errstr, errstr_size, "unknown or empty option (options: password-file, "
                                  "ssl-ca, ssl-cert, ssl-key, ssl-mode)");
                        return -1;
                }
                if (klen == 8 && !strncmp(ob, "ssl-mode", 8)) {
                        if (ssl_mode_opt(eq + 1, (size_t)(oe - eq - 1), m, &mode_seen, errstr, errstr_size) != 0)
                                return -1;
                } else if ((dst = path_opt(m, ob, klen, &size)) != NULL) {
                        if (dst[0]) {
                                sk_seterr(errstr, errstr_size, "%.*s given twice", (int)klen, ob);
                                return -1;
                        }
                        if (sk__pct_decode(eq + 1, (size_t)(oe - eq - 1), dst, size) != 0) {
                                sk_seterr(errstr, errstr_size, "bad or too long %.*s path (max %zu chars)",
                                          (int)klen, ob, size - 1);
                                return -1;
                        }
                } else {
                        sk_seterr(errstr, errstr_size, "unknown or empty option (options: password-file, "
                                  "ssl-ca, ssl-cert, ssl-key, ssl-mode)");
                        return -1;
                }
                ob = oe < e ? oe + 1 : e;
        }
        return check_ssl(m, mode_seen, errstr, errstr_size);
}

int sk_mysql_url_parse(const char *url, sk_mysql_url_t *out, char *errstr, size_t errstr_size)
{
        sk_mysql_url_t m;
        const char *p, *at = NULL, *slash, *colon, *db, *q;
        size_t n;

        memset(&m, 0, sizeof(m));
        if ((p = sk__strip_scheme(url, "mysql-galera")) != NULL) {
                m.galera_only = 1;
        } else if (!(p = sk__strip_scheme(url, "mysql"))) {
                sk_seterr(errstr, errstr_size, "expected mysql://user[:password]@host[:port][,host[:port]...]/database "
                          "(or mysql-galera://)");
                return -1;
        }
        slash = strchr(p, '/');
        if (!slash) {
                sk_seterr(errstr, errstr_size, "missing /database");
                return -1;
        }
        for (const char *c = p; c < slash; c++)
                if (*c == '@')
                        at = c;
        if (!at) {
                sk_seterr(errstr, errstr_size, "missing user@ (mysql://user[:password]@host[:port]/database)");
                return -1;
        }
        colon = memchr(p, ':', (size_t)(at - p));
        n = (size_t)((colon ? colon : at) - p);
        if (n == 0 || sk__pct_decode(p, n, m.user, sizeof(m.user)) != 0) {
                sk_seterr(errstr, errstr_size, "missing, bad or too long user");
                return -1;
        }
        if (colon && sk__pct_decode(colon + 1, (size_t)(at - colon - 1), m.password, sizeof(m.password)) != 0) {
                sk_seterr(errstr, errstr_size, "bad or too long password");
                return -1;
        }
        if (parse_mysql_hosts(at + 1, slash, &m, errstr, errstr_size) != 0)
                return -1;
        db = slash + 1;
        q = strchr(db, '?');
        n = q ? (size_t)(q - db) : strlen(db);
        if (n == 0 || n >= sizeof(m.database)) {
                sk_seterr(errstr, errstr_size, "database name must be 1..%zu chars of [A-Za-z0-9_]",
                          sizeof(m.database) - 1);
                return -1;
        }
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)db[i]) && db[i] != '_') {
                        sk_seterr(errstr, errstr_size, "database name must be [A-Za-z0-9_]+");
                        return -1;
                }
        memcpy(m.database, db, n);
        m.database[n] = '\0';
        if (q && parse_mysql_opts(q + 1, q + strlen(q), &m, errstr, errstr_size) != 0)
                return -1;
        if (m.password_file[0] && colon) {
                sk_seterr(errstr, errstr_size, "a password in the URL and a password-file: give one");
                return -1;
        }
        *out = m;
        return 0;
}
