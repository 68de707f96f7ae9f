/* verify.c: `seckill-admin verify VOUCHER_ID` (DESIGN.md 9). Placeholder until the
 * reconciler's invariant checks land here. */
#include <stdio.h>
#include "admin.h"

int sk_admin_verify(const sk_conf_t *conf, int argc, char **argv)
{
        (void)conf;
        (void)argc;
        (void)argv;
        fprintf(stderr, "seckill-admin: verify is not implemented yet\n");
        return 2;
}
