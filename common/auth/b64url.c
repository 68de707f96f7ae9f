/* b64url.c: strict base64url without padding (sk/b64url.h), for JWT segments and JWK
 * members (DESIGN.md 15). What it does not do: accept padding, white space or the
 * '+' '/' alphabet of plain base64 — a token carrying those is malformed. */
#include <stdint.h>

#include "sk/b64url.h"

static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int value_of(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '-')
                return 62;
        if (c == '_')
                return 63;
        return -1;
}

long sk_b64url_decode(const char *s, size_t len, unsigned char *out, size_t out_size)
{
        size_t i, n = 0;
        uint32_t acc = 0;
        int bits = 0;

        if (len % 4 == 1)       /* one character carries 6 bits: never a whole byte */
                return -1;
        for (i = 0; i < len; i++) {
                int v = value_of((unsigned char)s[i]);

                if (v < 0)
                        return -1;
                acc = (acc << 6) | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (n >= out_size)
                                return -1;
                        out[n++] = (unsigned char)(acc >> bits);
                        acc &= (1u << bits) - 1;
                }
        }
        /* The leftover bits (2 or 4) must be zero: one encoding per byte string. */
        if (acc != 0)
                return -1;
        return (long)n;
}

long sk_b64url_encode(const unsigned char *in, size_t len, char *out, size_t out_size)
{
        size_t i, n = 0;
        uint32_t acc = 0;
        int bits = 0;

        if (SK_B64URL_ENCODED_LEN(len) + 1 > out_size)
                return -1;
        for (i = 0; i < len; i++) {
                acc = (acc << 8) | in[i];
                bits += 8;
                while (bits >= 6) {
                        bits -= 6;
                        out[n++] = alphabet[(acc >> bits) & 63];
                }
                acc &= (1u << bits) - 1;
        }
        if (bits > 0)
                out[n++] = alphabet[(acc << (6 - bits)) & 63];
        out[n] = '\0';
        return (long)n;
}
