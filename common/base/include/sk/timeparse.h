/* sk/timeparse.h: the time format of `seckill-admin voucher create --begin/--end`
 * (DESIGN.md 2): epoch seconds or ISO-8601 with a zone. Pure, thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/** @brief Parse @p s: epoch seconds ("1764439200", up to 253402300799) or ISO-8601 with a
 *  zone ("2026-11-29T18:00:00Z", "...+08:00", "...-0500", "...+08"; 'T', 't' or a space
 *  between date and time; seconds optional; a fraction of 1..9 digits after '.' or ','
 *  kept to the millisecond). A time without a zone is ambiguous and rejected; so is a
 *  date out of range (Feb 29 of a common year, hour 24...) or a time before 1970.
 *  @returns 0 and *out_ms (ms since the Unix epoch, UTC), or -1 with the reason in
 *  @p errstr and *out_ms untouched. */
int sk_time_parse(const char *s, int64_t *out_ms, char *errstr, size_t errstr_size);
