/* producer/listen.h: the API listener's unix socket (DESIGN.md 15 "Defaults are the safe
 * ones": SECKILL_HTTP_ADDR=unix:PATH, created mode 0660, group seckill, so only the
 * gateway's user can speak for a buyer). A TCP address is libmicrohttpd's to bind. */
#pragma once
#include <stddef.h>

#define FR_UNIX_PREFIX "unix:"
#define FR_UNIX_GROUP "seckill"         /* the socket's group when it exists */

/** 1 if @p addr (SECKILL_HTTP_ADDR) names a unix socket ("unix:PATH"). */
int fr_listen_is_unix(const char *addr);
/** Create, bind and listen on the unix socket of @p addr ("unix:PATH", PATH absolute):
 *  a stale socket left at PATH by a dead front is removed (one that answers is in use:
 *  refused; anything but a socket: refused); the socket gets mode 0660 and the group
 *  FR_UNIX_GROUP if that group exists (else the process's), before it listens, with a
 *  backlog of @p backlog. @returns the listening fd (the caller hands it to
 *  libmicrohttpd, which closes it), or -1 with @p errstr (a configuration error:
 *  exit 2). Main thread, start-up. */
int fr_listen_unix(const char *addr, int backlog, char *errstr, size_t errstr_size);
/** Remove the socket file of @p addr if it is the one fr_listen_unix created (same
 *  inode); a no-op for a TCP address. Main thread, after the daemon stopped. */
void fr_listen_unix_remove(const char *addr);
