/* sk/vec.h: a growable array of int64_t ids (trace ids, user ids) with the sort,
 * deduplicate and binary-search helpers the consistency code needs (sk_verify_voucher,
 * sk_rebuild_*, seckill-reconciler).
 *
 * What it does not do: shrink, keep order after sk_i64vec_sort_unique(), or lock.
 * Not thread-safe: one vector per thread (the functions keep no global state). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"

/* A zeroed value ({ 0 }) is an empty vector; no init call is needed. */
typedef struct sk_i64vec {
        int64_t *v;            /* elements (owned), NULL while empty */
        size_t n, cap;         /* used and allocated element counts */
} sk_i64vec_t;

/** @brief Append @p x, doubling the capacity (first allocation: 64 elements).
 *  @returns SK_OK, or SK_ENOMEM (not transient for the caller's purpose: @p a is
 *           left unchanged and still owned by the caller, who frees it). */
sk_err_t sk_i64vec_push(sk_i64vec_t *a, int64_t x);

/** @brief Free the elements of @p a and zero it (reusable afterwards). NULL is a no-op. */
void sk_i64vec_free(sk_i64vec_t *a);

/** @brief Sort @p a ascending and drop repeated values in place (no allocation). */
void sk_i64vec_sort_unique(sk_i64vec_t *a);

/** @brief 1 if @p x is in @p sorted (ascending, e.g. after sk_i64vec_sort_unique()),
 *  else 0. Binary search: an unsorted vector gives an undefined answer. */
int sk_i64vec_contains(const sk_i64vec_t *sorted, int64_t x);

/** @brief qsort/bsearch comparator for int64_t elements: -1, 0 or 1 (no subtraction,
 *  so no overflow at the extremes). */
int sk_i64_cmp(const void *a, const void *b);
