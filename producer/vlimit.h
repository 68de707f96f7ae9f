/* producer/vlimit.h: the limit on signature work for tokens not in the JWT cache
 * (DESIGN.md 15 "Cost of hostile input"): a token bucket per client address, the address
 * the gateway forwards when the peer is a trusted proxy, else the peer's own, so one
 * client sending made-up tokens is slowed alone and never locks out the sale; cached
 * tokens are never limited (the caller asks only before a verification). */
#pragma once
#include <stdint.h>

#define FR_VLIMIT_KEY_LEN 16            /* an IPv6 address, or an IPv4 one v4-mapped */

/** Set the limit: @p rate_per_s verifications per second per client address, with a
 *  burst of as many (0 = no limit). Once, before the HTTP threads start. @returns 0, or
 *  -1 out of memory (then nothing is limited; logged by the caller). */
int fr_vlimit_init(int rate_per_s);
/** Free the table (exit, after the HTTP threads stopped). */
void fr_vlimit_destroy(void);
/** One verification for the client @p key (FR_VLIMIT_KEY_LEN bytes) at @p now_ms
 *  (monotonic). @returns 1 allowed (a token taken), 0 over the limit. The table holds
 *  4096 clients; a new client takes the slot of one that is idle (its bucket full
 *  again) or the least recently seen, with a full bucket of its own. Thread-safe (a
 *  lock per stripe of slots). */
int fr_vlimit_take(const unsigned char *key, int64_t now_ms);
