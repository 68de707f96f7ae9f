/* redis_hscan.c: sk_redis_hscan (sk/redis.h), the one HSCAN cursor loop: a hash's
 * field/value pairs to a callback, one COUNT-sized reply at a time, so a big hash (a
 * voucher's trace or users hash) is never one reply in memory.
 * What it does not do: deduplicate (HSCAN may repeat a field) or retry. Not thread-safe
 * per sk_redis_t. */
#include <stdio.h>
#include <string.h>

#include "sk/redis.h"

sk_err_t sk_redis_hscan(sk_redis_t *r, const char *key, int count,
                        sk_err_t (*fn)(const char *field, size_t field_len, const char *val,
                                       size_t val_len, void *arg),
                        void *arg, char *errstr, size_t errstr_size)
{
        char cursor[32] = "0";
        char count_s[16];
        redisReply *reply = NULL;
        sk_err_t err = SK_OK;

        snprintf(count_s, sizeof(count_s), "%d", count > 0 ? count : 1000);
        do {
                const char *argv[5] = { "HSCAN", key, cursor, "COUNT", count_s };
                size_t argvlen[5] = { 5, strlen(key), strlen(cursor), 5, strlen(count_s) };
                redisReply *items;
                size_t i;

                if ((err = sk_redis_cmd(r, &reply, 5, argv, argvlen, errstr, errstr_size)) != SK_OK)
                        return err;
                if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
                    reply->element[0]->type != REDIS_REPLY_STRING ||
                    reply->element[1]->type != REDIS_REPLY_ARRAY ||
                    reply->element[0]->len >= sizeof(cursor)) {
                        sk_seterr(errstr, errstr_size, "HSCAN %s: unexpected reply", key);
                        err = SK_EREDIS;
                        goto done;
                }
                memcpy(cursor, reply->element[0]->str, reply->element[0]->len);
                cursor[reply->element[0]->len] = '\0';
                items = reply->element[1];
                for (i = 0; i + 1 < items->elements; i += 2) {
                        const redisReply *f = items->element[i], *val = items->element[i + 1];

                        if (f->type != REDIS_REPLY_STRING || val->type != REDIS_REPLY_STRING)
                                continue;
                        if ((err = fn(f->str, f->len, val->str, val->len, arg)) != SK_OK) {
                                if (err == SK_ENOMEM)
                                        sk_seterr(errstr, errstr_size, "out of memory reading %s",
                                                  key);
                                else
                                        sk_seterr(errstr, errstr_size, "HSCAN %s: %s", key,
                                                  sk_err2str(err));
                                goto done;
                        }
                }
                freeReplyObject(reply);
                reply = NULL;
        } while (strcmp(cursor, "0") != 0);
done:
        if (reply)
                freeReplyObject(reply);
        return err;
}
