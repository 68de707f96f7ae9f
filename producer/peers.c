/* producer/peers.c: the front's trusted peers (peers.h, DESIGN.md 15 "Defaults are the
 * safe ones"): the table of SECKILL_TRUSTED_PROXIES and the match of a peer against it.
 * A CIDR is taken in its canonical form only, so that what the operator wrote is what
 * is trusted: "10.0.0.1/+8" (a sign), "10.0.0.1/08" (a leading zero) and "10.0.0.1/8"
 * (host bits: did they mean one host or the /8?) are refused, and a prefix wider than
 * /8 (IPv4) or /32 (IPv6), "0.0.0.0/0" first of all, only with
 * SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1.
 * What it does not do: decide what a trusted peer may say (identity.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "peers.h"
#include "sk/err.h"

typedef struct cidr {
        int family;             /* AF_INET, AF_INET6, AF_UNIX ("unix") */
        unsigned char addr[16];
        int bits;
} cidr_t;

static cidr_t peers[FR_PEERS_MAX];
static int npeers;

/* @p s (NUL-terminated) as a canonical prefix length in 0..@p max into *bits. */
static int parse_bits(const char *s, int max, int *bits)
{
        int v = 0;

        if (!s[0] || (s[0] == '0' && s[1]) || strlen(s) > 3)
                return -1;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -1;
                v = v * 10 + (*s - '0');
        }
        if (v > max)
                return -1;
        *bits = v;
        return 0;
}

/* Clear the host bits of @p c's address beyond its prefix. @returns 1 if any was set. */
static int clear_host_bits(cidr_t *c)
{
        int len = c->family == AF_INET ? 4 : 16, any = 0;

        for (int i = 0; i < len; i++) {
                int keep = c->bits - 8 * i;
                unsigned char mask = keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));

                any |= c->addr[i] & ~mask;
                c->addr[i] &= mask;
        }
        return any != 0;
}

/* One entry @p s into *c (*wide: 1 if wider than the limit, allowed). @returns 0, or -1
 * with errstr naming the entry. */
static int parse_cidr(const char *s, int allow_wide, cidr_t *c, int *wide, char *errstr,
                      size_t errstr_size)
{
        char host[INET6_ADDRSTRLEN + 1], canon[INET6_ADDRSTRLEN + 1];
        const char *slash = strchr(s, '/');
        size_t hl = slash ? (size_t)(slash - s) : strlen(s);
        int max;

        memset(c, 0, sizeof(*c));
        *wide = 0;
        if (!strcmp(s, "unix")) {
                c->family = AF_UNIX;
                return 0;
        }
        if (!hl || hl >= sizeof(host))
                goto not_cidr;
        memcpy(host, s, hl);
        host[hl] = '\0';
        if (inet_pton(AF_INET, host, c->addr) == 1)
                c->family = AF_INET, max = 32;
        else if (inet_pton(AF_INET6, host, c->addr) == 1)
                c->family = AF_INET6, max = 128;
        else
                goto not_cidr;
        c->bits = max;
        if (slash && parse_bits(slash + 1, max, &c->bits) != 0) {
                sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES: \"%s\": the prefix must be "
                          "0..%d in decimal, without sign or leading zero", s, max);
                return -1;
        }
        if (!inet_ntop(c->family, c->addr, canon, sizeof(canon)) || strcasecmp(canon, host)) {
                sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES: \"%s\" is not canonical "
                          "(write the address as %s)", s, canon);
                return -1;
        }
        if (clear_host_bits(c)) {
                inet_ntop(c->family, c->addr, canon, sizeof(canon));
                sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES: \"%s\" has host bits set: "
                          "write %s/%d for the network, or the address alone for one host", s, canon,
                          c->bits);
                return -1;
        }
        if (c->bits < (c->family == AF_INET ? FR_PEERS_WIDE_V4 : FR_PEERS_WIDE_V6)) {
                if (!allow_wide) {
                        sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES: \"%s\" is wider than "
                                  "/%d: every address in it could claim any buyer; list the gateways, "
                                  "or set SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1", s,
                                  c->family == AF_INET ? FR_PEERS_WIDE_V4 : FR_PEERS_WIDE_V6);
                        return -1;
                }
                *wide = 1;
        }
        return 0;
not_cidr:
        sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES: \"%s\" is not a CIDR, an address "
                  "or unix", s);
        return -1;
}

int fr_peers_parse(const char *list, int allow_wide, int *nwide, char *errstr, size_t errstr_size)
{
        char buf[1024], *tok, *save = NULL;
        int wide, n = 0;

        npeers = 0;
        if (nwide)
                *nwide = 0;
        if (strlen(list) >= sizeof(buf)) {
                sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES is too long");
                return -1;
        }
        snprintf(buf, sizeof(buf), "%s", list);
        for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
                if (n == FR_PEERS_MAX) {
                        sk_seterr(errstr, errstr_size, "SECKILL_TRUSTED_PROXIES: more than %d entries",
                                  FR_PEERS_MAX);
                        return -1;
                }
                if (parse_cidr(tok, allow_wide, &peers[n], &wide, errstr, errstr_size) != 0)
                        return -1;
                if (nwide)
                        *nwide += wide;
                n++;
        }
        npeers = n;
        return 0;
}

int fr_peers_any(fr_peers_kind_t kind)
{
        for (int i = 0; i < npeers; i++)
                if ((peers[i].family == AF_UNIX) == (kind == FR_PEERS_UNIX))
                        return 1;
        return 0;
}

static int prefix_match(const unsigned char *a, const unsigned char *b, int bits)
{
        int full = bits / 8, rest = bits % 8;

        if (memcmp(a, b, (size_t)full))
                return 0;
        return !rest || ((a[full] ^ b[full]) & (0xff << (8 - rest))) == 0;
}

int fr_peers_trusted(const struct sockaddr *sa)
{
        unsigned char v4[4];
        const unsigned char *v6 = NULL;
        int family, i;

        if (!sa)
                return 0;
        family = sa->sa_family;
        if (family == AF_INET) {
                memcpy(v4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        } else if (family == AF_INET6) {
                v6 = (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
                /* A v4 peer on a dual-stack socket (::ffff:a.b.c.d) is judged as v4. */
                if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)v6)) {
                        memcpy(v4, v6 + 12, 4);
                        family = AF_INET;
                }
        }
        for (i = 0; i < npeers; i++) {
                if (peers[i].family != family)
                        continue;
                if (family == AF_UNIX || (family == AF_INET && prefix_match(peers[i].addr, v4, peers[i].bits)) ||
                    (family == AF_INET6 && prefix_match(peers[i].addr, v6, peers[i].bits)))
                        return 1;
        }
        return 0;
}
