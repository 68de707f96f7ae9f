/* fuzz_paybody.c: libFuzzer harness for the payment callback's JSON body
 * (producer/payment_body.c, fr_payment_parse_body; DESIGN.md 13, 15;): the raw
 * bytes a provider signed, as the front hands them over after the signature check (not
 * NUL-terminated). Any input must end in a verdict, never a crash, a leak or a read past
 * the input; an accepted body must give a payment the decision may trust: a positive id
 * whose canonical text parses back to it, a valid txn id and currency, an amount of
 * 0..10^18-1 minor units (abort() otherwise, which libFuzzer reports as a crash).
 * Built and run by bench/fuzz.sh (target paybody); seeds in corpus/paybody. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "payment_body.h"
#include "sk/ids.h"
#include "sk/payment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char idtxt[32];
        sk_payment_t p;
        const char *why;
        int64_t back = 0;

        if (size > 8192)
                return 0;
        memset(&p, 0, sizeof(p));
        why = fr_payment_parse_body((const char *)data, size, &p);
        if (why) {
                if (!*why)
                        abort();        /* a refusal always says why */
                return 0;
        }
        if (p.order_id <= 0 || p.amount_minor < 0 || p.amount_minor > INT64_C(999999999999999999) ||
            !sk_payment_valid_ref(p.txn_id) || !sk_payment_valid_currency(p.currency))
                abort();
        sk_id_format(p.order_id, idtxt);
        if (sk_id_parse_cstr(idtxt, &back) != 0 || back != p.order_id)
                abort();
        return 0;
}
