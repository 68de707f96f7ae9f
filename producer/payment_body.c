/* producer/payment_body.c: the payment callback's JSON body (payment_body.h; DESIGN.md
 * 13, 15): {"orderId","providerTxnId","amount","currency"}, every member a JSON string,
 * so an id or an amount never passes through a double; parsed as strictly as a JWT
 * (sk/json_strict.h: unique member names, no \u0000, nothing after the object), so the
 * provider's reading of the signed bytes and the front's cannot differ. Its own file
 * for the fuzz harness (tests/fuzz/fuzz_paybody.c, bench/fuzz.sh target paybody). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "payment_body.h"
#include "sk/ids.h"
#include "sk/json_strict.h"
#include "sk/payment.h"

/* A JSON string member @p name of @p obj, or NULL. */
static const char *str_member(const cJSON *obj, const char *name)
{
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

        return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* The body into *p (payment_body.h). @returns NULL, or what is wrong (a literal). */
const char *fr_payment_parse_body(const char *body, size_t len, sk_payment_t *p)
{
        const char *why = NULL, *oid, *txn, *amount, *cur;
        cJSON *root = sk_json_strict_object(body, len, &why);

        if (!root)
                goto done;
        oid = str_member(root, "orderId");
        txn = str_member(root, "providerTxnId");
        amount = str_member(root, "amount");
        cur = str_member(root, "currency");
        if (!oid || sk_id_parse_cstr(oid, &p->order_id) != 0)
                why = "orderId: a canonical decimal id as a string";
        else if (!txn || !sk_payment_valid_ref(txn))
                why = "providerTxnId: 1..128 printable ASCII bytes as a string";
        else if (!amount || sk_payment_parse_amount(amount, &p->amount_minor) != 0)
                why = "amount: minor units as a canonical decimal string";
        else if (!cur || !sk_payment_valid_currency(cur))
                why = "currency: three letters A-Z";
        else {
                snprintf(p->txn_id, sizeof(p->txn_id), "%s", txn);
                snprintf(p->currency, sizeof(p->currency), "%s", cur);
        }
done:
        cJSON_Delete(root);
        return why;
}
