/* fuzz_id_parse.c: libFuzzer harness for sk_id_parse / sk_id_parse_cstr / sk_id_format
 * (DESIGN.md 3: canonical decimal ids, 1..2^63-1, no sign, no leading zero, no spaces).
 * Built by bench/fuzz.sh (clang -fsanitize=fuzzer,address,undefined), not by CTest.
 *
 * Oracles: sk_id_parse accepts exactly what an independent reference accepts; an
 * accepted id formats back to the same bytes; the cstr variant agrees on NUL-free
 * input; *out is untouched on rejection; sk_id_format of any int64_t (the first 8
 * bytes) fits in SK_ID_STRLEN bytes, the documented buffer size (heap-allocated so
 * AddressSanitizer sees a one-byte overflow). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sk/ids.h"

static int reference_ok(const uint8_t *d, size_t n)
{
        static const char max[] = "9223372036854775807";
        size_t i;

        if (n == 0 || n > 19 || d[0] == '0')
                return 0;
        for (i = 0; i < n; i++)
                if (d[i] < '0' || d[i] > '9')
                        return 0;
        return n < 19 || memcmp(d, max, 19) <= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        int64_t v = 42, w = 42;
        char *copy, *buf;
        int rc;

        rc = sk_id_parse((const char *)data, size, &v);
        if ((rc == 0) != reference_ok(data, size))
                abort();
        if (rc == 0) {
                char out[SK_ID_STRLEN];
                size_t len = sk_id_format(v, out);
                if (v <= 0 || len != size || memcmp(out, data, size) != 0)
                        abort();
        } else if (v != 42) {
                abort();                /* output touched on error */
        }
        copy = malloc(size + 1);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        copy[size] = '\0';
        if (!memchr(data, '\0', size)) {
                if ((sk_id_parse_cstr(copy, &w) == 0) != (rc == 0) || (rc == 0 && w != v))
                        abort();
        } else {
                (void)sk_id_parse_cstr(copy, &w);   /* stops at the NUL: must not crash */
        }
        free(copy);
        if (size >= 8) {
                int64_t any;
                memcpy(&any, data, sizeof(any));
                buf = malloc(SK_ID_STRLEN);
                if (!buf)
                        return 0;
                if (sk_id_format(any, buf) >= SK_ID_STRLEN)
                        abort();
                free(buf);
        }
        return 0;
}
