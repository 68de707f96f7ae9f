/* sk/ids.h: canonical decimal ids (DESIGN.md 3): no sign, no leading zero, no spaces,
 * value 1..2^63-1. The only way ids enter or leave the process as text.
 * Pure functions, thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SK_ID_STRLEN 21 /* any int64_t in decimal, sign included, plus NUL */

/** @brief Parse exactly @p len bytes of @p s as a canonical id into *out.
 *  @returns 0, or -1 (and *out untouched) if not canonical or out of range. */
int sk_id_parse(const char *s, size_t len, int64_t *out);
/** @brief Same for a NUL-terminated string. */
int sk_id_parse_cstr(const char *s, int64_t *out);
/** @brief Write @p id in decimal into @p buf (>= SK_ID_STRLEN bytes). @returns length. */
size_t sk_id_format(int64_t id, char *buf);
