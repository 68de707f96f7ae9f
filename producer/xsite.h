/* producer/xsite.h: the front's cross-site request rule (DESIGN.md 15 "Cross-site
 * requests"). In trusted-header mode the buyer is named by the gateway from a session
 * cookie, which a browser sends on a cross-site form POST too; so every POST on the API
 * listener must show it comes from the site itself: `Sec-Fetch-Site: same-origin`, or an
 * `Origin` listed in SECKILL_ALLOWED_ORIGINS. A request with neither header is not a
 * browser's and passes. jwt mode needs no such rule (a browser never adds a Bearer
 * token by itself). Set up once by main.c before the HTTP threads start. */
#pragma once
#include <stddef.h>
#include <microhttpd.h>

#define FR_XSITE_ORIGINS_MAX 32         /* entries of SECKILL_ALLOWED_ORIGINS */

/** Parse @p list (SECKILL_ALLOWED_ORIGINS: origins separated by commas or spaces; NULL or
 *  "" = none) and arm the rule when @p enforce (trusted-header mode). Each entry must be
 *  an origin as a browser serialises it (RFC 6454 6.2): "http://" or "https://", a
 *  lowercase host name or IPv4 address or a bracketed IPv6 address, an optional port in
 *  canonical decimal that is not the scheme's default, nothing after ("/" included);
 *  "null" and "*" are refused. Copies what it keeps.
 *  @returns 0, or -1 with @p errstr naming the entry (a configuration error: exit 2).
 *  Not thread-safe (start-up, before the HTTP threads). */
int fr_xsite_init(const char *list, int enforce, char *errstr, size_t errstr_size);

/** How many entries fr_xsite_init kept (for the start line). Thread-safe once set up. */
int fr_xsite_count(void);

/** The rule for one request whose headers are complete: @p method (borrowed) "POST" in
 *  trusted-header mode must carry exactly one `Sec-Fetch-Site: same-origin`, or exactly
 *  one `Origin` equal byte for byte to an entry of the list, or neither header (not a
 *  browser). Reads the headers of @p conn (borrowed) only: no Redis, no DB.
 *  @returns NULL to go on, else a static reason for the 403/10001 body. Thread-safe (any
 *  HTTP thread) once set up. */
const char *fr_xsite_refused(struct MHD_Connection *conn, const char *method);
