/* jwks.c: a JWKS document (RFC 7517) parsed once into OpenSSL 3 key objects
 * (DESIGN.md 15): RSA from n and e and EC P-256 from x and y through OSSL_PARAM and
 * EVP_PKEY_fromdata, oct secrets copied. Each key gets the one algorithm its type allows
 * (oct HS256, RSA 2048..4096 bits (more only when configured) RS256, EC P-256 ES256),
 * checked against the JWK's own
 * "alg" if present.
 * What it does not do: verify tokens (jwt.c), re-read files (jwt_auth.c), or import
 * private key members: a JWKS holding private keys loads as its public half. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

#include "jwks_int.h"
#include "sk/json_strict.h"
#include "sk/b64url.h"
#include "sk/err.h"

#define JWKS_MAX_BYTES (1024 * 1024)
#define JWK_MEMBER_MAX 2048     /* decoded bytes of n, x, y, k: RSA up to 16384 bits */

sk_jwt_alg_t sk__jwks_alg_parse(const char *name)
{
        if (!name)
                return SK_JWT_ALG_NONE;
        if (!strcmp(name, "HS256"))
                return SK_JWT_HS256;
        if (!strcmp(name, "RS256"))
                return SK_JWT_RS256;
        if (!strcmp(name, "ES256"))
                return SK_JWT_ES256;
        return SK_JWT_ALG_NONE;
}

const sk__jwk_t *sk__jwks_find(const sk_jwks_t *ks, const char *kid)
{
        size_t i;

        if (!kid)
                return ks->n == 1 ? &ks->keys[0] : NULL;
        for (i = 0; i < ks->n; i++)
                if (ks->keys[i].has_kid && !strcmp(ks->keys[i].kid, kid))
                        return &ks->keys[i];
        return NULL;
}

/* A base64url member @p name of @p jwk into a fresh buffer (*out owned, *out_len).
 * @returns 0, or -1 with errstr. */
static int member_bytes(const cJSON *jwk, const char *name, unsigned char **out, size_t *out_len,
                        const char *kid, char *errstr, size_t errstr_size)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(jwk, name);
        size_t len;
        long n;

        *out = NULL;
        if (!cJSON_IsString(m) || !(len = strlen(m->valuestring))) {
                sk_seterr(errstr, errstr_size, "key %s: member \"%s\" missing or not a string", kid,
                          name);
                return -1;
        }
        if (!(*out = malloc(SK_B64URL_DECODED_MAX(len) + 1)))
                goto bad;
        n = sk_b64url_decode(m->valuestring, len, *out, SK_B64URL_DECODED_MAX(len) + 1);
        if (n <= 0 || (size_t)n > JWK_MEMBER_MAX)
                goto bad;
        *out_len = (size_t)n;
        return 0;
bad:
        free(*out);
        *out = NULL;
        sk_seterr(errstr, errstr_size, "key %s: member \"%s\" is not base64url (1..%d bytes)", kid,
                  name, JWK_MEMBER_MAX);
        return -1;
}

static EVP_PKEY *from_params(const char *type, OSSL_PARAM_BLD *bld)
{
        OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
        EVP_PKEY_CTX *chk = NULL;
        EVP_PKEY *pkey = NULL;

        if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
                goto done;
        /* The point on the curve, the RSA exponent odd and > 1: a broken key is a load
         * error, not a verification that happens to fail later. */
        if (!(chk = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL)) || EVP_PKEY_public_check(chk) != 1) {
                EVP_PKEY_free(pkey);
                pkey = NULL;
        }
done:
        EVP_PKEY_CTX_free(chk);
        EVP_PKEY_CTX_free(ctx);
        OSSL_PARAM_free(params);
        return pkey;
}

static int load_rsa(const cJSON *jwk, sk__jwk_t *key, const char *kid, int max_bits, char *errstr,
                    size_t errstr_size)
{
        unsigned char *n = NULL, *e = NULL;
        size_t n_len = 0, e_len = 0;
        BIGNUM *bn_n = NULL, *bn_e = NULL;
        OSSL_PARAM_BLD *bld = NULL;
        int rc = -1, bits;

        if (member_bytes(jwk, "n", &n, &n_len, kid, errstr, errstr_size) != 0 ||
            member_bytes(jwk, "e", &e, &e_len, kid, errstr, errstr_size) != 0)
                goto done;
        if (!(bn_n = BN_bin2bn(n, (int)n_len, NULL)) || !(bn_e = BN_bin2bn(e, (int)e_len, NULL)) ||
            !(bld = OSSL_PARAM_BLD_new()) ||
            !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) ||
            !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) ||
            !(key->pkey = from_params("RSA", bld))) {
                sk_seterr(errstr, errstr_size, "key %s: not a valid RSA public key", kid);
                goto done;
        }
        bits = EVP_PKEY_get_bits(key->pkey);
        if (bits < 2048 || bits > max_bits) {
                sk_seterr(errstr, errstr_size, "key %s: RSA key of %d bits (RS256 here: 2048..%d%s)",
                          kid, bits, max_bits, bits > max_bits && max_bits < SK_JWKS_RSA_LIMIT_BITS ?
                          "; SECKILL_JWT_RSA_MAX_BITS allows more" : "");
                goto done;
        }
        key->alg = SK_JWT_RS256;
        key->sig_len = (size_t)EVP_PKEY_get_size(key->pkey);
        rc = 0;
done:
        OSSL_PARAM_BLD_free(bld);
        BN_free(bn_n);
        BN_free(bn_e);
        free(n);
        free(e);
        return rc;
}

static int load_ec(const cJSON *jwk, sk__jwk_t *key, const char *kid, char *errstr,
                   size_t errstr_size)
{
        const cJSON *crv = cJSON_GetObjectItemCaseSensitive(jwk, "crv");
        unsigned char *x = NULL, *y = NULL, pub[65];
        size_t x_len = 0, y_len = 0;
        OSSL_PARAM_BLD *bld = NULL;
        int rc = -1;

        if (!cJSON_IsString(crv) || strcmp(crv->valuestring, "P-256")) {
                sk_seterr(errstr, errstr_size, "key %s: EC key whose crv is not P-256", kid);
                goto done;
        }
        if (member_bytes(jwk, "x", &x, &x_len, kid, errstr, errstr_size) != 0 ||
            member_bytes(jwk, "y", &y, &y_len, kid, errstr, errstr_size) != 0)
                goto done;
        if (x_len != 32 || y_len != 32) {
                sk_seterr(errstr, errstr_size, "key %s: P-256 x and y must be 32 bytes each", kid);
                goto done;
        }
        pub[0] = 0x04; /* uncompressed point (SEC 1) */
        memcpy(pub + 1, x, 32);
        memcpy(pub + 33, y, 32);
        if (!(bld = OSSL_PARAM_BLD_new()) ||
            !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
            !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)) ||
            !(key->pkey = from_params("EC", bld))) {
                sk_seterr(errstr, errstr_size, "key %s: not a valid P-256 public key", kid);
                goto done;
        }
        key->alg = SK_JWT_ES256;
        key->sig_len = 64;
        rc = 0;
done:
        OSSL_PARAM_BLD_free(bld);
        free(x);
        free(y);
        return rc;
}

static int load_oct(const cJSON *jwk, sk__jwk_t *key, const char *kid, char *errstr,
                    size_t errstr_size)
{
        if (member_bytes(jwk, "k", &key->secret, &key->secret_len, kid, errstr, errstr_size) != 0)
                return -1;
        /* RFC 7518 3.2: an HS256 key is at least 256 bits. Never an empty key. */
        if (key->secret_len < 32) {
                sk_seterr(errstr, errstr_size, "key %s: oct key of %zu bytes (HS256 needs >= 32)",
                          kid, key->secret_len);
                return -1;
        }
        key->alg = SK_JWT_HS256;
        key->sig_len = 32;
        return 0;
}

static void key_clear(sk__jwk_t *key)
{
        EVP_PKEY_free(key->pkey);
        if (key->secret) {
                OPENSSL_cleanse(key->secret, key->secret_len);
                free(key->secret);
        }
        memset(key, 0, sizeof(*key));
}

/* One JWK into @p key. @returns 1 loaded, 0 skipped (another kty, or not a signing
 * key), -1 error (errstr). */
static int load_key(const cJSON *jwk, sk__jwk_t *key, size_t idx, int rsa_max_bits, char *errstr,
                    size_t errstr_size)
{
        const cJSON *kty = cJSON_GetObjectItemCaseSensitive(jwk, "kty");
        const cJSON *kid = cJSON_GetObjectItemCaseSensitive(jwk, "kid");
        const cJSON *use = cJSON_GetObjectItemCaseSensitive(jwk, "use");
        const cJSON *alg = cJSON_GetObjectItemCaseSensitive(jwk, "alg");
        char name[SK__JWK_KID_MAX + 16];
        int rc;

        memset(key, 0, sizeof(*key));
        if (!cJSON_IsObject(jwk) || !sk_json_unique_names(jwk)) {
                sk_seterr(errstr, errstr_size, "keys[%zu] is not a JSON object with unique names", idx);
                return -1;
        }
        if (kid) {
                if (!cJSON_IsString(kid) || !kid->valuestring[0] ||
                    strlen(kid->valuestring) >= SK__JWK_KID_MAX) {
                        sk_seterr(errstr, errstr_size, "keys[%zu]: kid must be a string of 1..%d bytes",
                                  idx, SK__JWK_KID_MAX - 1);
                        return -1;
                }
                snprintf(key->kid, sizeof(key->kid), "%s", kid->valuestring);
                key->has_kid = 1;
                snprintf(name, sizeof(name), "\"%s\"", kid->valuestring);
        } else {
                snprintf(name, sizeof(name), "keys[%zu]", idx);
        }
        if (!cJSON_IsString(kty)) {
                sk_seterr(errstr, errstr_size, "key %s: kty missing", name);
                return -1;
        }
        if (use && (!cJSON_IsString(use) || strcmp(use->valuestring, "sig")))
                return 0; /* an encryption key: not ours */
        if (!strcmp(kty->valuestring, "RSA"))
                rc = load_rsa(jwk, key, name, rsa_max_bits, errstr, errstr_size);
        else if (!strcmp(kty->valuestring, "EC"))
                rc = load_ec(jwk, key, name, errstr, errstr_size);
        else if (!strcmp(kty->valuestring, "oct"))
                rc = load_oct(jwk, key, name, errstr, errstr_size);
        else
                return 0; /* OKP and others: no algorithm of ours */
        if (rc != 0) {
                key_clear(key);
                return -1;
        }
        /* The JWK's own alg pins it further; one that contradicts its kty is a broken
         * file, not a key to skip. */
        if (alg && (!cJSON_IsString(alg) || sk__jwks_alg_parse(alg->valuestring) != key->alg)) {
                sk_seterr(errstr, errstr_size, "key %s: alg %s does not fit kty %s", name,
                          cJSON_IsString(alg) ? alg->valuestring : "(not a string)", kty->valuestring);
                key_clear(key);
                return -1;
        }
        return 1;
}

static void jwks_free(sk_jwks_t *ks)
{
        size_t i;

        if (!ks)
                return;
        for (i = 0; i < ks->n; i++)
                key_clear(&ks->keys[i]);
        free(ks->keys);
        EVP_MD_free(ks->sha256);
        free(ks);
}

/* Every kid distinct; with several keys every key has one. @returns 0 or -1. */
static int check_kids(const sk_jwks_t *ks, char *errstr, size_t errstr_size)
{
        size_t i, j;

        for (i = 0; i < ks->n; i++) {
                if (!ks->keys[i].has_kid && ks->n > 1) {
                        sk_seterr(errstr, errstr_size, "a key without kid in a set of %zu keys", ks->n);
                        return -1;
                }
                for (j = i + 1; j < ks->n; j++)
                        if (ks->keys[i].has_kid && ks->keys[j].has_kid &&
                            !strcmp(ks->keys[i].kid, ks->keys[j].kid)) {
                                sk_seterr(errstr, errstr_size, "kid \"%s\" appears twice", ks->keys[i].kid);
                                return -1;
                        }
        }
        return 0;
}

sk_jwks_t *sk_jwks_parse(const char *json, size_t len, uint64_t generation, int rsa_max_bits,
                         char *errstr, size_t errstr_size)
{
        cJSON *root = cJSON_ParseWithLength(json, len);
        int max_bits = rsa_max_bits > 0 ? rsa_max_bits : SK_JWKS_RSA_MAX_BITS;
        const cJSON *keys, *jwk;
        sk_jwks_t *ks = NULL;
        size_t idx = 0;
        int count, rc;

        if (!cJSON_IsObject(root) || !sk_json_unique_names(root)) {
                sk_seterr(errstr, errstr_size, "not a JSON object (with unique member names)");
                goto fail;
        }
        keys = cJSON_GetObjectItemCaseSensitive(root, "keys");
        if (!cJSON_IsArray(keys) || (count = cJSON_GetArraySize(keys)) <= 0) {
                sk_seterr(errstr, errstr_size, "no \"keys\" array, or an empty one");
                goto fail;
        }
        if (!(ks = calloc(1, sizeof(*ks))) || !(ks->keys = calloc((size_t)count, sizeof(*ks->keys))) ||
            !(ks->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                goto fail;
        }
        atomic_init(&ks->refs, 1);
        ks->generation = generation;
        cJSON_ArrayForEach(jwk, keys) {
                rc = load_key(jwk, &ks->keys[ks->n], idx++, max_bits, errstr, errstr_size);
                if (rc < 0)
                        goto fail;
                ks->n += (size_t)rc;
        }
        if (!ks->n) {
                sk_seterr(errstr, errstr_size, "no usable signing key (RSA, EC P-256 or oct)");
                goto fail;
        }
        if (check_kids(ks, errstr, errstr_size) != 0)
                goto fail;
        cJSON_Delete(root);
        return ks;
fail:
        jwks_free(ks);
        cJSON_Delete(root);
        return NULL;
}

sk_jwks_t *sk_jwks_load_file(const char *path, uint64_t generation, int rsa_max_bits,
                             unsigned char *sha256, char *errstr, size_t errstr_size)
{
        FILE *f = fopen(path, "rb");
        char *buf = NULL;
        size_t len = 0;
        sk_jwks_t *ks = NULL;
        char why[400];

        if (!f) {
                sk_seterr(errstr, errstr_size, "%s: %s", path, strerror(errno));
                return NULL;
        }
        if (!(buf = malloc(JWKS_MAX_BYTES + 1))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                goto done;
        }
        len = fread(buf, 1, JWKS_MAX_BYTES + 1, f);
        if (ferror(f) || len > JWKS_MAX_BYTES) {
                sk_seterr(errstr, errstr_size, "%s: %s", path,
                          ferror(f) ? "read error" : "larger than 1 MiB");
                goto done;
        }
        if (sha256)
                SHA256((const unsigned char *)buf, len, sha256);
        if (!(ks = sk_jwks_parse(buf, len, generation, rsa_max_bits, why, sizeof(why))))
                sk_seterr(errstr, errstr_size, "%s: %s", path, why);
done:
        if (buf) {
                OPENSSL_cleanse(buf, len); /* oct secrets */
                free(buf);
        }
        fclose(f);
        return ks;
}

void sk_jwks_ref(sk_jwks_t *ks)
{
        atomic_fetch_add(&ks->refs, 1);
}

void sk_jwks_unref(sk_jwks_t *ks)
{
        if (ks && atomic_fetch_sub(&ks->refs, 1) == 1)
                jwks_free(ks);
}

size_t sk_jwks_count(const sk_jwks_t *ks)
{
        return ks->n;
}

uint64_t sk_jwks_generation(const sk_jwks_t *ks)
{
        return ks->generation;
}
