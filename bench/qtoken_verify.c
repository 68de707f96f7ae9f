/* bench/qtoken_verify.c: the front's cost of one admission check (DESIGN.md 18 budget:
 * token check <= 2 us of front CPU), for bench/queue.sh. Signs N distinct tokens (not
 * timed; 3 keys, the first signing, as after a rotation), then times sk_qtoken_verify
 * (the call fr_room_purchase_check makes on an HTTP thread) once per token with the right
 * voucher and user, and once per token with another user (refused after the HMAC), and
 * prints microseconds per call (CLOCK_PROCESS_CPUTIME_ID: the CPU the check costs). A
 * benchmark tool: built, never installed; asserts nothing but that the right tokens pass.
 *   qtoken_verify [N]     (N default 200000)
 * Exit 0, or 1 if a token that should pass did not (a broken build, not a figure). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sk/queue_token.h"

static double cpu_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
        static const char text[] = "k3 bench-third-secret-0123456789abcdef\n"
                                   "k2 bench-second-secret-0123456789abcdef\n"
                                   "k1 bench-first-secret-0123456789abcdef\n";
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
        char errstr[256];
        sk_keyfile_set_t *keys;
        char *toks;
        int64_t vid = 386844657172086784LL, now = 1796298165100LL;
        double t0, ok_us, wrong_us;
        long bad = 0;

        if (n < 1 || n > 10000000) {
                fprintf(stderr, "usage: qtoken_verify [N 1..10000000]\n");
                return 2;
        }
        if (!(keys = sk_keyfile_set_parse(&sk_qtoken_keyfile, text, strlen(text), errstr, sizeof(errstr)))) {
                fprintf(stderr, "qtoken_verify: keys: %s\n", errstr);
                return 2;
        }
        if (!(toks = malloc((size_t)n * (SK_QTOKEN_MAX + 1)))) {
                fprintf(stderr, "qtoken_verify: out of memory\n");
                return 2;
        }
        for (long i = 0; i < n; i++) {
                sk_qtoken_t t = { .voucher_id = vid, .user_id = 1000000000000LL + i,
                                  .position = i + 1, .expiry_ms = now + 600000 };

                snprintf(t.generation, sizeof(t.generation), "a81cab6254c1185c");
                if (sk_qtoken_sign(keys, &t, toks + (size_t)i * (SK_QTOKEN_MAX + 1), SK_QTOKEN_MAX + 1) != 0) {
                        fprintf(stderr, "qtoken_verify: sign failed\n");
                        return 2;
                }
        }
        t0 = cpu_us();
        for (long i = 0; i < n; i++)
                if (sk_qtoken_verify(keys, toks + (size_t)i * (SK_QTOKEN_MAX + 1), vid, 1000000000000LL + i, now,
                                     NULL) != SK_QTOKEN_OK)
                        bad++;
        ok_us = (cpu_us() - t0) / (double)n;
        t0 = cpu_us();
        for (long i = 0; i < n; i++)
                if (sk_qtoken_verify(keys, toks + (size_t)i * (SK_QTOKEN_MAX + 1), vid, 7, now, NULL) == SK_QTOKEN_OK)
                        bad++;
        wrong_us = (cpu_us() - t0) / (double)n;
        printf("token_check_us=%.3f (valid, budget <= 2) token_check_wrong_user_us=%.3f n=%ld\n", ok_us, wrong_us, n);
        free(toks);
        sk_keyfile_set_free(keys);
        if (bad) {
                fprintf(stderr, "qtoken_verify: %ld tokens verified wrongly\n", bad);
                return 1;
        }
        return 0;
}
