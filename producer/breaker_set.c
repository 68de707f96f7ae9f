/* producer/breaker_set.c: the table of per-node Redis breakers (breaker_set.h,
 * DESIGN.md 4b, 12). Pure: time from the caller, no locking, no logging. */
#include <string.h>

#include "breaker_set.h"

void fr_brkset_init(fr_brkset_t *s, const sk_breaker_conf_t *c, int per_node, int64_t now_ms)
{
        memset(s, 0, sizeof(*s));
        s->c = *c;
        s->per_node = per_node;
        s->n = 1;
        s->e[0].live = 1;
        sk_breaker_init(&s->e[0].b, c, now_ms);
}

/* Index of @p addr, or -1 (entry 0 for NULL/"" or when not per-node). */
static int find(const fr_brkset_t *s, const char *addr)
{
        if (!s->per_node || !addr || !addr[0])
                return 0;
        for (int i = 1; i < s->n; i++)
                if (!strcmp(s->e[i].addr, addr))
                        return i;
        return -1;
}

int fr_brkset_entry(fr_brkset_t *s, const char *addr, int64_t now_ms)
{
        int i = find(s, addr);

        if (i >= 0)
                return i;
        if (s->n == FR_BRKSET_MAX || strlen(addr) >= FR_BRK_ADDR_MAX)
                return 0;
        i = s->n++;
        memset(&s->e[i], 0, sizeof(s->e[i]));
        strcpy(s->e[i].addr, addr);
        s->e[i].live = 1;
        sk_breaker_init(&s->e[i].b, &s->c, now_ms);
        return i;
}

int fr_brkset_allow(const fr_brkset_t *s, const char *addr)
{
        int i;

        if (!sk_breaker_allow(&s->e[0].b))
                return 0;
        i = find(s, addr);
        return i <= 0 || sk_breaker_allow(&s->e[i].b);
}

sk_brk_event_t fr_brkset_record(fr_brkset_t *s, const char *addr, int64_t now_ms, int failed,
                                int64_t latency_ms, int *idx_out)
{
        int i = fr_brkset_entry(s, addr, now_ms);

        if (idx_out)
                *idx_out = i;
        s->e[i].live = 1;
        return sk_breaker_record(&s->e[i].b, now_ms, failed, latency_ms);
}

int fr_brkset_usable(const fr_brkset_t *s)
{
        int nodes = 0, open = 0;

        if (!sk_breaker_allow(&s->e[0].b))
                return 0;
        for (int i = 1; i < s->n; i++) {
                if (!s->e[i].live)
                        continue;
                nodes++;
                open += !sk_breaker_allow(&s->e[i].b);
        }
        return nodes == 0 || open < nodes;
}

int fr_brkset_healthy(const fr_brkset_t *s, int64_t now_ms)
{
        for (int i = 0; i < s->n; i++)
                if (s->e[i].live && !sk_breaker_healthy(&s->e[i].b, now_ms))
                        return 0;
        return 1;
}

int fr_brkset_open_count(const fr_brkset_t *s)
{
        int open = 0;

        for (int i = 0; i < s->n; i++)
                open += s->e[i].live && !sk_breaker_allow(&s->e[i].b);
        return open;
}

int fr_brkset_retire(fr_brkset_t *s, int i, int64_t now_ms)
{
        int was_open;

        if (i < 1 || i >= s->n)
                return 0;
        was_open = s->e[i].live && s->e[i].b.state != SK_BRK_CLOSED;
        sk_breaker_init(&s->e[i].b, &s->c, now_ms);
        s->e[i].live = 0;
        return was_open;
}

int fr_brkset_moved(const fr_brkset_t *s, const char *const *masters, int nm, int *idx, int max)
{
        int c = 0, i, j;

        if (nm < 1)
                return 0;
        for (i = 1; i < s->n && c < max; i++) {
                if (!s->e[i].live)
                        continue;
                for (j = 0; j < nm && strcmp(masters[j], s->e[i].addr); j++)
                        ;
                if (j == nm)
                        idx[c++] = i;
        }
        return c;
}
