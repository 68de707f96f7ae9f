/* paysig.c: the payment provider's webhook signature of DESIGN.md 15 (sk/paysig.h):
 * the secrets file, HMAC-SHA256 over t + "." + raw body with OpenSSL, the header's
 * parts, and the constant-time comparison (CRYPTO_memcmp) against every secret.
 * What it does not do: read the clock or files on its own schedule (the caller does). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sk/err.h"
#include "sk/paysig.h"

#define PAYSIG_FILE_MAX (64 * 1024)

struct sk_paysig_keys {
        atomic_int refs;        /* the only field that changes after parse */
        size_t n;
        size_t len[SK_PAYSIG_MAX_KEYS];
        unsigned char secret[SK_PAYSIG_MAX_KEYS][SK_PAYSIG_MAX_SECRET];
};

sk_paysig_keys_t *sk_paysig_keys_parse(const char *text, size_t len, char *errstr,
                                       size_t errstr_size)
{
        sk_paysig_keys_t *keys = calloc(1, sizeof(*keys));
        size_t pos = 0;
        int line = 0;

        if (!keys) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        atomic_init(&keys->refs, 1);
        while (pos < len) {
                size_t start = pos, end;

                while (pos < len && text[pos] != '\n')
                        pos++;
                end = pos;
                pos++; /* past the '\n' (or the end) */
                line++;
                while (end > start && (text[end - 1] == '\r' || text[end - 1] == ' ' ||
                                       text[end - 1] == '\t'))
                        end--;
                if (end == start || text[start] == '#')
                        continue;
                if (memchr(text + start, '\0', end - start)) {
                        sk_seterr(errstr, errstr_size, "line %d: a NUL byte in a secret", line);
                        goto fail;
                }
                if (end - start < SK_PAYSIG_MIN_SECRET || end - start > SK_PAYSIG_MAX_SECRET) {
                        sk_seterr(errstr, errstr_size, "line %d: a secret must be %d..%d bytes", line,
                                  SK_PAYSIG_MIN_SECRET, SK_PAYSIG_MAX_SECRET);
                        goto fail;
                }
                if (keys->n == SK_PAYSIG_MAX_KEYS) {
                        sk_seterr(errstr, errstr_size, "more than %d secrets", SK_PAYSIG_MAX_KEYS);
                        goto fail;
                }
                memcpy(keys->secret[keys->n], text + start, end - start);
                keys->len[keys->n++] = end - start;
        }
        if (keys->n == 0) {
                sk_seterr(errstr, errstr_size, "no secret in the file");
                goto fail;
        }
        return keys;
fail:
        sk_paysig_keys_free(keys);
        return NULL;
}

sk_paysig_keys_t *sk_paysig_keys_load(const char *path, char *errstr, size_t errstr_size)
{
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        size_t n;
        sk_paysig_keys_t *keys = NULL;

        if (!f) {
                sk_seterr(errstr, errstr_size, "cannot open the payment keys file");
                return NULL;
        }
        if (!(buf = malloc(PAYSIG_FILE_MAX + 1))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                goto done;
        }
        n = fread(buf, 1, PAYSIG_FILE_MAX + 1, f);
        if (ferror(f)) {
                sk_seterr(errstr, errstr_size, "cannot read the payment keys file");
                goto done;
        }
        if (n > PAYSIG_FILE_MAX) {
                sk_seterr(errstr, errstr_size, "the payment keys file is over %d bytes",
                          PAYSIG_FILE_MAX);
                goto done;
        }
        keys = sk_paysig_keys_parse(buf, n, errstr, errstr_size);
done:
        if (buf) {
                OPENSSL_cleanse(buf, PAYSIG_FILE_MAX + 1);
                free(buf);
        }
        fclose(f);
        return keys;
}

size_t sk_paysig_keys_count(const sk_paysig_keys_t *keys)
{
        return keys ? keys->n : 0;
}

sk_paysig_keys_t *sk_paysig_keys_ref(sk_paysig_keys_t *keys)
{
        if (keys)
                atomic_fetch_add(&keys->refs, 1);
        return keys;
}

void sk_paysig_keys_free(sk_paysig_keys_t *keys)
{
        if (!keys || atomic_fetch_sub(&keys->refs, 1) != 1)
                return;
        OPENSSL_cleanse(keys, sizeof(*keys));
        free(keys);
}

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

sk_paysig_res_t sk_paysig_verify(const sk_paysig_keys_t *keys, const char *header,
                                 const void *body, size_t body_len, int64_t now_s,
                                 int tolerance_s, const char **why)
{
        unsigned char v1[SK_PAYSIG_MAX_V1][32], mac[32];
        int nv1 = 0, have_t = 0, match = 0;
        int64_t t = 0;
        const char *p = header, *dummy;
        size_t k;
        int i;

        if (!why)
                why = &dummy;
        if (!keys || !keys->n) {
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
        for (k = 0; k < keys->n; k++) {
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
