/* conf_url.h: URL pieces shared by conf.c (mysql://, host:port) and redis_url.c
 * (the SECKILL_REDIS_URL topologies of DESIGN.md 4b). Internal to common/base. */
#pragma once
#include <stddef.h>

/* Percent-decodes [b, b+len) into dst (size dst_size; %00 refused). @returns 0 or -1. */
int sk__pct_decode(const char *b, size_t len, char *dst, size_t dst_size);
/* Parses "host[:port]" of [b, e); default_port 0 = port required. A bracketed IPv6
 * literal is stored without brackets. @returns 0, or -1 with the reason in errstr. */
int sk__parse_host_port(const char *b, const char *e, char *host, size_t host_size,
                        int *port, int default_port, char *errstr, size_t errstr_size);
/* "scheme://rest" -> rest, or NULL if @p url does not start with scheme://. */
const char *sk__strip_scheme(const char *url, const char *scheme);
