/* producer/page.h: the buyer page's routes (DESIGN.md 3, 18): GET /sale/{voucherId} and
 * GET /sale/assets/{name}, served from the binary with the page's security headers. */
#pragma once
#include "req.h"

/** The path prefix of every page route. */
#define FR_PAGE_PREFIX "/sale/"
/** The Content-Security-Policy of every page answer (DESIGN.md 18): nothing but the
 *  front's own origin, never framed, no <base>, forms posted only to the front. */
#define FR_PAGE_CSP "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

/** @brief Answer a request whose path starts with FR_PAGE_PREFIX (DESIGN.md 18 "The buyer
 *  page"), on the HTTP thread, without Redis, Kafka or the DB:
 *  - `GET /sale/{voucherId}` (canonical id, else 400/10001): the page, its template
 *    index.html with the voucher id and whether the fragment token is taken
 *    (@p fragment_token, SECKILL_PAGE_FRAGMENT_TOKEN) written into its data attributes;
 *  - `GET /sale/assets/{name}`: sale.js, sale.css or icon.svg with their Content-Type;
 *    any other name 404;
 *  - another method 405 (Allow: GET, HEAD), another path under /sale/ 404.
 *  Every page answer carries `Content-Security-Policy: default-src 'self';
 *  frame-ancestors 'none'; base-uri 'none'; form-action 'self'`, `X-Content-Type-Options:
 *  nosniff` and `Cache-Control: no-cache` (req->page, written by http.c).
 *  @p req borrowed, answered once through fr_quick; @p url and @p method borrowed.
 *  Thread-safe (read-only embedded data; the answer body is a fresh copy). Never fails:
 *  out of memory answers 503 like any other quick answer. */
void fr_page_route(fr_req_t *req, const char *url, const char *method, int fragment_token);
