/* queue_int.h: the inside the waiting room's signed texts share (queue_token.c,
 * queue_ticket.c, queue_sig.c; DESIGN.md 18): the signature of an admission token and of a
 * position ticket, base64url without padding of HMAC-SHA256 (OpenSSL) over everything
 * before the text's last '.', sealed onto the text and checked in constant time
 * (CRYPTO_memcmp); the split into fields and the two field checks both texts use.
 * What it does not do: know a text's fields or its keys (each file parses its own).
 * Thread-safety: every function is thread-safe: the only state is each thread's own keyed
 * HMAC contexts (queue_sig.c, freed and wiped when the thread ends) and the HMAC algorithm,
 * fetched once. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK__QSIG_B64 43                 /* base64url of 32 bytes, no padding */

/** @brief The signature of @p msg (@p len bytes, borrowed) under @p key (@p key_len
 *  bytes, borrowed): SK__QSIG_B64 base64url characters and a NUL into @p out; the MAC is
 *  wiped. @returns 0, or -1 (OpenSSL failure). Any thread. */
int sk__qsig_b64(const void *key, size_t key_len, const char *msg, size_t len,
                 char out[SK__QSIG_B64 + 1]);

/** @brief Seal the text @p out[0..@p n) (NUL-terminated at @p n, in a buffer of at least
 *  @p max + 1 bytes): append '.' and its signature under @p key (@p key_len bytes,
 *  borrowed) and the NUL. @returns 0, or -1 (@p n not positive, the sealed text over
 *  @p max bytes, or OpenSSL failure; @p out then holds no signature). Any thread. */
int sk__qsig_seal(const void *key, size_t key_len, char *out, int n, size_t max);

/** @brief 1 if @p sig (SK__QSIG_B64 bytes, borrowed) is the signature of @p msg (@p len
 *  bytes, borrowed) under @p key (@p key_len bytes), compared in constant time; 0 if not
 *  or OpenSSL failed. Any thread. */
int sk__qsig_check(const void *key, size_t key_len, const char *msg, size_t len,
                   const char *sig);

#define SK__QFIELDS 8                   /* fields of a token or a ticket, the signature last */

/** @brief Split @p text (borrowed, NUL-terminated) at its first SK__QFIELDS - 1 dots:
 *  each field's start into @p f and length into @p len (pointers into @p text); the last
 *  field runs to the end of @p text, dots included. @returns the number of fields
 *  (1..SK__QFIELDS; fewer when @p text has fewer dots). */
size_t sk__qfields(const char *text, const char *f[SK__QFIELDS], size_t len[SK__QFIELDS]);

/** @brief 1 if @p g (@p n bytes) is a room generation: 1..16 lowercase hex digits. */
int sk__qgen_ok(const char *g, size_t n);

/** @brief The canonical decimal number 0..10^15 of @p p (@p n bytes), or -1 if it is not
 *  one (empty, a leading zero, a non-digit, over 15 digits). */
int64_t sk__qnum_field(const char *p, size_t n);
