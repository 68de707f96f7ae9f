/* producer/http.h: the libmicrohttpd side of seckill-front (DESIGN.md 3). */
#pragma once
#include <stddef.h>

#include "sk/lease.h"

/** Listen on SECKILL_HTTP_ADDR and serve. @p idgen (borrowed, outlives the daemon)
 *  mints order and trace ids. @returns 0, or -1 with @p errstr. */
int fr_http_start(sk_idgen_t *idgen, char *errstr, size_t errstr_size);
/** Stop accepting new connections (shutdown); served connections go on. */
void fr_http_quiesce(void);
/** Stop the daemon (no connection may be suspended any more). */
void fr_http_stop(void);
