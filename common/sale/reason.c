/* reason.c: the failure reasons of DESIGN.md 7-8 and the rollback.lua flags each one
 * implies (sk/reason.h, DESIGN.md 4 "Flags by reason"): one table. */
#include <stddef.h>
#include <string.h>

#include "sk/reason.h"

static const struct {
        sk_reason_t reason;
        const char *name;
        int restore, release, clamp;   /* DESIGN.md 4, "Flags by reason" */
} reasons[] = {
        { SK_REASON_NONE,           "none",           0, 0, 0 },
        { SK_REASON_SOLD_OUT,       "sold_out",       0, 1, 1 },
        { SK_REASON_HAS_ORDER,      "has_order",      1, 0, 0 },
        { SK_REASON_LOST,           "lost",           1, 1, 0 },
        { SK_REASON_FRONT_ROLLBACK, "front_rollback", 1, 1, 0 },
};
#define NREASONS (sizeof(reasons) / sizeof(reasons[0]))

const char *sk_reason_str(sk_reason_t r)
{
        for (size_t i = 0; i < NREASONS; i++)
                if (reasons[i].reason == r)
                        return reasons[i].name;
        return "unknown";
}

int sk_reason_parse(const char *s, sk_reason_t *out)
{
        if (!s)
                return -1;
        for (size_t i = 0; i < NREASONS; i++)
                if (strcmp(reasons[i].name, s) == 0) {
                        *out = reasons[i].reason;
                        return 0;
                }
        return -1;
}

void sk_reason_flags(sk_reason_t r, int *restore, int *release, int *clamp)
{
        *restore = *release = *clamp = 0;
        for (size_t i = 0; i < NREASONS; i++)
                if (reasons[i].reason == r) {
                        *restore = reasons[i].restore;
                        *release = reasons[i].release;
                        *clamp = reasons[i].clamp;
                        return;
                }
}
