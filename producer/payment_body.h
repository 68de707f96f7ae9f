/* producer/payment_body.h: the body of POST /api/v1/payments/callback (DESIGN.md 13, 15),
 * parsed on the HTTP thread after the signature check (producer/payment.c); its own file
 * so that the libFuzzer harness tests/fuzz/fuzz_paybody.c reaches it without the route. */
#pragma once
#include <stddef.h>

#include "sk/payment.h"

/** @brief Parse the callback body @p body (@p len bytes, need not be NUL-terminated; the
 *  raw bytes the signature covered): one strict JSON object (sk/json_strict.h: unique
 *  member names at every level, no NUL or \u0000, only white space around it) whose
 *  members "orderId" (a canonical
 *  decimal id), "providerTxnId" (1..128 printable ASCII bytes), "amount" (minor units, a
 *  canonical decimal of at most 18 digits) and "currency" (three letters A-Z) are JSON
 *  strings; other members are ignored. Fills *p (order_id, txn_id, amount_minor,
 *  currency) on success; on failure *p may be partly written. Pure (cJSON allocates and
 *  frees its tree inside); thread-safe.
 *  @returns NULL, or what is wrong as a static string for the 400/10001 answer (a
 *  permanent error of the input; it never quotes the input). */
const char *fr_payment_parse_body(const char *body, size_t len, sk_payment_t *p);
