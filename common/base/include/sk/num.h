/* sk/num.h: whole base-10 numbers within a range (common/base/num.c). Not for 64-bit ids:
 * those are sk/ids.h. Pure and thread-safe. */
#pragma once

/** @brief Parse a whole base-10 string within [min, max] into *out.
 *  Leading white space, trailing bytes and overflow are refused.
 *  @returns 0, or -1 with *out untouched. */
int sk_parse_long(const char *s, long min, long max, long *out);
int sk_parse_int(const char *s, long min, long max, int *out);
