/* b64url.c: strict base64url without padding (sk/b64url.h), for JWT segments and JWK
 * members (DESIGN.md 15). What it does not do: accept padding, white space or the
 * '+' '/' alphabet of plain base64 — a token carrying those is malformed. */
#include <stdint.h>

#include "sk/b64url.h"

static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* value + 1 of each character of the alphabet, 0 for any other byte: a table read
 * instead of five range tests per character on the JWT hot path. */
static const unsigned char table[256] = {
        ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7,
        ['H'] = 8, ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14,
        ['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21,
        ['V'] = 22, ['W'] = 23, ['X'] = 24, ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28,
        ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35,
        ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
        ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49,
        ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
        ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['-'] = 63,
        ['_'] = 64,
};

long sk_b64url_decode(const char *s, size_t len, unsigned char *out, size_t out_size)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t i = 0, n = 0, whole = len / 4 * 4;
        uint32_t acc = 0;
        int bits = 0;

        if (len % 4 == 1)       /* one character carries 6 bits: never a whole byte */
                return -1;
        /* Four characters at a time are three whole bytes. */
        for (; i < whole; i += 4) {
                unsigned a = table[u[i]], b = table[u[i + 1]], c = table[u[i + 2]], d = table[u[i + 3]];
                uint32_t v;

                if (!a || !b || !c || !d)
                        return -1;
                if (out_size - n < 3)
                        return -1;
                v = (a - 1) << 18 | (b - 1) << 12 | (c - 1) << 6 | (d - 1);
                out[n++] = (unsigned char)(v >> 16);
                out[n++] = (unsigned char)(v >> 8);
                out[n++] = (unsigned char)v;
        }
        /* The last 2 or 3 characters: 1 or 2 bytes. */
        for (; i < len; i++) {
                unsigned v = table[u[i]];

                if (!v)
                        return -1;
                acc = (acc << 6) | (uint32_t)(v - 1);
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
