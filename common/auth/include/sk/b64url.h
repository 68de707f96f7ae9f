/* sk/b64url.h: base64url without padding (RFC 4648 section 5, RFC 7515 section 2), the
 * encoding of JWT segments and JWK members. Strict: only the 64 URL-safe characters, no
 * '=' padding, no white space, and the unused low bits of the last character must be
 * zero, so every byte string has exactly one encoding.
 * Pure functions, thread-safe. */
#pragma once
#include <stddef.h>

/** @brief Bytes that sk_b64url_decode() writes for @p len input characters (an upper
 *  bound: exact for valid input). */
#define SK_B64URL_DECODED_MAX(len) (((len) / 4) * 3 + 2)
/** @brief Characters sk_b64url_encode() writes for @p len bytes (no NUL). */
#define SK_B64URL_ENCODED_LEN(len) (((len) / 3) * 4 + ((len) % 3 ? (len) % 3 + 1 : 0))

/** @brief Decode @p len characters of @p s (borrowed) into @p out (@p out_size bytes,
 *  caller's). @returns the number of bytes written, or -1 if @p s is not strict
 *  base64url or does not fit. */
long sk_b64url_decode(const char *s, size_t len, unsigned char *out, size_t out_size);

/** @brief Encode @p len bytes of @p in into @p out (@p out_size bytes, caller's), then a
 *  NUL. @returns the number of characters (without the NUL), or -1 if it does not fit. */
long sk_b64url_encode(const unsigned char *in, size_t len, char *out, size_t out_size);
