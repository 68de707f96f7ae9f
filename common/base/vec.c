/* vec.c: growable int64_t array (sk/vec.h). Pure memory code: no I/O, no logging. */
#include <stdlib.h>

#include "sk/vec.h"

sk_err_t sk_i64vec_push(sk_i64vec_t *a, int64_t x)
{
        if (a->n == a->cap) {
                size_t cap = a->cap ? a->cap * 2 : 64;
                int64_t *v = realloc(a->v, cap * sizeof(*v));
                if (!v)
                        return SK_ENOMEM; /* a->v is still valid and still ours */
                a->v = v;
                a->cap = cap;
        }
        a->v[a->n++] = x;
        return SK_OK;
}

void sk_i64vec_free(sk_i64vec_t *a)
{
        if (!a)
                return;
        free(a->v);
        a->v = NULL;
        a->n = a->cap = 0;
}

int sk_i64_cmp(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

void sk_i64vec_sort_unique(sk_i64vec_t *a)
{
        size_t i, j = 0;

        if (a->n == 0)
                return;
        qsort(a->v, a->n, sizeof(*a->v), sk_i64_cmp);
        for (i = 1; i < a->n; i++)
                if (a->v[i] != a->v[j])
                        a->v[++j] = a->v[i];
        a->n = j + 1;
}

int sk_i64vec_contains(const sk_i64vec_t *sorted, int64_t x)
{
        return sorted->n &&
               bsearch(&x, sorted->v, sorted->n, sizeof(*sorted->v), sk_i64_cmp) != NULL;
}
