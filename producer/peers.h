/* producer/peers.h: the front's trusted peers (DESIGN.md 15): SECKILL_TRUSTED_PROXIES
 * parsed once at start (canonical CIDRs, bare addresses and "unix"; a prefix wider than
 * /8 for IPv4 or /32 for IPv6 refused unless SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1),
 * then a peer address matched against it from any HTTP thread. */
#pragma once
#include <stddef.h>
#include <sys/socket.h>

#define FR_PEERS_MAX 64                 /* entries of SECKILL_TRUSTED_PROXIES */
#define FR_PEERS_WIDE_V4 8              /* an IPv4 prefix shorter than this is wide */
#define FR_PEERS_WIDE_V6 32             /* an IPv6 prefix shorter than this is wide */

/** Parse @p list ("CIDR,address,unix", separated by commas or spaces) into the table.
 *  Each CIDR must be canonical: the address as inet_ntop writes it (any case), the
 *  prefix decimal without sign or leading zero, no host bit set ("10.0.0.1/8" is
 *  refused, the error names 10.0.0.0/8); a bare address is /32 or /128. A prefix
 *  shorter than FR_PEERS_WIDE_V4 / FR_PEERS_WIDE_V6 is refused unless @p allow_wide.
 *  *@p nwide (may be NULL) receives how many wide entries were accepted.
 *  @returns 0, or -1 with @p errstr naming the entry (a configuration error). Not
 *  thread-safe (start-up, before the HTTP threads; tests). */
int fr_peers_parse(const char *list, int allow_wide, int *nwide, char *errstr, size_t errstr_size);
typedef enum { FR_PEERS_IP, FR_PEERS_UNIX } fr_peers_kind_t;

/** 1 if the table holds an entry of @p kind (an address or CIDR; "unix"). Thread-safe
 *  once parsed. */
int fr_peers_any(fr_peers_kind_t kind);
/** 1 if the peer @p sa (borrowed; NULL = unknown) is in the table. An IPv4-mapped IPv6
 *  peer is judged by its IPv4 address; an AF_UNIX peer matches "unix". Thread-safe
 *  once parsed. */
int fr_peers_trusted(const struct sockaddr *sa);
