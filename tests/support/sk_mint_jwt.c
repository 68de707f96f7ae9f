/* sk_mint_jwt.c: sk-mint-jwt, test and demo tokens for SECKILL_AUTH=jwt (DESIGN.md 15).
 *   sk-mint-jwt gen DIR        three keys: DIR/jwks.json (the public JWKS for
 *                              SECKILL_JWT_KEYS_FILE; it holds the HS256 secret "hs1"),
 *                              DIR/rs1.pem (RS256, 2048 bits) and DIR/es1.pem (ES256, P-256)
 *   sk-mint-jwt sign --key FILE --kid KID --sub USERID [--exp-in S | --exp T]
 *                    [--iss ISS] [--aud AUD] [--count N]
 *                              one token on stdout: FILE is a private PEM (RS256/ES256)
 *                              or a JWKS holding the oct key KID (HS256); with --count,
 *                              N tokens, one per line, for USERID, USERID+1, ... (the
 *                              buyers of bench/sale.sh's JWT run)
 * Exit 0, 1 on failure, 2 on bad usage. Test material: keys are written unencrypted. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sk/ids.h"
#include "sk_test_jwt.h"

static int usage(void)
{
        fprintf(stderr, "usage: sk-mint-jwt gen DIR\n"
                        "       sk-mint-jwt sign --key FILE --kid KID --sub USERID [--exp-in S | --exp T]"
                        " [--iss ISS] [--aud AUD] [--count N]\n");
        return 2;
}

static int gen(const char *dir)
{
        sk_test_jwk_t *keys[3] = { sk_test_jwk_new(SK_JWT_RS256, "rs1", 2048),
                                   sk_test_jwk_new(SK_JWT_ES256, "es1", 0),
                                   sk_test_jwk_new(SK_JWT_HS256, "hs1", 0) };
        char path[4096], *json = NULL;
        int rc = 1, i;

        mkdir(dir, 0700);
        if (!keys[0] || !keys[1] || !keys[2] || !(json = sk_test_jwks_json(keys, 3)))
                goto done;
        snprintf(path, sizeof(path), "%s/jwks.json", dir);
        if (sk_test_write_file(path, json) != 0)
                goto done;
        snprintf(path, sizeof(path), "%s/rs1.pem", dir);
        if (sk_test_jwk_write_pem(keys[0], path) != 0)
                goto done;
        snprintf(path, sizeof(path), "%s/es1.pem", dir);
        if (sk_test_jwk_write_pem(keys[1], path) != 0)
                goto done;
        printf("%s/jwks.json (kids rs1 es1 hs1), %s/rs1.pem, %s/es1.pem\n", dir, dir, dir);
        rc = 0;
done:
        if (rc)
                fprintf(stderr, "sk-mint-jwt: cannot write the keys under %s\n", dir);
        free(json);
        for (i = 0; i < 3; i++)
                sk_test_jwk_free(keys[i]);
        return rc;
}

/* A whole decimal number of @p s into @p out: 0, or -1 when @p s is not one. */
static int parse_ll(const char *s, long long *out)
{
        char *end;

        errno = 0;
        *out = strtoll(s, &end, 10);
        return errno || end == s || *end ? -1 : 0;
}

static int sign(int argc, char **argv)
{
        const char *key = NULL, *kid = NULL, *sub = NULL, *iss = NULL, *aud = NULL;
        long long exp = (long long)time(NULL) + 3600;
        long long count = 1, v;
        char extra[1024] = "", *tok;
        sk_test_jwk_t *k;
        int64_t uid;
        int i, bad = 0;

        for (i = 0; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--key"))
                        key = argv[i + 1];
                else if (!strcmp(argv[i], "--kid"))
                        kid = argv[i + 1];
                else if (!strcmp(argv[i], "--sub"))
                        sub = argv[i + 1];
                else if (!strcmp(argv[i], "--exp-in"))
                        bad |= parse_ll(argv[i + 1], &v), exp = (long long)time(NULL) + v;
                else if (!strcmp(argv[i], "--exp"))
                        bad |= parse_ll(argv[i + 1], &exp);
                else if (!strcmp(argv[i], "--count"))
                        bad |= parse_ll(argv[i + 1], &count);
                else if (!strcmp(argv[i], "--iss"))
                        iss = argv[i + 1];
                else if (!strcmp(argv[i], "--aud"))
                        aud = argv[i + 1];
                else
                        return usage();
        }
        if (bad || i != argc || !key || !kid || !sub || sk_id_parse_cstr(sub, &uid) != 0 ||
            count < 1 || count > 10000000 || uid > INT64_MAX - count)
                return usage();
        k = strstr(key, ".pem") ? sk_test_jwk_from_pem(key, kid) : sk_test_jwk_from_jwks_oct(key, kid);
        if (!k)
                return 1;
        if (iss)
                snprintf(extra, sizeof(extra), ",\"iss\":\"%s\"", iss);
        if (aud)
                snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), ",\"aud\":\"%s\"", aud);
        for (v = 0; v < count; v++) {
                if (!(tok = sk_test_jwt_mint(k, uid + v, exp, extra)))
                        break;
                printf("%s\n", tok);
                free(tok);
        }
        sk_test_jwk_free(k);
        return v == count && fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
        if (argc == 3 && !strcmp(argv[1], "gen"))
                return gen(argv[2]);
        if (argc >= 2 && !strcmp(argv[1], "sign"))
                return sign(argc - 2, argv + 2);
        return usage();
}
