/* common/queue/queue_ticket.c: signed position tickets of the waiting room (sk/queue_ticket.h,
 * DESIGN.md 18): a member's place, signed so that any front answers its poll without Redis.
 * What it does not do: decide the member's state (producer/room_routes.c does, with the
 * tick's room state) or hold a key of its own (the key is derived from the admission keys). */
#include "sk/queue_ticket.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "sk/ids.h"

#include "queue_int.h"

/* The ticket key: the signature of an admission text no admission carries (expiry 0 is
 * before any Redis time + ttl), under the first admission key; its kid into @p kid. */
static int derive(const sk_keyfile_set_t *keys, char kid[SK_QTOKEN_KID_MAX + 1],
                  char key[SK__QSIG_B64 + 1])
{
        static const sk_qtoken_t fixed = { .generation = "0", .voucher_id = 1, .user_id = 1,
                                           .position = 1, .expiry_ms = 0 };
        char tok[SK_QTOKEN_MAX + 1];
        const char *k, *dot, *sig;

        if (sk_qtoken_sign(keys, &fixed, tok, sizeof(tok)) != 0)
                return -1;
        /* v1.<kid>.<...>.<sig> */
        k = tok + 3;
        if (!(dot = strchr(k, '.')) || (size_t)(dot - k) > SK_QTOKEN_KID_MAX ||
            !(sig = strrchr(tok, '.')) || strlen(sig + 1) != SK__QSIG_B64) {
                OPENSSL_cleanse(tok, sizeof(tok));
                return -1;
        }
        memcpy(kid, k, (size_t)(dot - k));
        kid[dot - k] = '\0';
        memcpy(key, sig + 1, SK__QSIG_B64 + 1);
        OPENSSL_cleanse(tok, sizeof(tok));
        return 0;
}

int sk_qticket_sign(const sk_keyfile_set_t *keys, const sk_qticket_t *t, char *out,
                    size_t out_size)
{
        char kid[SK_QTOKEN_KID_MAX + 1], key[SK__QSIG_B64 + 1], vid[SK_ID_STRLEN],
                uid[SK_ID_STRLEN];
        int n, rc;

        if (!keys || !sk__qgen_ok(t->generation, strlen(t->generation)) || t->voucher_id <= 0 ||
            t->user_id <= 0 || t->position < 0 || t->expiry_ms <= 0 ||
            out_size < SK_QTICKET_MAX + 1 || derive(keys, kid, key) != 0)
                return -1;
        sk_id_format(t->voucher_id, vid);
        sk_id_format(t->user_id, uid);
        n = snprintf(out, out_size, "t1.%s.%s.%s.%s.%" PRId64 ".%" PRId64, kid, t->generation,
                     vid, uid, t->position, t->expiry_ms);
        rc = sk__qsig_seal(key, SK__QSIG_B64, out, n, SK_QTICKET_MAX);
        OPENSSL_cleanse(key, sizeof(key));
        return rc;
}

sk_qtoken_res_t sk_qticket_verify(const sk_keyfile_set_t *keys, const char *text, int64_t vid,
                                  int64_t uid, int64_t now_ms, sk_qticket_t *out)
{
        const char *f[SK__QFIELDS];
        size_t len[SK__QFIELDS], tlen, nf;
        char kid[SK_QTOKEN_KID_MAX + 1], key[SK__QSIG_B64 + 1];
        sk_qticket_t t = { .generation = "" };
        int64_t ids[2];
        int same;

        if (!text || (tlen = strlen(text)) > SK_QTICKET_MAX || strncmp(text, "t1.", 3) != 0)
                return SK_QTOKEN_MALFORMED;
        /* t1 kid gen voucher user position expiry sig (a dot in sig: malformed) */
        nf = sk__qfields(text, f, len);
        if (nf != 8 || strchr(f[7], '.') || len[7] != SK__QSIG_B64 || len[1] == 0 ||
            len[1] > SK_QTOKEN_KID_MAX || !sk__qgen_ok(f[2], len[2]))
                return SK_QTOKEN_MALFORMED;
        for (int i = 0; i < 2; i++)
                if (sk_id_parse(f[3 + i], len[3 + i], &ids[i]) != 0)
                        return SK_QTOKEN_MALFORMED;
        if ((t.position = sk__qnum_field(f[5], len[5])) < 0 || (t.expiry_ms = sk__qnum_field(f[6], len[6])) <= 0)
                return SK_QTOKEN_MALFORMED;
        if (derive(keys, kid, key) != 0)
                return SK_QTOKEN_UNKNOWN_KEY;
        if (strlen(kid) != len[1] || memcmp(kid, f[1], len[1]) != 0) {
                OPENSSL_cleanse(key, sizeof(key));
                return SK_QTOKEN_UNKNOWN_KEY;
        }
        same = sk__qsig_check(key, SK__QSIG_B64, text, tlen - SK__QSIG_B64 - 1, f[7]);
        OPENSSL_cleanse(key, sizeof(key));
        if (!same)
                return SK_QTOKEN_BAD_SIG;
        if (ids[0] != vid || ids[1] != uid)
                return SK_QTOKEN_WRONG;
        if (now_ms >= t.expiry_ms)
                return SK_QTOKEN_EXPIRED;
        if (out) {
                memcpy(t.generation, f[2], len[2]);
                t.generation[len[2]] = '\0';
                t.voucher_id = ids[0];
                t.user_id = ids[1];
                *out = t;
        }
        return SK_QTOKEN_OK;
}
