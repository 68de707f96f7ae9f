/* paysig.c: the payment provider's webhook signature of DESIGN.md 15 (sk/paysig.h):
 * the secrets file (read by sk/keyfile.h, each line one secret), HMAC-SHA256 over
 * t + "." + raw body with OpenSSL, the header's parts, and the constant-time comparison
 * (CRYPTO_memcmp) against every secret.
 * What it does not do: read the clock or files on its own schedule (the caller does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sk/err.h"
#include "sk/keyfile.h"
#include "sk/paysig.h"

/* The parsed secrets: the body of a payment key set (sk/keyfile.h). */
typedef struct paysig_keys {
        size_t len[SK_PAYSIG_MAX_KEYS];
        unsigned char secret[SK_PAYSIG_MAX_KEYS][SK_PAYSIG_MAX_SECRET];
} paysig_keys_t;

/* One kept line of the secrets file: the secret is the whole line (sk/keyfile.h). */
static int secret_line(void *arg, const char *line, size_t len, int lineno, size_t index,
                       char *errstr, size_t errstr_size)
{
        paysig_keys_t *keys = arg;

        (void)lineno;
        if (len < SK_PAYSIG_MIN_SECRET || len > SK_PAYSIG_MAX_SECRET) {
                sk_seterr(errstr, errstr_size, "a secret must be %d..%d bytes",
                          SK_PAYSIG_MIN_SECRET, SK_PAYSIG_MAX_SECRET);
                return -1;
        }
        memcpy(keys->secret[index], line, len);
        keys->len[index] = len;
        return 0;
}

const sk_keyfile_kind_t sk_paysig_keyfile = {
        .what = "payment keys file", .max_lines = SK_PAYSIG_MAX_KEYS,
        .body_size = sizeof(paysig_keys_t), .on_line = secret_line,
};

/* HMAC-SHA256(secret, t "." body) into mac (32 bytes). @returns 0 or -1. */
static int mac_of(const void *secret, size_t secret_len, int64_t t, const void *body,
                  size_t body_len, unsigned char mac[32])
{
        char prefix[32];
        int plen = snprintf(prefix, sizeof(prefix), "%lld.", (long long)t);
        unsigned char *msg;
        unsigned int mac_len = 0;
        int rc = -1;

        if (plen <= 0 || (size_t)plen >= sizeof(prefix))
                return -1;
        if (!(msg = malloc((size_t)plen + body_len + 1)))
                return -1;
        memcpy(msg, prefix, (size_t)plen);
        if (body_len)
                memcpy(msg + plen, body, body_len);
        if (HMAC(EVP_sha256(), secret, (int)secret_len, msg, (size_t)plen + body_len, mac,
                 &mac_len) && mac_len == 32)
                rc = 0;
        free(msg);
        return rc;
}

int sk_paysig_sign(const void *secret, size_t secret_len, int64_t t, const void *body,
                   size_t body_len, char hex[65])
{
        static const char digits[] = "0123456789abcdef";
        unsigned char mac[32];
        int i;

        if (mac_of(secret, secret_len, t, body, body_len, mac) != 0)
                return -1;
        for (i = 0; i < 32; i++) {
                hex[2 * i] = digits[mac[i] >> 4];
                hex[2 * i + 1] = digits[mac[i] & 15];
        }
        hex[64] = '\0';
        return 0;
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* 64 hex digits at s[0..len) into out (32 bytes). @returns 0 or -1. */
static int parse_hex32(const char *s, size_t len, unsigned char out[32])
{
        size_t i;

        if (len != 64)
                return -1;
        for (i = 0; i < 32; i++) {
                int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -1;
                out[i] = (unsigned char)(hi << 4 | lo);
        }
        return 0;
}

/* Canonical decimal seconds (no sign, no leading zero, at most 12 digits). */
static int parse_t(const char *s, size_t len, int64_t *out)
{
        int64_t v = 0;
        size_t i;

        if (len == 0 || len > 12 || (len > 1 && s[0] == '0'))
                return -1;
        for (i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        *out = v;
        return 0;
}

sk_paysig_res_t sk_paysig_verify(const sk_keyfile_set_t *set, const char *header,
                                 const void *body, size_t body_len, int64_t now_s,
                                 int tolerance_s, const char **why)
{
        const paysig_keys_t *keys = sk_keyfile_set_body(set, &sk_paysig_keyfile);
        size_t nkeys = sk_keyfile_set_count(set);
        unsigned char v1[SK_PAYSIG_MAX_V1][32], mac[32];
        int nv1 = 0, have_t = 0, match = 0;
        int64_t t = 0;
        const char *p = header, *dummy;
        size_t k;
        int i;

        if (!why)
                why = &dummy;
        if (!keys || !nkeys) {
                *why = "no payment keys";
                return SK_PAYSIG_BAD;
        }
        if (!header || !*header) {
                *why = "missing X-Payment-Signature";
                return SK_PAYSIG_MALFORMED;
        }
        while (*p) {
                const char *start, *end, *eq;

                while (*p == ' ' || *p == '\t')
                        p++;
                start = p;
                while (*p && *p != ',')
                        p++;
                end = p;
                if (*p == ',')
                        p++;
                while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
                        end--;
                if (end == start)
                        continue;
                eq = memchr(start, '=', (size_t)(end - start));
                if (!eq) {
                        *why = "signature part without '='";
                        return SK_PAYSIG_MALFORMED;
                }
                if (eq - start == 1 && start[0] == 't') {
                        if (have_t || parse_t(eq + 1, (size_t)(end - eq - 1), &t) != 0) {
                                *why = "bad or repeated t=";
                                return SK_PAYSIG_MALFORMED;
                        }
                        have_t = 1;
                } else if (eq - start == 2 && start[0] == 'v' && start[1] == '1') {
                        if (nv1 == SK_PAYSIG_MAX_V1)
                                continue; /* more than we read: ignored */
                        if (parse_hex32(eq + 1, (size_t)(end - eq - 1), v1[nv1]) != 0) {
                                *why = "v1= is not 64 hex digits";
                                return SK_PAYSIG_MALFORMED;
                        }
                        nv1++;
                } /* other schemes (v0=, v2=, ...) are not ours: ignored */
        }
        if (!have_t || !nv1) {
                *why = have_t ? "no v1=" : "no t=";
                return SK_PAYSIG_MALFORMED;
        }
        if (t < now_s - tolerance_s || t > now_s + tolerance_s) {
                *why = "t outside the tolerance";
                return SK_PAYSIG_STALE;
        }
        /* Every secret against every v1: the work does not depend on which one matched. */
        for (k = 0; k < nkeys; k++) {
                if (mac_of(keys->secret[k], keys->len[k], t, body, body_len, mac) != 0) {
                        *why = "HMAC failed";
                        return SK_PAYSIG_BAD;
                }
                for (i = 0; i < nv1; i++)
                        match |= CRYPTO_memcmp(mac, v1[i], sizeof(mac)) == 0;
        }
        OPENSSL_cleanse(mac, sizeof(mac));
        if (!match) {
                *why = "no v1= matches a payment key";
                return SK_PAYSIG_BAD;
        }
        *why = "ok";
        return SK_PAYSIG_OK;
}
