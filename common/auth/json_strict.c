/* json_strict.c: signed JSON parsed strictly (sk/json_strict.h, DESIGN.md 15): cJSON
 * underneath, with the four refusals cJSON does not make itself: a member name used
 * twice (cJSON keeps both and its lookups return the first: a parser differential), a
 * NUL byte or a \u0000 escape (cJSON cuts the string there, "7\u00001" reads as "7"),
 * and bytes before or after the object (cJSON skips a byte-order mark and stops at the
 * object's end without looking further).
 * What it does not do: check what the members mean (the callers do). */
#include <string.h>

#include "sk/json_strict.h"

/* A \u0000 escape anywhere (even after an escaped backslash: a false positive costs a
 * document nobody needs). */
static int has_escaped_nul(const char *s, size_t len)
{
        size_t i;

        for (i = 0; i + 6 <= len; i++)
                if (s[i] == '\\' && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4))
                        return 1;
        return 0;
}

int sk_json_unique_names(const cJSON *item)
{
        const cJSON *a, *b;

        if (!item)
                return 1;
        for (a = item->child; a; a = a->next) {
                if (cJSON_IsObject(item))
                        for (b = a->next; b; b = b->next)
                                if (a->string && b->string && !strcmp(a->string, b->string))
                                        return 0;
                if ((cJSON_IsObject(a) || cJSON_IsArray(a)) && !sk_json_unique_names(a))
                        return 0;
        }
        return 1;
}

cJSON *sk_json_strict_object(const char *text, size_t len, const char **why)
{
        const char *end = NULL, *p, *stop = text + len;
        cJSON *root;
        const char *dummy;

        if (!why)
                why = &dummy;
        if (memchr(text, '\0', len) || has_escaped_nul(text, len)) {
                *why = "NUL in the JSON document";
                return NULL;
        }
        for (p = text; p < stop && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'); p++)
                ;
        if (p == stop || *p != '{') { /* also no byte-order mark, which cJSON skips */
                *why = "not a JSON object";
                return NULL;
        }
        if (!(root = cJSON_ParseWithLengthOpts(text, len, &end, 0)) || !cJSON_IsObject(root)) {
                cJSON_Delete(root);
                *why = "not a JSON object";
                return NULL;
        }
        for (p = end ? end : stop; p < stop; p++)
                if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
                        cJSON_Delete(root);
                        *why = "bytes after the JSON object";
                        return NULL;
                }
        if (!sk_json_unique_names(root)) {
                cJSON_Delete(root);
                *why = "a member name used twice";
                return NULL;
        }
        return root;
}
