/* fuzz_paybody.c: libFuzzer harness for the payment callback's JSON body
 * (producer/payment_body.c, fr_payment_parse_body; DESIGN.md 13, 15;): the raw
 * bytes a provider signed, as the front hands them over after the signature check (not
 * NUL-terminated). Any input must end in a verdict, never a crash, a leak or a read past
 * the input; an accepted body must give a payment the decision may trust: a positive id
 * whose canonical text parses back to it, a valid txn id and currency, an amount of
 * 0..10^18-1 minor units (abort() otherwise, which libFuzzer reports as a crash).
 * The strictness of DESIGN.md 15 "Hardening rules" is an oracle too, each checked here
 * independently of sk/json_strict.h: an accepted body holds no NUL byte and no \u0000
 * escape, is one object with only JSON white space around it (a scanner of its own finds
 * the object's end), and no object of its tree repeats a member name.
 * Built and run by bench/fuzz.sh (target paybody); seeds in corpus/paybody. */
#define _GNU_SOURCE /* memmem */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "payment_body.h"
#include "sk/ids.h"
#include "sk/payment.h"

static int ws(uint8_t c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* 1 if @p d is white space, one {...} (strings skipped, nesting counted), white space. */
static int one_object(const uint8_t *d, size_t n)
{
        size_t i = 0;
        int depth = 0, in_str = 0;

        while (i < n && ws(d[i]))
                i++;
        if (i == n || d[i] != '{')
                return 0;
        for (; i < n; i++) {
                if (in_str) {
                        if (d[i] == '\\')
                                i++;
                        else if (d[i] == '"')
                                in_str = 0;
                } else if (d[i] == '"') {
                        in_str = 1;
                } else if (d[i] == '{' || d[i] == '[') {
                        depth++;
                } else if ((d[i] == '}' || d[i] == ']') && --depth == 0) {
                        break;
                }
        }
        if (i == n)
                return 0;
        for (i++; i < n; i++)
                if (!ws(d[i]))
                        return 0;
        return 1;
}

/* 1 if no object in the tree @p it repeats a member name. */
static int names_unique(const cJSON *it)
{
        for (const cJSON *a = it ? it->child : NULL; a; a = a->next) {
                if (cJSON_IsObject(it))
                        for (const cJSON *b = a->next; b; b = b->next)
                                if (!strcmp(a->string, b->string))
                                        return 0;
                if (!names_unique(a))
                        return 0;
        }
        return 1;
}

static void strictness_oracle(const uint8_t *d, size_t n)
{
        cJSON *tree;

        if (memchr(d, '\0', n) || memmem(d, n, "\\u0000", 6) || !one_object(d, n))
                abort();
        if (!(tree = cJSON_ParseWithLength((const char *)d, n)))
                abort();
        if (!names_unique(tree))
                abort();
        cJSON_Delete(tree);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char idtxt[32];
        sk_payment_t p;
        const char *why;
        int64_t back = 0;

        if (size > 8192)
                return 0;
        memset(&p, 0, sizeof(p));
        why = fr_payment_parse_body((const char *)data, size, &p);
        if (why) {
                if (!*why)
                        abort();        /* a refusal always says why */
                return 0;
        }
        if (p.order_id <= 0 || p.amount_minor < 0 || p.amount_minor > INT64_C(999999999999999999) ||
            !sk_payment_valid_ref(p.txn_id) || !sk_payment_valid_currency(p.currency))
                abort();
        strictness_oracle(data, size);
        sk_id_format(p.order_id, idtxt);
        if (sk_id_parse_cstr(idtxt, &back) != 0 || back != p.order_id)
                abort();
        return 0;
}
