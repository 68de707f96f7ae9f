/* verify.c: `seckill-admin verify VOUCHER_ID [--json] [--quiesced]` (DESIGN.md 9):
 * invariants 1, 2, 4, 6 and active <= init on the live state, and invariant 3 with
 * --quiesced, with the figures, through sk_verify_voucher() (common/sale/verify.c,
 * shared with the reconciler). Exit 0 iff all hold, 1 if one
 * fails or a dependency failed, 2 for bad arguments or a voucher not in the DB. */
#include <stdio.h>
#include "sk/ids.h"
#include "sk/verify.h"
#include "admin.h"

int sk_admin_verify(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        sk_verify_report_t rep;
        char errstr[512];
        int64_t voucher_id;
        sk_err_t err;
        int quiesced;

        if (o->nargs != 1 || sk_id_parse_cstr(o->args[0], &voucher_id) != 0) {
                fprintf(stderr, "seckill-admin: usage: verify VOUCHER_ID [--json] [--quiesced] "
                        "(VOUCHER_ID canonical decimal 1..9223372036854775807)\n");
                return 2;
        }
        err = sk_verify_voucher(conf, voucher_id, &rep, errstr, sizeof(errstr));
        if (err == SK_ENOTFOUND) {
                fprintf(stderr, "seckill-admin: %s\n", errstr);
                return 2;
        }
        if (err != SK_OK) {
                fprintf(stderr, "seckill-admin: verify: %s\n", errstr);
                return 1;
        }
        quiesced = o->quiesced;
        sk_verify_print(stdout, &rep, o->json, quiesced);
        return sk_verify_passed(&rep, quiesced) ? 0 : 1;
}
