/* jwt.c: one JWT verified against a loaded key set (sk/jwt.h, DESIGN.md 15): the
 * compact serialization split and decoded here (base64url, cJSON, a header of at most
 * 1 KiB), alg pinned to the key the kid names, the signature checked with OpenSSL EVP
 * (HS256 by HMAC and CRYPTO_memcmp; RS256 by EVP_DigestVerify; ES256's JOSE r||s turned
 * into DER for EVP_DigestVerify), then the claims with a skew.
 * What it does not do: trust anything the token says before its signature verified
 * (only alg and kid are read first, to choose the key), cache, or log. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>

#include "jwks_int.h"
#include "sk/b64url.h"
#include "sk/err.h"
#include "sk/ids.h"
#include "sk/json_strict.h"
#include "sk/jwt.h"

#define ENC_HEADER_MAX SK_B64URL_ENCODED_LEN(SK_JWT_MAX_HEADER)
#define DEC_MAX SK_B64URL_DECODED_MAX(SK_JWT_MAX_TOKEN)

const char *sk_jwt_status_str(sk_jwt_status_t st)
{
        switch (st) {
        case SK_JWT_OK: return "ok";
        case SK_JWT_EFORMAT: return "format";
        case SK_JWT_EHEADER: return "header";
        case SK_JWT_EKID: return "kid";
        case SK_JWT_EKEYTYPE: return "keytype";
        case SK_JWT_ESIG: return "signature";
        case SK_JWT_EEXPIRED: return "expired";
        case SK_JWT_ECLAIM: return "claim";
        case SK_JWT_ENOMEM: return "nomem";
        }
        return "unknown";
}

/* Decode @p seg and parse it as a strict JSON object (sk/json_strict.h: unique member
 * names, no NUL, nothing after the object). NULL if not. */
static cJSON *segment_json(const char *seg, size_t len, char *buf, size_t buf_size)
{
        long n = sk_b64url_decode(seg, len, (unsigned char *)buf, buf_size - 1);

        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        return sk_json_strict_object(buf, (size_t)n, NULL);
}

/* ---------------------------------------------------------------- signature ---- */

static int evp_verify(const sk_jwks_t *ks, EVP_PKEY *pkey, const unsigned char *sig, size_t sig_len,
                      const char *input, size_t in_len)
{
        EVP_MD_CTX *mctx = EVP_MD_CTX_new();
        int ok = 0;

        if (!mctx)
                return 0;
        if (EVP_DigestVerifyInit(mctx, NULL, ks->sha256, NULL, pkey) == 1 &&
            EVP_DigestVerify(mctx, sig, sig_len, (const unsigned char *)input, in_len) == 1)
                ok = 1;
        EVP_MD_CTX_free(mctx);
        return ok;
}

/* ES256: JOSE sends r||s (32 bytes each, RFC 7518 3.4); EVP wants DER. */
static int es256_verify(const sk_jwks_t *ks, const sk__jwk_t *key, const unsigned char *sig,
                        const char *input, size_t in_len)
{
        ECDSA_SIG *esig = ECDSA_SIG_new();
        BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
        unsigned char der[80], *p = der;
        int der_len, ok = 0;

        if (!esig || !r || !s || ECDSA_SIG_set0(esig, r, s) != 1)
                goto done;
        r = s = NULL; /* esig owns them */
        der_len = i2d_ECDSA_SIG(esig, NULL);
        if (der_len <= 0 || (size_t)der_len > sizeof(der) || i2d_ECDSA_SIG(esig, &p) != der_len)
                goto done;
        ok = evp_verify(ks, key->pkey, der, (size_t)der_len, input, in_len);
done:
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(esig);
        return ok;
}

static int signature_ok(const sk_jwks_t *ks, const sk__jwk_t *key, const unsigned char *sig,
                        size_t sig_len, const char *input, size_t in_len)
{
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int mac_len = 0;

        if (sig_len != key->sig_len)    /* also refuses an empty signature */
                return 0;
        switch (key->alg) {
        case SK_JWT_HS256:
                if (!key->secret || !key->secret_len ||
                    !HMAC(ks->sha256, key->secret, (int)key->secret_len, (const unsigned char *)input,
                          in_len, mac, &mac_len) || mac_len != sig_len)
                        return 0;
                return CRYPTO_memcmp(mac, sig, sig_len) == 0;
        case SK_JWT_RS256:
                return key->pkey && evp_verify(ks, key->pkey, sig, sig_len, input, in_len);
        case SK_JWT_ES256:
                return key->pkey && es256_verify(ks, key, sig, input, in_len);
        case SK_JWT_ALG_NONE:
                break;
        }
        return 0;
}

/* ------------------------------------------------------------------- header ---- */

/* alg, typ, crit and kid of the header; the key the kid names, of the alg's type. */
static sk_jwt_status_t header_key(const sk_jwks_t *ks, const char *seg, size_t len,
                                  const sk__jwk_t **key, char *errstr, size_t errstr_size)
{
        char buf[SK_JWT_MAX_HEADER + 2];
        cJSON *hdr;
        const cJSON *alg, *typ, *kid;
        sk_jwt_alg_t a;
        sk_jwt_status_t st = SK_JWT_EHEADER;

        if (len > ENC_HEADER_MAX || !(hdr = segment_json(seg, len, buf, sizeof(buf)))) {
                sk_seterr(errstr, errstr_size, "header is not base64url JSON of at most %d bytes",
                          SK_JWT_MAX_HEADER);
                return SK_JWT_EFORMAT;
        }
        alg = cJSON_GetObjectItemCaseSensitive(hdr, "alg");
        typ = cJSON_GetObjectItemCaseSensitive(hdr, "typ");
        kid = cJSON_GetObjectItemCaseSensitive(hdr, "kid");
        a = cJSON_IsString(alg) ? sk__jwks_alg_parse(alg->valuestring) : SK_JWT_ALG_NONE;
        if (a == SK_JWT_ALG_NONE) {
                sk_seterr(errstr, errstr_size, "alg is not HS256, RS256 or ES256");
                goto done;
        }
        if (typ && (!cJSON_IsString(typ) || strcmp(typ->valuestring, "JWT"))) {
                sk_seterr(errstr, errstr_size, "typ is not JWT");
                goto done;
        }
        /* RFC 7515 4.1.11: extensions we do not understand must be refused. */
        if (cJSON_GetObjectItemCaseSensitive(hdr, "crit")) {
                sk_seterr(errstr, errstr_size, "crit header parameter");
                goto done;
        }
        if (kid && (!cJSON_IsString(kid) || !kid->valuestring[0])) {
                sk_seterr(errstr, errstr_size, "kid is not a non-empty string");
                goto done;
        }
        if (!(*key = sk__jwks_find(ks, kid ? kid->valuestring : NULL))) {
                sk_seterr(errstr, errstr_size, kid ? "unknown kid" : "no kid (the key set has several keys)");
                st = kid ? SK_JWT_EKID : SK_JWT_EHEADER;
                goto done;
        }
        /* The pin: the token names the alg, the key decides whether that alg is allowed
         * (an HS256 token against an RSA key's public PEM never gets near HMAC). */
        if ((*key)->alg != a) {
                sk_seterr(errstr, errstr_size, "alg %s does not fit the kid's key", alg->valuestring);
                st = SK_JWT_EKEYTYPE;
                goto done;
        }
        st = SK_JWT_OK;
done:
        cJSON_Delete(hdr);
        return st;
}

/* ------------------------------------------------------------------- claims ---- */

/* A JSON integer (no fraction) within +-2^53. @returns 1 and *v, 0 if not. */
static int json_int(const cJSON *item, int64_t *v)
{
        double d;

        if (!cJSON_IsNumber(item))
                return 0;
        d = item->valuedouble;
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
                return 0;
        *v = (int64_t)d;
        return 1;
}

static int aud_ok(const cJSON *aud, const char *want)
{
        const cJSON *a;

        if (cJSON_IsString(aud))
                return !strcmp(aud->valuestring, want);
        if (!cJSON_IsArray(aud))
                return 0;
        cJSON_ArrayForEach(a, aud)
                if (cJSON_IsString(a) && !strcmp(a->valuestring, want))
                        return 1;
        return 0;
}

static sk_jwt_status_t check_claims(const cJSON *c, const sk_jwt_policy_t *pol, int64_t now_s,
                                    sk_jwt_claims_t *out, char *errstr, size_t errstr_size)
{
        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(c, "exp");
        const cJSON *nbf = cJSON_GetObjectItemCaseSensitive(c, "nbf");
        const cJSON *iat = cJSON_GetObjectItemCaseSensitive(c, "iat");
        const cJSON *iss = cJSON_GetObjectItemCaseSensitive(c, "iss");
        const cJSON *aud = cJSON_GetObjectItemCaseSensitive(c, "aud");
        const cJSON *sub = cJSON_GetObjectItemCaseSensitive(c, "sub");
        int64_t exp_s, t, user;
        int skew = pol ? pol->skew_s : 0;

        if (!json_int(exp, &exp_s)) {
                sk_seterr(errstr, errstr_size, "exp missing or not an integer");
                return SK_JWT_ECLAIM;
        }
        if (now_s >= exp_s + skew) {
                sk_seterr(errstr, errstr_size, "expired");
                return SK_JWT_EEXPIRED;
        }
        if (nbf && (!json_int(nbf, &t) || t > now_s + skew)) {
                sk_seterr(errstr, errstr_size, "nbf not an integer or in the future");
                return SK_JWT_ECLAIM;
        }
        if (iat && (!json_int(iat, &t) || t > now_s + skew)) {
                sk_seterr(errstr, errstr_size, "iat not an integer or in the future");
                return SK_JWT_ECLAIM;
        }
        if (pol && pol->issuer && pol->issuer[0] &&
            (!cJSON_IsString(iss) || strcmp(iss->valuestring, pol->issuer))) {
                sk_seterr(errstr, errstr_size, "iss is not the configured issuer");
                return SK_JWT_ECLAIM;
        }
        if (pol && pol->audience && pol->audience[0] && !aud_ok(aud, pol->audience)) {
                sk_seterr(errstr, errstr_size, "aud does not name the configured audience");
                return SK_JWT_ECLAIM;
        }
        if (!cJSON_IsString(sub) || sk_id_parse_cstr(sub->valuestring, &user) != 0) {
                sk_seterr(errstr, errstr_size, "sub is not a string holding a canonical user id");
                return SK_JWT_ECLAIM;
        }
        out->user_id = user;
        out->exp_s = exp_s;
        return SK_JWT_OK;
}

/* ------------------------------------------------------------------- verify ---- */

sk_jwt_status_t sk_jwt_verify(const sk_jwks_t *ks, const char *token, size_t len,
                              const sk_jwt_policy_t *pol, int64_t now_s, sk_jwt_claims_t *out,
                              char *errstr, size_t errstr_size)
{
        const char *d1, *d2;
        const sk__jwk_t *key = NULL;
        unsigned char sig[1024];
        char payload[DEC_MAX + 1];
        size_t sig_seg_len;
        long sig_len;
        cJSON *claims;
        sk_jwt_status_t st;

        if (!ks || !token || !len || len > SK_JWT_MAX_TOKEN ||
            !(d1 = memchr(token, '.', len)) ||
            !(d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token))) ||
            memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)) || d1 == token || d2 == d1 + 1) {
                sk_seterr(errstr, errstr_size, "not a compact JWS (header.payload.signature)");
                return SK_JWT_EFORMAT;
        }
        if ((st = header_key(ks, token, (size_t)(d1 - token), &key, errstr, errstr_size)) != SK_JWT_OK)
                return st;
        sig_seg_len = len - (size_t)(d2 + 1 - token);
        sig_len = sig_seg_len ? sk_b64url_decode(d2 + 1, sig_seg_len, sig, sizeof(sig)) : 0;
        if (sig_len <= 0 || !signature_ok(ks, key, sig, (size_t)sig_len, token, (size_t)(d2 - token))) {
                sk_seterr(errstr, errstr_size, "bad signature");
                return SK_JWT_ESIG;
        }
        /* Only now is the payload read: its bytes are the issuer's. */
        if (!(claims = segment_json(d1 + 1, (size_t)(d2 - d1 - 1), payload, sizeof(payload)))) {
                sk_seterr(errstr, errstr_size, "payload is not base64url JSON");
                return SK_JWT_EFORMAT;
        }
        st = check_claims(claims, pol, now_s, out, errstr, errstr_size);
        cJSON_Delete(claims);
        return st;
}
