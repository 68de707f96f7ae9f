/* metrics.c: a small Prometheus text-format registry (exposition format 0.0.4).
 *
 * Counters, gauges and fixed-bucket histograms. Updates are relaxed atomics, callable
 * from any thread without a lock. Registration takes the registry mutex and is meant for
 * start-up; render takes it too, so a late registration is safe, merely slower.
 * Every name is prefixed "seckill_" (DESIGN.md 3) unless it already is, both when
 * registering and when looking up. One metric = one (name, labels) series; series of
 * the same name share one HELP/TYPE header, printed before the first of them.
 * Histograms keep per-bucket counts and the sum in micro-units (int64, so the sum
 * is exact and atomic); the text shows cumulative _bucket{le=..}, _sum and _count.
 * Serving it over HTTP is not here (common/http/metrics_http.c, library sk_http),
 * so that only the binaries that serve HTTP link libmicrohttpd. Nothing here logs. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/metrics.h"

#define NAME_PREFIX "seckill_"
#define SK_HIST_MAX_BOUNDS 128

typedef enum { M_COUNTER, M_GAUGE, M_HIST } mtype_t;

struct sk_metric {
        mtype_t type;
        char *name;             /* with the seckill_ prefix */
        char *labels;           /* "" when none */
        char *help;
        _Atomic int64_t value;  /* counter, gauge */
        size_t nbounds;
        double *bounds;
        _Atomic uint64_t *buckets;      /* nbounds + 1 (the last is +Inf), not cumulative */
        _Atomic int64_t sum_micro;
        _Atomic uint64_t count;
};

struct sk_metrics {
        pthread_mutex_t mu;
        sk_metric_t **v;
        size_t n, cap;
};

sk_metrics_t *sk_metrics_new(void)
{
        sk_metrics_t *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        if (pthread_mutex_init(&m->mu, NULL) != 0) {
                free(m);
                return NULL;
        }
        return m;
}

static void metric_free(sk_metric_t *c)
{
        if (!c)
                return;
        free(c->name);
        free(c->labels);
        free(c->help);
        free(c->bounds);
        free((void *)c->buckets);
        free(c);
}

void sk_metrics_destroy(sk_metrics_t *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                metric_free(m->v[i]);
        free(m->v);
        pthread_mutex_destroy(&m->mu);
        free(m);
}

void sk_metrics_remove(sk_metrics_t *m, sk_metric_t *c)
{
        int found = 0;

        if (!m || !c)
                return;
        pthread_mutex_lock(&m->mu);
        for (size_t i = 0; i < m->n; i++)
                if (m->v[i] == c) {
                        /* shifted, not swapped: the series keep their order in the text */
                        memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(m->v[0]));
                        m->n--;
                        found = 1;
                        break;
                }
        pthread_mutex_unlock(&m->mu);
        if (found)
                metric_free(c);
}

static char *full_name(const char *name)
{
        size_t pl = strncmp(name, NAME_PREFIX, strlen(NAME_PREFIX)) == 0 ? 0 : strlen(NAME_PREFIX);
        size_t nl = strlen(name);
        char *s = malloc(pl + nl + 1);

        if (!s)
                return NULL;
        memcpy(s, NAME_PREFIX, pl);
        memcpy(s + pl, name, nl + 1);
        return s;
}

/* Registers or finds (name, labels). NULL on a type clash or ENOMEM. */
static sk_metric_t *reg(sk_metrics_t *m, mtype_t type, const char *name, const char *labels,
                        const char *help, const double *bounds, size_t nbounds)
{
        sk_metric_t *c = NULL;
        char *fname;

        if (!m || !name || !*name)
                return NULL;
        if (!labels)
                labels = "";
        if (!(fname = full_name(name)))
                return NULL;
        pthread_mutex_lock(&m->mu);
        for (size_t i = 0; i < m->n; i++) {
                if (strcmp(m->v[i]->name, fname) == 0 && strcmp(m->v[i]->labels, labels) == 0) {
                        c = m->v[i]->type == type ? m->v[i] : NULL;
                        goto done;
                }
        }
        if (m->n == m->cap) {
                size_t ncap = m->cap ? m->cap * 2 : 16;
                sk_metric_t **nv = realloc(m->v, ncap * sizeof(*nv));
                if (!nv)
                        goto done;
                m->v = nv;
                m->cap = ncap;
        }
        if (!(c = calloc(1, sizeof(*c))))
                goto done;
        c->type = type;
        c->name = fname;
        fname = NULL;           /* c owns it */
        c->labels = strdup(labels);
        c->help = strdup(help ? help : "");
        if (type == M_HIST) {
                c->nbounds = nbounds;
                c->bounds = calloc(nbounds ? nbounds : 1, sizeof(double));
                c->buckets = calloc(nbounds + 1, sizeof(*c->buckets));
                if (c->bounds && nbounds)
                        memcpy(c->bounds, bounds, nbounds * sizeof(double));
        }
        if (!c->labels || !c->help || (type == M_HIST && (!c->bounds || !c->buckets))) {
                metric_free(c);
                c = NULL;
                goto done;
        }
        m->v[m->n++] = c;
done:
        pthread_mutex_unlock(&m->mu);
        free(fname);
        return c;
}

sk_metric_t *sk_metrics_counter(sk_metrics_t *m, const char *name, const char *labels, const char *help)
{
        return reg(m, M_COUNTER, name, labels, help, NULL, 0);
}

sk_metric_t *sk_metrics_gauge(sk_metrics_t *m, const char *name, const char *labels, const char *help)
{
        return reg(m, M_GAUGE, name, labels, help, NULL, 0);
}

sk_metric_t *sk_metrics_hist(sk_metrics_t *m, const char *name, const char *labels, const char *help,
                             const double *bounds, size_t nbounds)
{
        if (nbounds > SK_HIST_MAX_BOUNDS || (nbounds && !bounds))
                return NULL;
        for (size_t i = 1; i < nbounds; i++)
                if (!(bounds[i] > bounds[i - 1]))
                        return NULL;    /* bounds must be strictly ascending */
        return reg(m, M_HIST, name, labels, help, bounds, nbounds);
}

void sk_metric_add(sk_metric_t *c, int64_t n)
{
        if (c && c->type != M_HIST)
                atomic_fetch_add_explicit(&c->value, n, memory_order_relaxed);
}

void sk_metric_set(sk_metric_t *g, int64_t v)
{
        if (g && g->type != M_HIST)
                atomic_store_explicit(&g->value, v, memory_order_relaxed);
}

void sk_metric_observe(sk_metric_t *h, double v)
{
        size_t i;

        if (!h || h->type != M_HIST || isnan(v))
                return;
        for (i = 0; i < h->nbounds && v > h->bounds[i]; i++)
                ;
        atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
        /* Sum in micro-units; clamp so a wild value cannot overflow the conversion. */
        if (v > 9.0e12)
                v = 9.0e12;
        if (v < -9.0e12)
                v = -9.0e12;
        atomic_fetch_add_explicit(&h->sum_micro, (int64_t)llround(v * 1e6), memory_order_relaxed);
        atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

int64_t sk_metric_value(const sk_metric_t *c)
{
        if (!c)
                return 0;
        if (c->type == M_HIST)
                return (int64_t)atomic_load_explicit(&((sk_metric_t *)c)->count, memory_order_relaxed);
        return atomic_load_explicit(&((sk_metric_t *)c)->value, memory_order_relaxed);
}

double sk_metric_quantile(const sk_metric_t *h, double q)
{
        sk_metric_t *hh = (sk_metric_t *)h;
        uint64_t total = 0, cum = 0, rank;
        uint64_t counts[SK_HIST_MAX_BOUNDS + 1];
        size_t nb, i;

        if (!h || h->type != M_HIST || h->nbounds == 0)
                return 0.0;
        nb = h->nbounds + 1;
        /* Snapshot the buckets once, so total and the walk agree. */
        for (i = 0; i < nb; i++) {
                counts[i] = atomic_load_explicit(&hh->buckets[i], memory_order_relaxed);
                total += counts[i];
        }
        if (total == 0)
                return 0.0;
        if (q < 0)
                q = 0;
        if (q > 1)
                q = 1;
        rank = (uint64_t)ceil(q * (double)total);
        if (rank < 1)
                rank = 1;
        for (i = 0; i < nb; i++) {
                cum += counts[i];
                if (cum >= rank)
                        break;
        }
        /* The +Inf bucket has no upper bound: report the highest finite one
         * (Prometheus' histogram_quantile does the same). */
        if (i >= h->nbounds)
                i = h->nbounds - 1;
        return h->bounds[i];
}

/* ------------------------------------------------------------------ render */

typedef struct sbuf {
        char *p;
        size_t len, cap;
        int oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (b->oom)
                return;
        for (;;) {
                va_start(ap, fmt);
                n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        b->oom = 1;
                        return;
                }
                if ((size_t)n < b->cap - b->len) {
                        b->len += (size_t)n;
                        return;
                }
                {
                        size_t ncap = (b->cap + (size_t)n + 1) * 2;
                        char *np = realloc(b->p, ncap);
                        if (!np) {
                                b->oom = 1;
                                return;
                        }
                        b->p = np;
                        b->cap = ncap;
                }
        }
}

/* Prometheus HELP text escapes backslash and newline. */
static void sb_help(sbuf_t *b, const char *help)
{
        for (; *help; help++) {
                if (*help == '\\')
                        sb_printf(b, "\\\\");
                else if (*help == '\n')
                        sb_printf(b, "\\n");
                else
                        sb_printf(b, "%c", *help);
        }
}

static void fmt_double(char *buf, size_t size, double v)
{
        if (isinf(v))
                snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        else
                snprintf(buf, size, "%.15g", v);
}

static void render_one(sbuf_t *b, const sk_metric_t *c)
{
        sk_metric_t *cc = (sk_metric_t *)c;
        const char *l = c->labels;
        int hl = *l != 0;

        if (c->type != M_HIST) {
                sb_printf(b, "%s%s%s%s %lld\n", c->name, hl ? "{" : "", l, hl ? "}" : "",
                          (long long)atomic_load_explicit(&cc->value, memory_order_relaxed));
                return;
        }
        {
                uint64_t cum = 0, total;
                int64_t sum_micro;
                char num[64];
                size_t i;

                for (i = 0; i <= c->nbounds; i++) {
                        cum += atomic_load_explicit(&cc->buckets[i], memory_order_relaxed);
                        if (i < c->nbounds)
                                fmt_double(num, sizeof(num), c->bounds[i]);
                        else
                                snprintf(num, sizeof(num), "+Inf");
                        sb_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", c->name, l, hl ? "," : "", num,
                                  (unsigned long long)cum);
                }
                /* _count equals the +Inf bucket in this snapshot, as Prometheus requires. */
                total = cum;
                sum_micro = atomic_load_explicit(&cc->sum_micro, memory_order_relaxed);
                fmt_double(num, sizeof(num), (double)sum_micro / 1e6);
                sb_printf(b, "%s_sum%s%s%s %s\n", c->name, hl ? "{" : "", l, hl ? "}" : "", num);
                sb_printf(b, "%s_count%s%s%s %llu\n", c->name, hl ? "{" : "", l, hl ? "}" : "",
                          (unsigned long long)total);
        }
}

char *sk_metrics_render(sk_metrics_t *m)
{
        static const char *const tname[] = { "counter", "gauge", "histogram" };
        sbuf_t b = { NULL, 0, 0, 0 };
        unsigned char *done;

        if (!m)
                return NULL;
        b.cap = 4096;
        if (!(b.p = malloc(b.cap)))
                return NULL;
        b.p[0] = '\0';
        pthread_mutex_lock(&m->mu);
        done = calloc(m->n ? m->n : 1, 1);
        if (!done) {
                b.oom = 1;
                goto out;
        }
        /* Group the series by name, in order of first registration. */
        for (size_t i = 0; i < m->n; i++) {
                if (done[i])
                        continue;
                sb_printf(&b, "# HELP %s ", m->v[i]->name);
                sb_help(&b, m->v[i]->help);
                sb_printf(&b, "\n# TYPE %s %s\n", m->v[i]->name, tname[m->v[i]->type]);
                for (size_t j = i; j < m->n; j++) {
                        if (!done[j] && strcmp(m->v[j]->name, m->v[i]->name) == 0) {
                                render_one(&b, m->v[j]);
                                done[j] = 1;
                        }
                }
        }
out:
        pthread_mutex_unlock(&m->mu);
        free(done);
        if (b.oom) {
                free(b.p);
                return NULL;
        }
        return b.p;
}
