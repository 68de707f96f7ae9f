/* producer/framing.h: how a request's body is framed (DESIGN.md 15 "Hardening rules"):
 * at most one Content-Length, in canonical decimal; a Transfer-Encoding only alone and
 * exactly "chunked". Anything else gets one 400 and the connection closed, so no two
 * parsers on the path can frame the same bytes differently. Pure and thread-safe. */
#pragma once
#include <stddef.h>
#include <microhttpd.h>

/** 1 if the @p len bytes of @p v are a canonical decimal length: "0", or a digit 1-9
 *  followed by at most 17 more digits. */
int fr_framing_canonical_length(const char *v, size_t len);
/** The framing headers of @p conn (borrowed; call from the access handler, headers
 *  complete). @returns NULL if the request is framed by one canonical Content-Length,
 *  by "Transfer-Encoding: chunked" alone, or by neither; else a static reason for the
 *  400/10001 body (the caller closes the connection). */
const char *fr_framing_check(struct MHD_Connection *conn);
