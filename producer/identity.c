/* producer/identity.c: who the buyer is (DESIGN.md 15 "Buyer identity", "Defaults are the
 * safe ones"). SECKILL_AUTH=jwt (the default): exactly one `Authorization: Bearer <JWT>`,
 * verified by common/auth (sk_jwt_auth: the JWKS of SECKILL_JWT_KEYS_FILE, the
 * verified-token cache, rotation); X-User-Id is ignored; issuer and audience are required
 * ("*" opts out of one, warned at every start); a token not in the cache costs a
 * verification that vlimit.c limits per client address (X-Forwarded-For from a trusted
 * proxy, else the peer). SECKILL_AUTH=trusted-header, chosen explicitly: X-User-Id
 * (exactly one, canonical) is believed only from a peer in SECKILL_TRUSTED_PROXIES
 * (peers.c; default: unix only); any other peer is 401/10007 whatever it sends, and a
 * front none of whose trusted peers can reach its listener refuses to start. Key
 * reloads: SIGHUP (main.c sets a flag) and a changed file, checked from the main loop
 * every 10 s; an unknown kid re-reads at most once per 10 s from the HTTP thread. Each
 * reload is logged once and counted.
 * What it does not do: answer (http.c turns the verdict into 400, 401 or 429) or touch
 * Redis or the DB: every refusal comes before any of that. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "front.h"
#include "identity.h"
#include "metrics.h"
#include "listen.h"
#include "peers.h"
#include "vlimit.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/jwt_auth.h"
#include "sk/log.h"

static int jwt_mode;
static sk_jwt_auth_t *auth;

/* -------------------------------------------------------------- JWT reloads ---- */

static void on_reload(void *arg, int ok, uint64_t generation, size_t nkeys, const char *reason)
{
        (void)arg;
        if (ok) {
                sk_metric_add(fr_m.jwt_reloads, 1);
                SK_LOG(SK_INFO, "jwt_keys_reloaded", "file=%s generation=%llu keys=%zu", g_fr.jwt_keys_file,
                       (unsigned long long)generation, nkeys);
        } else {
                sk_metric_add(fr_m.jwt_reload_fail, 1);
                SK_LOG(SK_WARN, "jwt_keys_reload_failed", "file=%s reason=\"%s\" keys=kept",
                       g_fr.jwt_keys_file, reason);
        }
}

/* SECKILL_JWT_ISSUER or _AUDIENCE (@p name): required (DESIGN.md 15); "*" opts out of
 * that one check, warned at every start. @returns the value to check (NULL = none), or
 * sets errstr and returns @p v unchanged with *@p bad = 1. */
static const char *claim_setting(const char *name, const char *v, int *bad, char *errstr,
                                 size_t errstr_size)
{
        if (!v[0]) {
                sk_seterr(errstr, errstr_size, "SECKILL_AUTH=jwt needs SECKILL_JWT_ISSUER and "
                          "SECKILL_JWT_AUDIENCE (%s is not set): a token another application of the "
                          "same identity provider got would be accepted. Set it, or %s=* to accept "
                          "any (warned at every start)", name, name);
                *bad = 1;
                return v;
        }
        if (!strcmp(v, FR_JWT_CLAIM_ANY)) {
                SK_LOG(SK_WARN, "jwt_claim_not_checked", "setting=%s reason=\"%s=*: tokens issued "
                       "for any %s are accepted\"", name, name,
                       !strcmp(name, "SECKILL_JWT_ISSUER") ? "issuer" : "audience");
                return NULL;
        }
        return v;
}

/* SECKILL_AUTH=jwt: the verifier and the per-client limit. */
static int init_jwt(char *errstr, size_t errstr_size)
{
        int bad = 0;
        const char *iss = claim_setting("SECKILL_JWT_ISSUER", g_fr.jwt_issuer, &bad, errstr, errstr_size);
        const char *aud = bad ? NULL : claim_setting("SECKILL_JWT_AUDIENCE", g_fr.jwt_audience, &bad,
                                                     errstr, errstr_size);
        sk_jwt_auth_opts_t o = {
                .keys_file = g_fr.jwt_keys_file, .issuer = iss, .audience = aud,
                .cache_max = (size_t)g_fr.jwt_cache_max, .skew_s = FR_JWT_SKEW_S,
                .recheck_s = FR_JWT_RECHECK_S, .on_reload = on_reload,
                .rsa_max_bits = g_fr.jwt_rsa_max_bits,
        };
        char why[512];

        if (!g_fr.jwt_keys_file[0]) {
                sk_seterr(errstr, errstr_size, "SECKILL_AUTH=jwt needs SECKILL_JWT_KEYS_FILE (the "
                          "identity provider's JWKS); SECKILL_AUTH=trusted-header is the other mode");
                return -1;
        }
        if (bad)
                return -1;
        if (!(auth = sk_jwt_auth_new(&o, why, sizeof(why)))) {
                sk_seterr(errstr, errstr_size, "SECKILL_JWT_KEYS_FILE: %s", why);
                return -1;
        }
        if (fr_vlimit_init(g_fr.jwt_verify_rate) != 0)
                SK_LOG(SK_WARN, "jwt_verify_limit_off", "reason=\"out of memory\"");
        jwt_mode = 1;
        SK_LOG(SK_INFO, "identity", "auth=jwt keys_file=%s issuer=\"%s\" audience=\"%s\" "
               "cache_max=%d skew_s=%d verify_rate=%d trusted_proxies=\"%s\"", g_fr.jwt_keys_file,
               g_fr.jwt_issuer, g_fr.jwt_audience, g_fr.jwt_cache_max, FR_JWT_SKEW_S,
               g_fr.jwt_verify_rate, g_fr.trusted_proxies);
        return 0;
}

int fr_identity_init(char *errstr, size_t errstr_size)
{
        int nwide = 0, unix_listener = fr_listen_is_unix(g_fr.conf.http_addr);

        /* Both modes: whom X-User-Id (trusted-header) or X-Forwarded-For (the client
         * address of the jwt verification limit) is believed from. */
        if (fr_peers_parse(g_fr.trusted_proxies, g_fr.trusted_proxies_allow_wide, &nwide, errstr,
                           errstr_size) != 0)
                return -1;
        if (nwide)
                SK_LOG(SK_WARN, "trusted_proxies_wide", "wide=%d reason=\"SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1: "
                       "every address of a wide entry may claim any buyer\"", nwide);
        if (!strcmp(g_fr.auth_mode, "jwt"))
                return init_jwt(errstr, errstr_size);
        if (strcmp(g_fr.auth_mode, "trusted-header")) {
                sk_seterr(errstr, errstr_size, "SECKILL_AUTH=%s: expected jwt or trusted-header",
                          g_fr.auth_mode);
                return -1;
        }
        /* DESIGN.md 15: a trusted-header front none of whose trusted peers can reach its
         * listener would refuse every buyer: a mistake, refused at start. */
        if (!fr_peers_any(unix_listener ? FR_PEERS_UNIX : FR_PEERS_IP)) {
                sk_seterr(errstr, errstr_size,
                          "SECKILL_AUTH=trusted-header on %s with SECKILL_TRUSTED_PROXIES=%s: none of "
                          "the trusted peers can reach this listener. %s", g_fr.conf.http_addr,
                          g_fr.trusted_proxies, unix_listener ?
                          "Add unix to the list" :
                          "Name the gateway's address (e.g. 127.0.0.1/32), or listen on "
                          "unix:/run/seckill/front-NAME.sock, or use SECKILL_AUTH=jwt");
                return -1;
        }
        SK_LOG(SK_INFO, "identity", "auth=trusted-header trusted_proxies=\"%s\" listener=%s",
               g_fr.trusted_proxies, unix_listener ? "unix" : "tcp");
        return 0;
}

void fr_identity_tick(int hup)
{
        if (!auth)
                return;
        if (hup)
                sk_jwt_auth_reload(auth, 1);
        else
                sk_jwt_auth_tick(auth, sk_now_ms() / 1000);
}

void fr_identity_destroy(void)
{
        sk_jwt_auth_destroy(auth);
        auth = NULL;
        fr_vlimit_destroy();
}

/* ------------------------------------------------------------------ verdict ---- */

typedef struct hdr_count {
        const char *name;
        int n;
        const char *value;
        size_t len;
} hdr_count_t;

static enum MHD_Result count_hdr(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                 const char *value, size_t value_size)
{
        hdr_count_t *h = cls;

        (void)kind;
        (void)key_size;
        if (key && !strcasecmp(key, h->name)) {
                if (!h->n++) {
                        h->value = value ? value : "";
                        h->len = value ? value_size : 0;
                }
        }
        return MHD_YES;
}

static void find_header(struct MHD_Connection *conn, hdr_count_t *h)
{
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, count_hdr, h);
}

/* @p conn's client address as the limit's key (FR_VLIMIT_KEY_LEN bytes; IPv4 v4-mapped):
 * from a trusted peer, the last address of its one X-Forwarded-For header (the address
 * the gateway saw: nginx's $proxy_add_x_forwarded_for appends it); from any other peer,
 * the peer's own. @returns 1, or 0 when a trusted peer forwards no usable address (then
 * the clients behind it cannot be told apart and nothing is limited: never per
 * gateway). */
static int client_key(struct MHD_Connection *conn, unsigned char *key)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = ci ? ci->client_addr : NULL;
        hdr_count_t x = { .name = "X-Forwarded-For" };
        char addr[INET6_ADDRSTRLEN + 1];
        const char *b, *e;
        unsigned char v4[4];

        memset(key, 0, FR_VLIMIT_KEY_LEN);
        if (!sa)
                return 0;
        if (!fr_peers_trusted(sa)) {
                if (sa->sa_family == AF_INET) {
                        key[10] = key[11] = 0xff;
                        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
                } else if (sa->sa_family == AF_INET6) {
                        memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
                }
                return 1;
        }
        find_header(conn, &x);
        if (x.n != 1)
                return 0;
        for (b = x.value + x.len; b > x.value && b[-1] != ','; b--)
                ;
        e = x.value + x.len;
        while (b < e && (*b == ' ' || *b == '\t'))
                b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
        if (e == b || (size_t)(e - b) >= sizeof(addr))
                return 0;
        memcpy(addr, b, (size_t)(e - b));
        addr[e - b] = '\0';
        if (inet_pton(AF_INET, addr, v4) == 1) {
                key[10] = key[11] = 0xff;
                memcpy(key + 12, v4, 4);
                return 1;
        }
        return inet_pton(AF_INET6, addr, key) == 1;
}

/* "Bearer <token>": the scheme case-insensitive (RFC 9110 11.1), then one or more
 * spaces, then the token; nothing after it. A token not in the cache costs a signature
 * verification, limited per client address (vlimit.c): over it, FR_ID_LIMITED. */
static fr_identity_t bearer(struct MHD_Connection *conn, const hdr_count_t *h, int64_t *user_id,
                            const char **why)
{
        unsigned char key[FR_VLIMIT_KEY_LEN];
        static const char scheme[] = "Bearer";
        const char *tok;
        size_t len, i;
        char errstr[256];
        sk_jwt_status_t st;

        if (h->n != 1) {
                *why = h->n ? "more than one Authorization header" : "missing Authorization: Bearer token";
                return FR_ID_UNAUTHORIZED;
        }
        if (h->len <= sizeof(scheme) || strncasecmp(h->value, scheme, sizeof(scheme) - 1) ||
            h->value[sizeof(scheme) - 1] != ' ') {
                *why = "Authorization is not a Bearer token";
                return FR_ID_UNAUTHORIZED;
        }
        for (i = sizeof(scheme) - 1; i < h->len && h->value[i] == ' '; i++)
                ;
        tok = h->value + i;
        len = h->len - i;
        if (sk_jwt_auth_lookup(auth, tok, len, sk_now_ms() / 1000, user_id))
                return FR_ID_OK; /* cached: never limited */
        if (client_key(conn, key) && !fr_vlimit_take(key, sk_mono_ms())) {
                *why = "too many new tokens from this client address";
                return FR_ID_LIMITED;
        }
        st = sk_jwt_auth_verify(auth, tok, len, sk_now_ms() / 1000, user_id, errstr, sizeof(errstr));
        if (st == SK_JWT_OK)
                return FR_ID_OK;
        SK_LOG(SK_DEBUG, "identity_refused", "status=%s reason=\"%s\"", sk_jwt_status_str(st), errstr);
        *why = st == SK_JWT_EEXPIRED ? "expired token" : "invalid token";
        return FR_ID_UNAUTHORIZED;
}

fr_identity_t fr_identity_user(struct MHD_Connection *conn, int64_t *user_id, const char **why)
{
        hdr_count_t h = { .name = "X-User-Id" };
        const union MHD_ConnectionInfo *ci;

        if (jwt_mode) {
                hdr_count_t a = { .name = MHD_HTTP_HEADER_AUTHORIZATION };

                find_header(conn, &a);
                return bearer(conn, &a, user_id, why);
        }
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (!ci || !fr_peers_trusted(ci->client_addr)) {
                *why = "X-User-Id is only accepted from a trusted proxy";
                return FR_ID_UNAUTHORIZED;
        }
        /* Exactly one, canonical (DESIGN.md 3): two are ambiguous (which one did the
         * gateway set?), a 400, never the first one silently. */
        find_header(conn, &h);
        if (h.n != 1 || sk_id_parse(h.value, h.len, user_id) != 0) {
                *why = "missing or invalid X-User-Id";
                return FR_ID_BAD_INPUT;
        }
        return FR_ID_OK;
}
