/* producer/strict.h: the bytes the front accepts in what it reads (DESIGN.md 3, DESIGN.md
 * 15 "Hardening rules"): no NUL anywhere in the request line or in a header line the
 * front reads (judged on the header block as libmicrohttpd stored it, not on its C
 * strings), no other control byte and no byte >= 0x80 in the path or in those headers
 * (SP and HTAB are allowed inside a header value, RFC 9110 field-value), and CR LF line
 * ends on those lines. Pure and thread-safe. */
#pragma once
#include <stddef.h>
#include <microhttpd.h>

/** 1 if the @p len bytes of header value @p v are all visible ASCII, SP or HTAB. */
int fr_strict_value(const char *v, size_t len);
/** 1 if the path @p url (NUL-terminated, as sent: never unescaped) holds only visible
 *  ASCII (no SP, no control byte, nothing >= 0x80). */
int fr_strict_path(const char *url);
/** 1 if header @p key (any case) is one the front reads, so its line is checked. */
int fr_strict_is_read_header(const char *key);
/** The request line and every line of a header the front reads, checked on the header
 *  block libmicrohttpd 0.9.75 parsed in place. Call from the access handler's first
 *  call (headers complete). @p method, @p url and @p version are the handler's
 *  arguments (borrowed, pointing into that block); @p uri_cstr_len is strlen() of the
 *  URI as the URI log callback saw it (before the query was cut off), so a NUL in the
 *  target shows as a shorter length than the parser kept.
 *  @returns NULL if all is clean, else a static reason for a 400/10001 body. */
const char *fr_strict_request(struct MHD_Connection *conn, const char *method, const char *url,
                              const char *version, size_t uri_cstr_len);
