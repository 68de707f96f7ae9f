/* sk_test_jwt.c: test keys and tokens (sk_test_jwt.h): OpenSSL 3 key generation, JWK
 * export (RSA n/e, EC x/y, oct k), PEM files and JWS compact signing for HS256, RS256
 * and ES256 (the DER ECDSA signature turned into JOSE r||s). What it does not do:
 * verify (common/auth does) or protect keys (test material only). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "sk/b64url.h"
#include "sk_test_jwt.h"

struct sk_test_jwk {
        sk_jwt_alg_t alg;
        char kid[128];
        int has_kid;
        EVP_PKEY *pkey;                 /* RS256, ES256: the private key */
        unsigned char secret[256];      /* HS256 */
        size_t secret_len;
};

static const char *alg_name(sk_jwt_alg_t a)
{
        return a == SK_JWT_HS256 ? "HS256" : a == SK_JWT_RS256 ? "RS256" : a == SK_JWT_ES256 ? "ES256" : "none";
}

static sk_test_jwk_t *jwk_alloc(sk_jwt_alg_t alg, const char *kid)
{
        sk_test_jwk_t *k = calloc(1, sizeof(*k));

        if (!k)
                return NULL;
        k->alg = alg;
        if (kid) {
                snprintf(k->kid, sizeof(k->kid), "%s", kid);
                k->has_kid = 1;
        }
        return k;
}

sk_test_jwk_t *sk_test_jwk_new(sk_jwt_alg_t alg, const char *kid, int rsa_bits)
{
        sk_test_jwk_t *k = jwk_alloc(alg, kid);

        if (!k)
                return NULL;
        if (alg == SK_JWT_HS256) {
                k->secret_len = 32;
                if (RAND_bytes(k->secret, 32) != 1)
                        goto fail;
        } else if (alg == SK_JWT_RS256) {
                k->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)(rsa_bits ? rsa_bits : 2048));
        } else if (alg == SK_JWT_ES256) {
                k->pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        }
        if (alg != SK_JWT_HS256 && !k->pkey)
                goto fail;
        return k;
fail:
        sk_test_jwk_free(k);
        return NULL;
}

sk_test_jwk_t *sk_test_jwk_from_pem(const char *path, const char *kid)
{
        FILE *f = fopen(path, "r");
        EVP_PKEY *pkey = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
        sk_test_jwk_t *k = NULL;

        if (f)
                fclose(f);
        if (!pkey) {
                fprintf(stderr, "%s: not a readable private key PEM\n", path);
                return NULL;
        }
        if (EVP_PKEY_is_a(pkey, "RSA"))
                k = jwk_alloc(SK_JWT_RS256, kid);
        else if (EVP_PKEY_is_a(pkey, "EC"))
                k = jwk_alloc(SK_JWT_ES256, kid);
        if (!k) {
                fprintf(stderr, "%s: not an RSA or EC key\n", path);
                EVP_PKEY_free(pkey);
                return NULL;
        }
        k->pkey = pkey;
        return k;
}

sk_test_jwk_t *sk_test_jwk_from_jwks_oct(const char *path, const char *kid)
{
        FILE *f = fopen(path, "r");
        char buf[65536];
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        cJSON *root, *jwk;
        sk_test_jwk_t *k = NULL;

        if (f)
                fclose(f);
        buf[n] = '\0';
        root = cJSON_Parse(buf);
        cJSON_ArrayForEach(jwk, cJSON_GetObjectItemCaseSensitive(root, "keys")) {
                const cJSON *kty = cJSON_GetObjectItemCaseSensitive(jwk, "kty");
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(jwk, "kid");
                const cJSON *kk = cJSON_GetObjectItemCaseSensitive(jwk, "k");
                long len;

                if (!cJSON_IsString(kty) || strcmp(kty->valuestring, "oct") || !cJSON_IsString(kk))
                        continue;
                if (kid && (!cJSON_IsString(id) || strcmp(id->valuestring, kid)))
                        continue;
                if (!(k = jwk_alloc(SK_JWT_HS256, cJSON_IsString(id) ? id->valuestring : NULL)))
                        break;
                len = sk_b64url_decode(kk->valuestring, strlen(kk->valuestring), k->secret,
                                       sizeof(k->secret));
                if (len <= 0) {
                        sk_test_jwk_free(k);
                        k = NULL;
                        continue;
                }
                k->secret_len = (size_t)len;
                break;
        }
        cJSON_Delete(root);
        if (!k)
                fprintf(stderr, "%s: no oct key%s%s\n", path, kid ? " with kid " : "", kid ? kid : "");
        return k;
}

void sk_test_jwk_free(sk_test_jwk_t *k)
{
        if (!k)
                return;
        EVP_PKEY_free(k->pkey);
        free(k);
}

sk_jwt_alg_t sk_test_jwk_alg(const sk_test_jwk_t *k)
{
        return k->alg;
}

/* A BIGNUM parameter of @p pkey as base64url, @p pad bytes wide (0 = minimal). */
static int bn_b64(const EVP_PKEY *pkey, const char *param, int pad, char *out, size_t out_size)
{
        BIGNUM *bn = NULL;
        unsigned char bin[1024];
        int n;
        long rc = -1;

        if (EVP_PKEY_get_bn_param(pkey, param, &bn) != 1)
                return -1;
        n = pad ? BN_bn2binpad(bn, bin, pad) : BN_bn2bin(bn, bin);
        if (n > 0)
                rc = sk_b64url_encode(bin, (size_t)n, out, out_size);
        BN_free(bn);
        return rc < 0 ? -1 : 0;
}

char *sk_test_jwk_json(const sk_test_jwk_t *k, int with_alg, sk_jwt_alg_t alg_override)
{
        cJSON *o = cJSON_CreateObject();
        char a[1400], b[1400];
        char *out;

        if (k->has_kid)
                cJSON_AddStringToObject(o, "kid", k->kid);
        cJSON_AddStringToObject(o, "use", "sig");
        if (k->alg == SK_JWT_HS256) {
                cJSON_AddStringToObject(o, "kty", "oct");
                sk_b64url_encode(k->secret, k->secret_len, a, sizeof(a));
                cJSON_AddStringToObject(o, "k", a);
        } else if (k->alg == SK_JWT_RS256) {
                cJSON_AddStringToObject(o, "kty", "RSA");
                if (bn_b64(k->pkey, OSSL_PKEY_PARAM_RSA_N, 0, a, sizeof(a)) ||
                    bn_b64(k->pkey, OSSL_PKEY_PARAM_RSA_E, 0, b, sizeof(b)))
                        goto fail;
                cJSON_AddStringToObject(o, "n", a);
                cJSON_AddStringToObject(o, "e", b);
        } else {
                cJSON_AddStringToObject(o, "kty", "EC");
                cJSON_AddStringToObject(o, "crv", "P-256");
                if (bn_b64(k->pkey, OSSL_PKEY_PARAM_EC_PUB_X, 32, a, sizeof(a)) ||
                    bn_b64(k->pkey, OSSL_PKEY_PARAM_EC_PUB_Y, 32, b, sizeof(b)))
                        goto fail;
                cJSON_AddStringToObject(o, "x", a);
                cJSON_AddStringToObject(o, "y", b);
        }
        if (with_alg)
                cJSON_AddStringToObject(o, "alg",
                                        alg_name(alg_override != SK_JWT_ALG_NONE ? alg_override : k->alg));
        out = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        return out;
fail:
        cJSON_Delete(o);
        return NULL;
}

char *sk_test_jwks_json(sk_test_jwk_t *const *keys, size_t n)
{
        size_t i, cap = 64, len;
        char *out = malloc(cap), *j;

        if (!out)
                return NULL;
        len = (size_t)snprintf(out, cap, "{\"keys\":[");
        for (i = 0; i < n; i++) {
                if (!(j = sk_test_jwk_json(keys[i], 1, SK_JWT_ALG_NONE)))
                        goto fail;
                cap = len + strlen(j) + 8;
                if (!(out = realloc(out, cap))) {
                        free(j);
                        return NULL;
                }
                len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "," : "", j);
                cJSON_free(j);
        }
        out = realloc(out, len + 3);
        if (out)
                memcpy(out + len, "]}", 3);
        return out;
fail:
        free(out);
        return NULL;
}

int sk_test_write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        size_t len = strlen(text);
        int ok;

        if (fd < 0)
                return -1;
        ok = write(fd, text, len) == (ssize_t)len;
        return close(fd) == 0 && ok ? 0 : -1;
}

int sk_test_jwk_write_pem(const sk_test_jwk_t *k, const char *path)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int ok;

        if (!f || !k->pkey) {
                if (f)
                        fclose(f);
                else if (fd >= 0)
                        close(fd);
                return -1;
        }
        ok = PEM_write_PrivateKey(f, k->pkey, NULL, NULL, 0, NULL, NULL) == 1;
        return fclose(f) == 0 && ok ? 0 : -1;
}

char *sk_test_jwk_public_pem(const sk_test_jwk_t *k)
{
        BIO *bio = BIO_new(BIO_s_mem());
        char *data, *out = NULL;
        long n;

        if (bio && k->pkey && PEM_write_bio_PUBKEY(bio, k->pkey) == 1 &&
            (n = BIO_get_mem_data(bio, &data)) > 0 && (out = malloc((size_t)n + 1))) {
                memcpy(out, data, (size_t)n);
                out[n] = '\0';
        }
        BIO_free(bio);
        return out;
}

/* "b64(header).b64(payload)" into a fresh buffer with room for a signature. */
static char *signing_input(const char *header_json, const char *payload_json, size_t *len)
{
        size_t hl = strlen(header_json), pl = strlen(payload_json);
        size_t cap = SK_B64URL_ENCODED_LEN(hl) + SK_B64URL_ENCODED_LEN(pl) + 2 + 2048;
        char *out = malloc(cap);
        long a, b;

        if (!out)
                return NULL;
        a = sk_b64url_encode((const unsigned char *)header_json, hl, out, cap);
        out[a] = '.';
        b = sk_b64url_encode((const unsigned char *)payload_json, pl, out + a + 1, cap - (size_t)a - 1);
        *len = (size_t)(a + 1 + b);
        return out;
}

static char *append_sig(char *input, size_t len, const unsigned char *sig, size_t sig_len)
{
        input[len] = '.';
        sk_b64url_encode(sig, sig_len, input + len + 1, 2048);
        return input;
}

char *sk_test_jwt_hs256(const unsigned char *secret, size_t slen, const char *header_json,
                        const char *payload_json)
{
        size_t len;
        char *in = signing_input(header_json, payload_json, &len);
        unsigned char mac[32];
        unsigned int ml = 0;

        if (!in || !HMAC(EVP_sha256(), secret, (int)slen, (const unsigned char *)in, len, mac, &ml)) {
                free(in);
                return NULL;
        }
        return append_sig(in, len, mac, ml);
}

char *sk_test_jwt_sign(const sk_test_jwk_t *k, const char *header_json, const char *payload_json)
{
        size_t len, sig_len = 0;
        char *in;
        unsigned char sig[1024], *p;
        EVP_MD_CTX *mctx;
        ECDSA_SIG *esig;
        const BIGNUM *r, *s;

        if (k->alg == SK_JWT_HS256)
                return sk_test_jwt_hs256(k->secret, k->secret_len, header_json, payload_json);
        if (!(in = signing_input(header_json, payload_json, &len)) || !(mctx = EVP_MD_CTX_new())) {
                free(in);
                return NULL;
        }
        sig_len = sizeof(sig);
        if (EVP_DigestSignInit(mctx, NULL, EVP_sha256(), NULL, k->pkey) != 1 ||
            EVP_DigestSign(mctx, sig, &sig_len, (const unsigned char *)in, len) != 1) {
                EVP_MD_CTX_free(mctx);
                free(in);
                return NULL;
        }
        EVP_MD_CTX_free(mctx);
        if (k->alg == SK_JWT_ES256) { /* DER -> JOSE r||s */
                p = sig;
                if (!(esig = d2i_ECDSA_SIG(NULL, (const unsigned char **)&p, (long)sig_len))) {
                        free(in);
                        return NULL;
                }
                ECDSA_SIG_get0(esig, &r, &s);
                BN_bn2binpad(r, sig, 32);
                BN_bn2binpad(s, sig + 32, 32);
                ECDSA_SIG_free(esig);
                sig_len = 64;
        }
        return append_sig(in, len, sig, sig_len);
}

char *sk_test_jwt_raw(const char *header_json, const char *payload_json, const char *sig_b64)
{
        size_t len;
        char *in = signing_input(header_json, payload_json, &len);

        if (!in || strlen(sig_b64) >= 2048) {
                free(in);
                return NULL;
        }
        in[len] = '.';
        memcpy(in + len + 1, sig_b64, strlen(sig_b64) + 1);
        return in;
}

char *sk_test_jwt_mint(const sk_test_jwk_t *k, int64_t sub, int64_t exp_s, const char *extra_claims)
{
        char hdr[256], pay[2048];

        if (k->has_kid)
                snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}",
                         alg_name(k->alg), k->kid);
        else
                snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg_name(k->alg));
        snprintf(pay, sizeof(pay), "{\"sub\":\"%lld\",\"exp\":%lld,\"iat\":%lld%s}", (long long)sub,
                 (long long)exp_s, (long long)time(NULL) - 1, extra_claims ? extra_claims : "");
        return sk_test_jwt_sign(k, hdr, pay);
}
