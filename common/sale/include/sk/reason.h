/* sk/reason.h: the failure reasons of a purchase (DESIGN.md 7-8) and the rollback.lua
 * flags each implies (DESIGN.md 4, "Flags by reason"), as one table (common/sale/reason.c).
 * Pure and thread-safe. */
#pragma once

typedef enum {
        SK_REASON_NONE = 0,
        SK_REASON_SOLD_OUT,        /* DB stock exhausted: release user, no restore, clamp */
        SK_REASON_HAS_ORDER,       /* user already has an active order: restore, keep user */
        SK_REASON_LOST,            /* re-drives exhausted: restore and release */
        SK_REASON_FRONT_ROLLBACK,  /* the front fenced it: restore and release */
} sk_reason_t;

/** @brief The stored name of @p r ("sold_out", ...), "unknown" for none of them. Pure. */
const char *sk_reason_str(sk_reason_t r);
/** @returns 0 and *out, or -1 for an unknown string. */
int sk_reason_parse(const char *s, sk_reason_t *out);
/** @brief rollback.lua flags of DESIGN.md 4 for @p r. *clamp = 1: clamp to DB stock. */
void sk_reason_flags(sk_reason_t r, int *restore, int *release, int *clamp);
