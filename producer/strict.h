/* producer/strict.h: the bytes the front accepts in what it reads (DESIGN.md 3): no NUL,
 * no other control byte, no byte >= 0x80 in the path or in the headers the front reads
 * (SP and HTAB are allowed inside a header value, RFC 9110 field-value). Pure and
 * thread-safe. */
#pragma once
#include <stddef.h>
#include <microhttpd.h>

/** 1 if the @p len bytes of header value @p v are all visible ASCII, SP or HTAB. */
int fr_strict_value(const char *v, size_t len);
/** 1 if the path @p url (NUL-terminated, as sent: never unescaped) holds only visible
 *  ASCII (no SP, no control byte, nothing >= 0x80). */
int fr_strict_path(const char *url);
/** The request's path and every occurrence of the headers the front reads, checked.
 *  @returns NULL if all are clean, else a static reason for a 400/10001 body. */
const char *fr_strict_request(struct MHD_Connection *conn, const char *url);
