/* producer/identity.h: who the buyer is (DESIGN.md 15): SECKILL_AUTH=jwt (a verified
 * Bearer token; X-User-Id ignored) or trusted-header (X-User-Id from a peer in
 * SECKILL_TRUSTED_PROXIES only). Set up by main.c before the HTTP threads start; the
 * verdict is thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* The default of SECKILL_TRUSTED_PROXIES (main.c's option table): only the front's unix
 * listener (DESIGN.md 15 "Defaults are the safe ones"). */
#define FR_TRUSTED_PROXIES_DEFAULT "unix"
#define FR_JWT_CLAIM_ANY "*"    /* SECKILL_JWT_ISSUER / _AUDIENCE: that claim not checked */
#define FR_JWT_SKEW_S 30        /* s, exp/nbf/iat (DESIGN.md 15) */
#define FR_JWT_RECHECK_S 10     /* s, key file check and unknown-kid re-read spacing */

typedef enum {
        FR_ID_OK = 0,
        FR_ID_BAD_INPUT,        /* 400/10001: trusted-header mode, X-User-Id missing, repeated or not canonical */
        FR_ID_UNAUTHORIZED,     /* 401/10007 + WWW-Authenticate: Bearer */
        FR_ID_LIMITED,          /* 429/10013 + Retry-After: this client's uncached tokens */
} fr_identity_t;

/** Validate the identity settings of g_fr and set up the mode: parse the trusted
 *  proxies (both modes: peers.h), then load the JWKS and set the per-client
 *  verification limit (jwt), or refuse the default list on a non-loopback
 *  SECKILL_HTTP_ADDR (trusted-header). Logs the mode once. Main thread, before the HTTP
 *  threads. @returns 0, or -1 with @p errstr (a configuration error: exit 2). */
int fr_identity_init(char *errstr, size_t errstr_size);
/** From the main loop: @p hup 1 (SIGHUP seen) re-reads the JWKS now; otherwise the file
 *  is checked for a change every FR_JWT_RECHECK_S. A no-op in trusted-header mode. */
void fr_identity_tick(int hup);
/** Free the verifier (after the HTTP threads stopped). */
void fr_identity_destroy(void);
/** The buyer of the request on @p conn into *@p user_id, or why not (*@p why, a static
 *  string fit for the answer body). Never touches Redis or the DB. Thread-safe (HTTP
 *  threads); may re-read the JWKS once per FR_JWT_RECHECK_S on an unknown kid. */
fr_identity_t fr_identity_user(struct MHD_Connection *conn, int64_t *user_id, const char **why);

