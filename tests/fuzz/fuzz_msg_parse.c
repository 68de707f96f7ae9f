/* fuzz_msg_parse.c: libFuzzer harness for sk_msg_parse, the Kafka order message parser
 * (DESIGN.md 5; the consumer's first contact with bytes from the topic, so poison must
 * be a clean SK_EINVAL, never a crash). Built by bench/fuzz.sh, not by CTest.
 *
 * Oracles: on success every field obeys the contract (ids 1..2^63-1, deductQty >= 1,
 * beforeQty/afterQty >= 0, after = before - deduct) and format -> parse round-trips to
 * the same struct in at most SK_MSG_MAX bytes; on failure errstr is a NUL-terminated
 * reason within its buffer. The input is not NUL-terminated (len is exact). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sk/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        sk_order_msg_t m, m2;
        char errstr[128], *in, out[SK_MSG_MAX];
        size_t len;
        sk_err_t err;

        /* An exact-size heap copy: a read past len is an ASan report. */
        in = malloc(size ? size : 1);
        if (!in)
                return 0;
        memcpy(in, data, size);
        memset(errstr, 'x', sizeof(errstr));
        memset(&m, 0, sizeof(m));
        err = sk_msg_parse(in, size, &m, errstr, sizeof(errstr));
        free(in);
        if (err != SK_OK) {
                if (!memchr(errstr, '\0', sizeof(errstr)))
                        abort();
                return 0;
        }
        if (m.trace_id <= 0 || m.order_id <= 0 || m.user_id <= 0 || m.voucher_id <= 0 ||
            m.deduct_qty < 1 || m.before_qty < 0 || m.after_qty < 0 ||
            m.after_qty != m.before_qty - m.deduct_qty || m.ts_ms < 0)
                abort();
        len = sk_msg_format(&m, out, sizeof(out));
        if (len == 0 || len >= sizeof(out))
                abort();
        memset(&m2, 0, sizeof(m2));
        if (sk_msg_parse(out, len, &m2, errstr, sizeof(errstr)) != SK_OK ||
            memcmp(&m, &m2, sizeof(m)) != 0)
                abort();
        return 0;
}
