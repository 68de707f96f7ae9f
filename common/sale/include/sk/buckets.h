/* sk/buckets.h: how a voucher's stock is spread over its buckets (DESIGN.md 14).
 * Pure, thread-safe. The home bucket of a user is sk_home_bucket (sk/keys.h). */
#pragma once
#include <stdint.h>

/** @brief Units of @p total (>= 0) that bucket @p b (0..@p n-1) of @p n (1..16) buckets
 *  gets when @p total is spread at creation or by add-stock: total / n each, the
 *  remainder one unit each to the first buckets (DESIGN.md 14). Σ over b = total.
 *  Out-of-range @p n or @p b answers 0. */
int64_t sk_bucket_share(int64_t total, int n, int b);
