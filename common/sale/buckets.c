/* buckets.c: the split of a voucher's stock over its buckets (sk/buckets.h, DESIGN.md
 * 14). Pure, thread-safe. */
#include "sk/buckets.h"
#include "sk/keys.h"

int64_t sk_bucket_share(int64_t total, int n, int b)
{
        if (n < 1 || n > SK_BUCKETS_MAX || b < 0 || b >= n || total < 0)
                return 0;
        return total / n + (b < total % n ? 1 : 0);
}
