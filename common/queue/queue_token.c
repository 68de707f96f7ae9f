/* queue_token.c: admission tokens of the waiting room (sk/queue_token.h, DESIGN.md 18):
 * the keys file's lines (read by sk/keyfile.h into its key set), signing and
 * constant-time verification (the signature itself: queue_sig.c). It keeps no state
 * between calls besides the immutable key set. */
#include "sk/queue_token.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/err.h"
#include "sk/ids.h"
#include "sk/keyfile.h"

#include "queue_int.h"

typedef struct qkey {
        char kid[SK_QTOKEN_KID_MAX + 1];
        unsigned char secret[SK_QTOKEN_MAX_SECRET];
        size_t secret_len;
} qkey_t;

/* The parsed keys: the body of a queue key set (sk/keyfile.h). */
typedef struct qkeys {
        qkey_t key[SK_QTOKEN_MAX_KEYS];
} qkeys_t;

static int kid_char(int c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

/* One kept line "<kid> <secret>" of the keys file (sk/keyfile.h) into @p arg's key
 * @p index: 0 or -1 with the reason (never the secret); a kid seen before is refused. */
static int key_line(void *arg, const char *p, size_t len, int lineno, size_t index,
                    char *errstr, size_t errstr_size)
{
        qkeys_t *keys = arg;
        qkey_t *k = &keys->key[index];
        size_t i = 0, s;

        (void)lineno;
        while (i < len && kid_char((unsigned char)p[i]))
                i++;
        if (i == 0 || i > SK_QTOKEN_KID_MAX || i >= len || (p[i] != ' ' && p[i] != '\t')) {
                sk_seterr(errstr, errstr_size, "not \"<kid> <secret>\" (kid 1..%d of "
                          "[A-Za-z0-9_-])", SK_QTOKEN_KID_MAX);
                return -1;
        }
        memcpy(k->kid, p, i);
        k->kid[i] = '\0';
        s = i;
        while (s < len && (p[s] == ' ' || p[s] == '\t'))
                s++;
        if (len - s < SK_QTOKEN_MIN_SECRET || len - s > SK_QTOKEN_MAX_SECRET) {
                sk_seterr(errstr, errstr_size, "the secret of kid %s is not %d..%d bytes",
                          k->kid, SK_QTOKEN_MIN_SECRET, SK_QTOKEN_MAX_SECRET);
                return -1;
        }
        for (size_t j = 0; j < index; j++)
                if (strcmp(keys->key[j].kid, k->kid) == 0) {
                        sk_seterr(errstr, errstr_size, "kid %s appears twice", k->kid);
                        return -1;
                }
        memcpy(k->secret, p + s, len - s);
        k->secret_len = len - s;
        return 0;
}

const sk_keyfile_kind_t sk_qtoken_keyfile = {
        .what = "queue keys file", .max_lines = SK_QTOKEN_MAX_KEYS,
        .body_size = sizeof(qkeys_t), .on_line = key_line,
};

int sk_qtoken_sign(const sk_keyfile_set_t *set, const sk_qtoken_t *t, char *out,
                   size_t out_size)
{
        const qkeys_t *keys = sk_keyfile_set_body(set, &sk_qtoken_keyfile);
        char vid[SK_ID_STRLEN + 1], uid[SK_ID_STRLEN + 1];
        int n;

        if (!keys || sk_keyfile_set_count(set) == 0 ||
            !sk__qgen_ok(t->generation, strlen(t->generation)) || t->voucher_id <= 0 ||
            t->user_id <= 0 || t->position <= 0 || t->expiry_ms < 0 ||
            out_size < SK_QTOKEN_MAX + 1)
                return -1;
        sk_id_format(t->voucher_id, vid);
        sk_id_format(t->user_id, uid);
        n = snprintf(out, out_size, "v1.%s.%s.%s.%s.%" PRId64 ".%" PRId64, keys->key[0].kid,
                     t->generation, vid, uid, t->position, t->expiry_ms);
        return sk__qsig_seal(keys->key[0].secret, keys->key[0].secret_len, out, n,
                             SK_QTOKEN_MAX);
}

sk_qtoken_res_t sk_qtoken_verify(const sk_keyfile_set_t *set, const char *text,
                                 int64_t vid, int64_t uid, int64_t now_ms, sk_qtoken_t *out)
{
        const qkeys_t *keys = sk_keyfile_set_body(set, &sk_qtoken_keyfile);
        size_t nkeys = sk_keyfile_set_count(set);
        const char *f[SK__QFIELDS];
        size_t flen[SK__QFIELDS], len, nf;
        const qkey_t *k = NULL;
        sk_qtoken_t t;

        if (!keys || !text || (len = strlen(text)) > SK_QTOKEN_MAX)
                return SK_QTOKEN_MALFORMED;
        /* 8 fields separated by '.' */
        nf = sk__qfields(text, f, flen);
        if (nf != 8 || flen[0] != 2 || memcmp(f[0], "v1", 2) != 0 || flen[7] != SK__QSIG_B64)
                return SK_QTOKEN_MALFORMED;
        for (size_t i = 0; i < nkeys; i++)
                if (strlen(keys->key[i].kid) == flen[1] &&
                    memcmp(keys->key[i].kid, f[1], flen[1]) == 0)
                        k = &keys->key[i];
        if (!k)
                return SK_QTOKEN_UNKNOWN_KEY;
        if (!sk__qsig_check(k->secret, k->secret_len, text, (size_t)(f[7] - 1 - text), f[7]))
                return SK_QTOKEN_BAD_SIG;
        /* signed by us: the fields were canonical when signed; parse them */
        if (!sk__qgen_ok(f[2], flen[2]) ||
            sk_id_parse(f[3], flen[3], &t.voucher_id) != 0 ||
            sk_id_parse(f[4], flen[4], &t.user_id) != 0 ||
            (t.position = sk__qnum_field(f[5], flen[5])) <= 0 ||
            (t.expiry_ms = sk__qnum_field(f[6], flen[6])) < 0)
                return SK_QTOKEN_MALFORMED;
        memcpy(t.generation, f[2], flen[2]);
        t.generation[flen[2]] = '\0';
        if (t.voucher_id != vid || t.user_id != uid)
                return SK_QTOKEN_WRONG;
        if (now_ms >= t.expiry_ms)
                return SK_QTOKEN_EXPIRED;
        if (out)
                *out = t;
        return SK_QTOKEN_OK;
}

const char *sk_qtoken_res_name(sk_qtoken_res_t res)
{
        switch (res) {
        case SK_QTOKEN_OK: return "ok";
        case SK_QTOKEN_MALFORMED: return "malformed";
        case SK_QTOKEN_UNKNOWN_KEY: return "unknown_key";
        case SK_QTOKEN_BAD_SIG: return "bad_signature";
        case SK_QTOKEN_WRONG: return "wrong_caller";
        case SK_QTOKEN_EXPIRED: return "expired";
        }
        return "unknown";
}
