/* queue_sig.c: the signature the waiting room's signed texts share (queue_int.h, DESIGN.md
 * 18): HMAC-SHA256 in base64url without padding, sealed onto a text and checked in
 * constant time; the split into fields and the generation and number field checks of the
 * token and the ticket. Each thread keeps its keyed HMAC contexts (a few, by key), so a
 * check costs the MAC itself, not OpenSSL's fetch of HMAC and SHA-256 and a new context
 * (the one-shot HMAC() does both on every call: most of a token check's CPU).
 * What it does not do: parse a text or choose a key (queue_token.c, queue_ticket.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include "queue_int.h"

/* ------------------------------------------------ per-thread keyed contexts ---- */

#define QMAC_SLOTS 8                    /* keys a thread keeps: token keys, the ticket key */
#define QMAC_KEY_MAX 256                /* longer keys take the one-shot path */

typedef struct qmac_slot {
        EVP_MAC_CTX *ctx;               /* keyed with key[0..len); NULL: free slot */
        size_t len;
        unsigned char key[QMAC_KEY_MAX];
} qmac_slot_t;

typedef struct qmac_cache {
        qmac_slot_t slot[QMAC_SLOTS];
        unsigned next;                  /* the slot a new key replaces (round robin) */
} qmac_cache_t;

static pthread_once_t qmac_once = PTHREAD_ONCE_INIT;
static pthread_key_t qmac_tls;
static EVP_MAC *qmac_hmac;              /* fetched once, kept for the process's life */
static int qmac_ready;

static void slot_clear(qmac_slot_t *s)
{
        EVP_MAC_CTX_free(s->ctx);
        s->ctx = NULL;
        OPENSSL_cleanse(s->key, sizeof(s->key));
        s->len = 0;
}

/* pthread key destructor: a thread's contexts and key copies go (wiped) with it */
static void cache_free(void *p)
{
        qmac_cache_t *c = p;

        for (int i = 0; i < QMAC_SLOTS; i++)
                slot_clear(&c->slot[i]);
        free(c);
}

static void qmac_init(void)
{
        qmac_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        qmac_ready = qmac_hmac && pthread_key_create(&qmac_tls, cache_free) == 0;
}

/* This thread's HMAC-SHA256 context keyed with @p key (@p key_len bytes, borrowed: a copy
 * is kept to match later calls, wiped when replaced or when the thread ends), initialised
 * for a new message; NULL when none can be made (the caller takes the one-shot path). */
static EVP_MAC_CTX *qmac_ctx(const void *key, size_t key_len)
{
        OSSL_PARAM params[2];
        qmac_cache_t *c;
        qmac_slot_t *s;

        if (pthread_once(&qmac_once, qmac_init) != 0 || !qmac_ready || key_len == 0 ||
            key_len > QMAC_KEY_MAX)
                return NULL;
        if (!(c = pthread_getspecific(qmac_tls))) {
                if (!(c = calloc(1, sizeof(*c))))
                        return NULL;
                if (pthread_setspecific(qmac_tls, c) != 0) {
                        free(c);
                        return NULL;
                }
        }
        /* the keys compared are both this process's own (never a caller's input): a plain
         * memcmp leaks nothing an attacker chose */
        for (int i = 0; i < QMAC_SLOTS; i++) {
                s = &c->slot[i];
                if (s->ctx && s->len == key_len && memcmp(s->key, key, key_len) == 0)
                        return EVP_MAC_init(s->ctx, NULL, 0, NULL) ? s->ctx : NULL;
        }
        s = &c->slot[c->next++ % QMAC_SLOTS];
        slot_clear(s);
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
        params[1] = OSSL_PARAM_construct_end();
        if (!(s->ctx = EVP_MAC_CTX_new(qmac_hmac)) ||
            !EVP_MAC_init(s->ctx, key, key_len, params)) {
                slot_clear(s);
                return NULL;
        }
        memcpy(s->key, key, key_len);
        s->len = key_len;
        return s->ctx;
}

/* HMAC-SHA256 of @p msg under @p key into @p mac (32 bytes): 0, or -1. */
static int hmac32(const void *key, size_t key_len, const char *msg, size_t len,
                  unsigned char mac[EVP_MAX_MD_SIZE])
{
        EVP_MAC_CTX *ctx = qmac_ctx(key, key_len);
        unsigned int mac_len = 0;
        size_t out_len = 0;

        if (ctx)
                return EVP_MAC_update(ctx, (const unsigned char *)msg, len) &&
                       EVP_MAC_final(ctx, mac, &out_len, EVP_MAX_MD_SIZE) && out_len == 32 ? 0 : -1;
        return HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, len, mac,
                    &mac_len) && mac_len == 32 ? 0 : -1;
}

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64url of the 32-byte MAC, no padding: SK__QSIG_B64 chars and a NUL into @p out. */
static void b64url32(const unsigned char mac[32], char out[SK__QSIG_B64 + 1])
{
        size_t o = 0;

        for (int i = 0; i < 30; i += 3) {
                uint32_t v = (uint32_t)mac[i] << 16 | (uint32_t)mac[i + 1] << 8 | mac[i + 2];
                out[o++] = B64URL[v >> 18];
                out[o++] = B64URL[(v >> 12) & 63];
                out[o++] = B64URL[(v >> 6) & 63];
                out[o++] = B64URL[v & 63];
        }
        {
                uint32_t v = (uint32_t)mac[30] << 16 | (uint32_t)mac[31] << 8;
                out[o++] = B64URL[v >> 18];
                out[o++] = B64URL[(v >> 12) & 63];
                out[o++] = B64URL[(v >> 6) & 63];
        }
        out[o] = '\0';
}

int sk__qsig_b64(const void *key, size_t key_len, const char *msg, size_t len,
                 char out[SK__QSIG_B64 + 1])
{
        unsigned char mac[EVP_MAX_MD_SIZE];
        int rc = -1;

        if (hmac32(key, key_len, msg, len, mac) == 0) {
                b64url32(mac, out);
                rc = 0;
        }
        OPENSSL_cleanse(mac, sizeof(mac));
        return rc;
}

int sk__qsig_seal(const void *key, size_t key_len, char *out, int n, size_t max)
{
        char sig[SK__QSIG_B64 + 1];

        if (n <= 0 || (size_t)n + 1 + SK__QSIG_B64 > max ||
            sk__qsig_b64(key, key_len, out, (size_t)n, sig) != 0)
                return -1;
        out[n] = '.';
        memcpy(out + n + 1, sig, SK__QSIG_B64 + 1);
        return 0;
}

int sk__qsig_check(const void *key, size_t key_len, const char *msg, size_t len,
                   const char *sig)
{
        char want[SK__QSIG_B64 + 1];

        return sk__qsig_b64(key, key_len, msg, len, want) == 0 &&
               CRYPTO_memcmp(want, sig, SK__QSIG_B64) == 0;
}

size_t sk__qfields(const char *text, const char *f[SK__QFIELDS], size_t len[SK__QFIELDS])
{
        const char *p = text;
        size_t nf = 0;

        for (;;) {
                const char *dot = nf < SK__QFIELDS - 1 ? strchr(p, '.') : NULL;

                f[nf] = p;
                len[nf] = dot ? (size_t)(dot - p) : strlen(p);
                nf++;
                if (!dot)
                        return nf;
                p = dot + 1;
        }
}

int sk__qgen_ok(const char *g, size_t n)
{
        if (n == 0 || n > 16)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (!((g[i] >= '0' && g[i] <= '9') || (g[i] >= 'a' && g[i] <= 'f')))
                        return 0;
        return 1;
}

int64_t sk__qnum_field(const char *p, size_t n)
{
        int64_t v = 0;

        if (n == 0 || n > 15 || (n > 1 && p[0] == '0'))
                return -1;
        for (size_t i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -1;
                v = v * 10 + (p[i] - '0');
        }
        return v;
}
