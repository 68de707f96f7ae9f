/* failpoint.c: named fault-injection points (DESIGN.md 11), in the manner of etcd's
 * gofail and TiKV's fail-rs. SECKILL_FAILPOINTS="a=exit;b=3*error;c=sleep(50);d=off".
 *
 * The table is installed once at start-up (sk_conf_load) before threads exist and is
 * then read-only except for the per-point counters, which are atomics: a counted point
 * ("N*action") fires exactly N times across all threads, then behaves as off.
 * Re-installing while other threads evaluate points is not supported (tests call
 * sk_failpoint_setup from the main thread only). It never logs: the firing is visible
 * through its effect (killed process, failed step, delay). */
#include <ctype.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sk/clock.h"
#include "sk/err.h"
#include "sk/failpoint.h"
#include "sk/log.h"

#define FP_MAX 64
#define FP_NAME_MAX 96

typedef enum { FP_OFF, FP_EXIT, FP_ERROR, FP_SLEEP } fp_action_t;

typedef struct fp {
        char name[FP_NAME_MAX];
        fp_action_t action;
        int64_t sleep_ms;
        int counted;                    /* 1 if "N*" was given */
        atomic_long remaining;          /* fires left when counted */
} fp_t;

static fp_t g_points[FP_MAX];
static int g_npoints;
int sk_failpoints_active;

/* Trims ASCII blanks from both ends of [*b, *e). */
static void trim(const char **b, const char **e)
{
        while (*b < *e && isspace((unsigned char)**b))
                (*b)++;
        while (*e > *b && isspace((unsigned char)(*e)[-1]))
                (*e)--;
}

/* Whole decimal in [min, max] from [b, e). */
static int parse_num(const char *b, const char *e, long min, long max, long *out)
{
        long v = 0;

        if (b == e || e - b > 12)
                return -1;
        for (; b < e; b++) {
                if (*b < '0' || *b > '9')
                        return -1;
                v = v * 10 + (*b - '0');
        }
        if (v < min || v > max)
                return -1;
        *out = v;
        return 0;
}

/* Parses one "name=[N*]action" entry of length [b, e) into *fp. */
static int parse_entry(const char *b, const char *e, fp_t *fp, char *errstr, size_t errstr_size)
{
        const char *eq = memchr(b, '=', (size_t)(e - b));
        const char *nb = b, *ne, *ab, *ae, *star;
        long n;

        if (!eq) {
                sk_seterr(errstr, errstr_size, "\"%.*s\": expected name=action", (int)(e - b), b);
                return -1;
        }
        ne = eq;
        trim(&nb, &ne);
        if (nb == ne || ne - nb >= FP_NAME_MAX) {
                sk_seterr(errstr, errstr_size, "\"%.*s\": bad failpoint name", (int)(e - b), b);
                return -1;
        }
        for (const char *p = nb; p < ne; p++) {
                if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-') {
                        sk_seterr(errstr, errstr_size, "\"%.*s\": bad character in failpoint name",
                                  (int)(ne - nb), nb);
                        return -1;
                }
        }
        memset(fp, 0, sizeof(*fp));
        memcpy(fp->name, nb, (size_t)(ne - nb));
        fp->name[ne - nb] = '\0';

        ab = eq + 1;
        ae = e;
        trim(&ab, &ae);
        star = memchr(ab, '*', (size_t)(ae - ab));
        if (star) {
                const char *cb = ab, *ce = star;
                trim(&cb, &ce);
                if (parse_num(cb, ce, 1, 1000000000L, &n) != 0) {
                        sk_seterr(errstr, errstr_size, "%s: bad count \"%.*s\" (1..1000000000)",
                                  fp->name, (int)(star - ab), ab);
                        return -1;
                }
                fp->counted = 1;
                atomic_store(&fp->remaining, n);
                ab = star + 1;
                trim(&ab, &ae);
        }
#define IS(lit) ((size_t)(ae - ab) == sizeof(lit) - 1 && memcmp(ab, lit, sizeof(lit) - 1) == 0)
        if (IS("exit")) {
                fp->action = FP_EXIT;
        } else if (IS("error")) {
                fp->action = FP_ERROR;
        } else if (IS("off")) {
                fp->action = FP_OFF;
        } else if (ae - ab > 7 && memcmp(ab, "sleep(", 6) == 0 && ae[-1] == ')') {
                if (parse_num(ab + 6, ae - 1, 0, 3600000L, &n) != 0) {
                        sk_seterr(errstr, errstr_size, "%s: bad sleep \"%.*s\" (sleep(0..3600000) ms)",
                                  fp->name, (int)(ae - ab), ab);
                        return -1;
                }
                fp->action = FP_SLEEP;
                fp->sleep_ms = n;
        } else {
                sk_seterr(errstr, errstr_size,
                          "%s: unknown action \"%.*s\" (exit, error, sleep(MS), off, optionally N*)",
                          fp->name, (int)(ae - ab), ab);
                return -1;
        }
#undef IS
        return 0;
}

int sk_failpoint_setup(const char *spec, char *errstr, size_t errstr_size)
{
        static fp_t parsed[FP_MAX];
        int n = 0, i;
        const char *p = spec;

        while (p && *p) {
                const char *end = strchr(p, ';');
                const char *b = p, *e;

                if (!end)
                        end = p + strlen(p);
                e = end;
                trim(&b, &e);
                if (b < e) {            /* empty entries ("a=off;;") are ignored */
                        if (n == FP_MAX) {
                                sk_seterr(errstr, errstr_size, "too many failpoints (max %d)", FP_MAX);
                                return -1;
                        }
                        if (parse_entry(b, e, &parsed[n], errstr, errstr_size) != 0)
                                return -1;
                        /* A later entry for the same name replaces the earlier one. */
                        for (i = 0; i < n; i++)
                                if (strcmp(parsed[i].name, parsed[n].name) == 0)
                                        break;
                        if (i < n) {
                                strcpy(parsed[i].name, parsed[n].name);
                                parsed[i].action = parsed[n].action;
                                parsed[i].sleep_ms = parsed[n].sleep_ms;
                                parsed[i].counted = parsed[n].counted;
                                atomic_store(&parsed[i].remaining, atomic_load(&parsed[n].remaining));
                        } else {
                                n++;
                        }
                }
                p = *end ? end + 1 : end;
        }

        /* Install only after the whole spec parsed: a bad spec changes nothing. */
        sk_failpoints_active = 0;
        for (i = 0; i < n; i++) {
                strcpy(g_points[i].name, parsed[i].name);
                g_points[i].action = parsed[i].action;
                g_points[i].sleep_ms = parsed[i].sleep_ms;
                g_points[i].counted = parsed[i].counted;
                atomic_store(&g_points[i].remaining, atomic_load(&parsed[i].remaining));
        }
        g_npoints = n;
        sk_failpoints_active = n > 0;
        return 0;
}

int sk_failpoint_setup_env(char *errstr, size_t errstr_size)
{
        return sk_failpoint_setup(getenv("SECKILL_FAILPOINTS"), errstr, errstr_size);
}

int sk_failpoint_eval(const char *name)
{
        fp_t *fp = NULL;
        int i;

        if (!sk_failpoints_active || !name)
                return 0;
        for (i = 0; i < g_npoints; i++) {
                if (strcmp(g_points[i].name, name) == 0) {
                        fp = &g_points[i];
                        break;
                }
        }
        if (!fp || fp->action == FP_OFF)
                return 0;
        if (fp->counted) {
                /* Claim one firing; when none are left the point is off. */
                long left = atomic_load(&fp->remaining);
                do {
                        if (left <= 0)
                                return 0;
                } while (!atomic_compare_exchange_weak(&fp->remaining, &left, left - 1));
        }
        switch (fp->action) {
        case FP_EXIT:
                /* SIGKILL: no atexit handlers, no flush, exactly like kill -9. */
                raise(SIGKILL);
                return 1;       /* not reached */
        case FP_ERROR:
                return 1;
        case FP_SLEEP:
                sk_sleep_ms(fp->sleep_ms, NULL);
                return 0;
        case FP_OFF:
                break;
        }
        return 0;
}

void sk_failpoint_log_start(void)
{
#ifdef SK_FAILPOINTS_ENABLED
        const char *spec = getenv("SECKILL_FAILPOINTS");

        if (sk_failpoints_active)
                SK_LOG(SK_WARN, "failpoints_active", "spec=\"%s\" (a testing build: DESIGN.md 11)",
                       spec ? spec : "");
        else
                SK_LOG(SK_INFO, "failpoints_compiled_in", "active=0 (a testing build: DESIGN.md 11)");
#endif
}
