/* producer/xsite.c: the cross-site request rule of the API listener (DESIGN.md 15
 * "Cross-site requests", producer/xsite.h): SECKILL_ALLOWED_ORIGINS parsed once at start
 * (origins in the form a browser sends them, anything else refused so that an entry can
 * match), then every POST judged on its Origin and Sec-Fetch-Site headers, from one
 * place of the request path (http.c, before routing), so a route added later is covered
 * without a line of its own.
 * What it does not do: answer (http.c turns a refusal into 403/10001); read the cookie or
 * the identity (identity.c); act in jwt mode (a browser adds no Bearer token by itself,
 * so a cross-site page cannot buy in a visitor's name there). */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include "xsite.h"
#include "sk/err.h"

#define ORIGIN_MAX 256                  /* bytes of one origin, scheme and port included */

static char origins[FR_XSITE_ORIGINS_MAX][ORIGIN_MAX];
static size_t origin_len[FR_XSITE_ORIGINS_MAX];
static int norigins;
static int enforced;

/* The port after "host:" of @p s (@p len bytes): canonical decimal 1..65535, not the
 * scheme's default (@p def), which a browser never writes. */
static const char *check_port(const char *s, size_t len, long def)
{
        long port = 0;
        size_t i;

        if (len == 0 || len > 5 || s[0] == '0')
                return "the port must be decimal 1..65535 without leading zero";
        for (i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return "the port must be decimal 1..65535 without leading zero";
                port = port * 10 + (s[i] - '0');
        }
        if (port > 65535)
                return "the port must be decimal 1..65535 without leading zero";
        if (port == def)
                return "a browser omits the scheme's default port: leave it out";
        return NULL;
}

/* A host name as a browser serialises it: lowercase letters, digits, '-' and '.', labels
 * not empty. */
static const char *check_name(const char *s, size_t len)
{
        size_t i;

        if (len == 0)
                return "no host";
        for (i = 0; i < len; i++) {
                char c = s[i];

                if (c >= 'A' && c <= 'Z')
                        return "write the host in lowercase, as a browser sends it";
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
                        return "the host must be a name, an IPv4 address or [IPv6]; nothing after "
                               "the port (no path, no trailing /)";
                if (c == '.' && (i == 0 || i + 1 == len || s[i - 1] == '.'))
                        return "empty label in the host";
        }
        return NULL;
}

/* "[addr]" as a browser serialises it: the address as inet_ntop writes it. */
static const char *check_ipv6(const char *s, size_t len)
{
        char in[INET6_ADDRSTRLEN + 1], out[INET6_ADDRSTRLEN + 1];
        unsigned char a[16];

        if (len < 3 || len - 2 >= sizeof(in))
                return "bad [IPv6] host";
        memcpy(in, s + 1, len - 2);
        in[len - 2] = '\0';
        if (inet_pton(AF_INET6, in, a) != 1 || !inet_ntop(AF_INET6, a, out, sizeof(out)))
                return "bad [IPv6] host";
        if (strcmp(in, out))
                return "write the IPv6 address as a browser does (inet_ntop form, lowercase)";
        return NULL;
}

/* One entry @p s of @p len bytes. @returns NULL if it is a serialised origin. */
static const char *check_origin(const char *s, size_t len)
{
        const char *host, *end = s + len, *colon;
        long def;
        const char *why;

        if (len >= 7 && !strncmp(s, "http://", 7)) {
                host = s + 7;
                def = 80;
        } else if (len >= 8 && !strncmp(s, "https://", 8)) {
                host = s + 8;
                def = 443;
        } else {
                return "an origin starts with http:// or https:// (lowercase; \"null\" and \"*\" "
                       "are not accepted)";
        }
        if (host < end && *host == '[') {
                const char *close = memchr(host, ']', (size_t)(end - host));

                if (!close)
                        return "bad [IPv6] host";
                if ((why = check_ipv6(host, (size_t)(close + 1 - host))))
                        return why;
                colon = close + 1;
                if (colon == end)
                        return NULL;
                if (*colon != ':')
                        return "nothing may follow the host but :PORT (no path, no trailing /)";
        } else {
                colon = memchr(host, ':', (size_t)(end - host));
                if ((why = check_name(host, (size_t)((colon ? colon : end) - host))))
                        return why;
                if (!colon)
                        return NULL;
        }
        return check_port(colon + 1, (size_t)(end - colon - 1), def);
}

int fr_xsite_init(const char *list, int enforce, char *errstr, size_t errstr_size)
{
        const char *p = list ? list : "";
        const char *why;

        norigins = 0;
        enforced = enforce;
        while (*p) {
                size_t len = strcspn(p, ", ");

                if (len == 0) {
                        p++;
                        continue;
                }
                if (len >= ORIGIN_MAX) {
                        sk_seterr(errstr, errstr_size, "SECKILL_ALLOWED_ORIGINS: an entry is longer "
                                  "than %d bytes", ORIGIN_MAX - 1);
                        return -1;
                }
                if ((why = check_origin(p, len))) {
                        sk_seterr(errstr, errstr_size, "SECKILL_ALLOWED_ORIGINS: \"%.*s\": %s",
                                  (int)len, p, why);
                        return -1;
                }
                if (norigins == FR_XSITE_ORIGINS_MAX) {
                        sk_seterr(errstr, errstr_size, "SECKILL_ALLOWED_ORIGINS: more than %d entries",
                                  FR_XSITE_ORIGINS_MAX);
                        return -1;
                }
                memcpy(origins[norigins], p, len);
                origins[norigins][len] = '\0';
                origin_len[norigins++] = len;
                p += len;
        }
        return 0;
}

int fr_xsite_count(void)
{
        return norigins;
}

/* The two headers of the rule: how many of each, and the first one's value. */
typedef struct seen {
        int n_origin, n_site;
        const char *origin, *site;
        size_t origin_len, site_len;
} seen_t;

static enum MHD_Result see(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                           const char *value, size_t value_size)
{
        seen_t *s = cls;

        (void)kind;
        (void)key_size;
        if (!key)
                return MHD_YES;
        if (!strcasecmp(key, "Origin") && !s->n_origin++) {
                s->origin = value ? value : "";
                s->origin_len = value ? value_size : 0;
        } else if (!strcasecmp(key, "Sec-Fetch-Site") && !s->n_site++) {
                s->site = value ? value : "";
                s->site_len = value ? value_size : 0;
        }
        return MHD_YES;
}

static int listed(const char *v, size_t len)
{
        int i;

        for (i = 0; i < norigins; i++)
                if (origin_len[i] == len && !memcmp(origins[i], v, len))
                        return 1;
        return 0;
}

const char *fr_xsite_refused(struct MHD_Connection *conn, const char *method)
{
        static const char same[] = "same-origin";
        seen_t s = { 0, 0, NULL, NULL, 0, 0 };

        if (!enforced || strcmp(method, "POST"))
                return NULL;
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, see, &s);
        if (!s.n_origin && !s.n_site)
                return NULL; /* no browser sent this: nothing a cookie could be abused by */
        if (s.n_origin > 1 || s.n_site > 1)
                return "cross-site request refused: more than one Origin or Sec-Fetch-Site header";
        if (s.n_site && s.site_len == sizeof(same) - 1 && !memcmp(s.site, same, s.site_len))
                return NULL;
        if (s.n_origin && listed(s.origin, s.origin_len))
                return NULL;
        return s.n_origin ? "cross-site request refused: Origin not in SECKILL_ALLOWED_ORIGINS and "
                            "Sec-Fetch-Site is not same-origin"
                          : "cross-site request refused: Sec-Fetch-Site is not same-origin";
}
