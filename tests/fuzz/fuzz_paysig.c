/* fuzz_paysig.c: libFuzzer harness for the payment callback's signature check
 * (common/auth/paysig.c; DESIGN.md 13, 15;): the first byte picks what the
 * rest of the input is —
 *   0: a payment keys file's text (sk_keyfile_set_parse of sk_paysig_keyfile);
 *   1: "X-Payment-Signature value" 0x00 "raw body", verified against a fixed key set at
 *      a fixed clock (t parsing, the v1 list, hex, the window, the HMAC compare);
 *   2: "t decimal" 0x00 "raw body": the harness signs it with the set's first secret and
 *      verifies its own header, so the success path (and a stale t) is reached too.
 * Any input must end in a verdict, never a crash, a leak or a read past the input.
 * Built and run by bench/fuzz.sh (target paysig). The callback's JSON body has its own
 * harness, fuzz_paybody.c (producer/payment_body.c). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/paysig.h"

#define NOW_S 1800000000

static const char secrets[] = "first-secret-of-the-fuzzing-harness\nsecond-secret-for-rotation-tests\n";
static sk_keyfile_set_t *g_keys;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        char err[256];

        (void)argc;
        (void)argv;
        g_keys = sk_keyfile_set_parse(&sk_paysig_keyfile, secrets, sizeof(secrets) - 1, err, sizeof(err));
        if (!g_keys) {
                fprintf(stderr, "fuzz_paysig: setup: %s\n", err);
                exit(1);
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *sep;
        char err[256], *hdr;
        const char *why;
        size_t hl;

        if (size < 1 || size > 8192)
                return 0;
        if (data[0] % 3 == 0) {
                sk_keyfile_set_t *k = sk_keyfile_set_parse(&sk_paysig_keyfile, (const char *)data + 1, size - 1, err, sizeof(err));

                sk_keyfile_set_free(k);
                return 0;
        }
        sep = memchr(data + 1, 0, size - 1);
        hl = sep ? (size_t)(sep - (data + 1)) : size - 1;
        if (!(hdr = malloc(hl + 160)))
                return 0;
        memcpy(hdr, data + 1, hl);
        hdr[hl] = '\0';
        if (data[0] % 3 == 2) {
                /* header = "t=<the input's t>,v1=<our own signature of the body>" */
                char hex[65];
                int64_t t = 0;
                size_t i;

                for (i = 0; i < hl && i < 15 && hdr[i] >= '0' && hdr[i] <= '9'; i++)
                        t = t * 10 + (hdr[i] - '0');
                if (sk_paysig_sign("first-secret-of-the-fuzzing-harness", 35, t, sep ? sep + 1 : (const uint8_t *)"",
                                   sep ? size - 2 - hl : 0, hex) == 0) {
                        snprintf(hdr, hl + 160, "t=%lld,v1=%s", (long long)t, hex);
                }
        }
        (void)sk_paysig_verify(g_keys, hdr, sep ? sep + 1 : (const uint8_t *)"", sep ? size - 2 - hl : 0,
                               NOW_S, 300, &why);
        free(hdr);
        return 0;
}
