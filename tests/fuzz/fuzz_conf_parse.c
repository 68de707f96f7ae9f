/* fuzz_conf_parse.c: libFuzzer harness for the other text parsers that take outside
 * input: the SECKILL_REDIS_URL / SECKILL_MYSQL_URL / SECKILL_HTTP_ADDR parsers
 * (sk/conf.h), sk_parse_long, the SECKILL_FAILPOINTS spec (sk/failpoint.h) and the
 * claim record read back from Redis (sk_claim_parse, sk/traceset.h: Redis may hold
 * anything). Built by bench/fuzz.sh, not by CTest. The first byte picks the parser; the
 * rest is the NUL-terminated text.
 *
 * Oracles: no crash or sanitizer report; on success the outputs obey their contract
 * (ports 1..65535, Redis db 0..15, database name [A-Za-z0-9_]+, strings terminated
 * within their arrays, values within [min, max]); on failure the outputs are untouched
 * where the contract says so (sk_parse_long) and errstr is terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sk/conf.h"
#include "sk/failpoint.h"
#include "sk/traceset.h"

static void terminated(const char *s, size_t size)
{
        if (!memchr(s, '\0', size))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s, errstr[128];
        size_t i;

        if (size < 1)
                return 0;
        s = malloc(size);
        if (!s)
                return 0;
        memcpy(s, data + 1, size - 1);
        s[size - 1] = '\0';
        memset(errstr, 'x', sizeof(errstr));
        switch (data[0] % 6) {
        case 0: {
                sk_redis_url_t u;
                memset(&u, 'x', sizeof(u));
                if (sk_redis_url_parse(s, &u, errstr, sizeof(errstr)) == 0) {
                        terminated(u.host, sizeof(u.host));
                        terminated(u.password, sizeof(u.password));
                        if (u.port < 1 || u.port > 65535 || u.db < 0 || u.db > 15 || !u.host[0])
                                abort();
                } else {
                        terminated(errstr, sizeof(errstr));
                }
                break;
        }
        case 1: {
                sk_mysql_url_t u;
                memset(&u, 'x', sizeof(u));
                if (sk_mysql_url_parse(s, &u, errstr, sizeof(errstr)) == 0) {
                        terminated(u.user, sizeof(u.user));
                        terminated(u.password, sizeof(u.password));
                        terminated(u.host, sizeof(u.host));
                        terminated(u.database, sizeof(u.database));
                        if (u.port < 1 || u.port > 65535 || !u.database[0])
                                abort();
                        for (i = 0; u.database[i]; i++) {
                                char c = u.database[i];
                                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                      (c >= '0' && c <= '9') || c == '_'))
                                        abort();
                        }
                } else {
                        terminated(errstr, sizeof(errstr));
                }
                break;
        }
        case 2: {
                char host[64];
                int port = -7;
                memset(host, 'x', sizeof(host));
                if (sk_hostport_parse(s, host, sizeof(host), &port) == 0) {
                        terminated(host, sizeof(host));
                        if (port < 1 || port > 65535)
                                abort();
                }
                break;
        }
        case 3: {
                long v = 12345;
                if (sk_parse_long(s, -1000, 1000000, &v) == 0) {
                        if (v < -1000 || v > 1000000)
                                abort();
                } else if (v != 12345) {
                        abort();
                }
                break;
        }
        case 4:
                if (sk_failpoint_setup(s, errstr, sizeof(errstr)) != 0)
                        terminated(errstr, sizeof(errstr));
                /* Evaluate a point that is never "exit" here: the spec may name any. */
                if (!strstr(s, "exit"))
                        (void)sk_failpoint_eval("fuzz.point");
                sk_failpoint_setup(NULL, errstr, sizeof(errstr));
                break;
        default: {
                sk_claim_rec_t c;
                sk_claim_parse(s, &c);
                /* claim.lua only ever increments the counters, but Redis may hold
                 * anything: only what sk_claim_parse promises is checked. */
                if ((c.consumed != 0 && c.consumed != 1) ||
                    (c.partition < 0) != (c.offset < 0) || c.partition < -1 || c.offset < -1)
                        abort();
                break;
        }
        }
        free(s);
        return 0;
}
