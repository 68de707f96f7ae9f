/* producer/vflight.h: per voucher, the purchases of this front that may still reach Kafka
 * (DESIGN.md 12 b). A purchase counts from before the HTTP thread reads the voucher's
 * degrade state (so before its deduct) until the pipeline is done with it: its last
 * produce has a delivery report, or the front decided never to produce it (a reject, a
 * 503 before the deduct, a fence). The degrade follower acks a draining epoch of V only
 * when V's count is 0 after it published that epoch to the HTTP threads; a purchase
 * entering after that reads the draining state and leaves without touching Redis.
 * (Counting happens-before the state read, the follower's publish happens-before its
 * count read: one of the two sees the other.)
 *
 * Thread-safe (one mutex). No dependency on the request type: the caller keeps the
 * "counted" flag (fr_req_t.vflight), read and written only under this module's lock. */
#pragma once
#include <stdint.h>

/** Count one purchase of @p voucher_id; *counted = 1. A no-op when *counted is already 1.
 *  Out of memory: the purchase is counted against every voucher (no ack anywhere until it
 *  leaves), never lost. */
void fr_vflight_enter(int64_t voucher_id, int *counted);
/** The purchase no longer counts (idempotent: a no-op when *counted is 0). */
void fr_vflight_leave(int64_t voucher_id, int *counted);
/** Purchases of @p voucher_id that may still reach Kafka (those counted against every
 *  voucher included). */
int64_t fr_vflight_count(int64_t voucher_id);
