/* redis_error.c: the Redis error-word classifier (sk/redis_error.h, DESIGN.md 8): whole
 * first words of an error reply, and the "did not run" class. Pure; thread-safe. */
#include <string.h>

#include "sk/redis_error.h"

int sk_redis_error_is(const char *s, size_t len, const char *word)
{
        size_t n = strlen(word);

        return s && len >= n && memcmp(s, word, n) == 0 && (len == n || s[n] == ' ');
}

int sk_redis_error_not_run(const char *s, size_t len)
{
        static const char *const words[] = { "BUSY", "LOADING", "READONLY", "OOM",
                                             "MASTERDOWN", "NOREPLICAS", "TRYAGAIN",
                                             "CLUSTERDOWN", "NOSCRIPT", NULL };
        int i;

        for (i = 0; words[i]; i++)
                if (sk_redis_error_is(s, len, words[i]))
                        return 1;
        return 0;
}

int sk_redis_reply_is(const redisReply *reply, const char *word)
{
        return reply && reply->type == REDIS_REPLY_ERROR &&
               sk_redis_error_is(reply->str, reply->len, word);
}
