/* conf_help.c: what the configuration module prints (sk/conf.h, conf_int.h): --help,
 * --help-markdown (the option tables of docs/OPERATIONS.md) and --print-config, each
 * rendered from the option tables (the common one of conf_table.c and the binary's
 * sk_opt_t rows), so an option's default, bounds and help are written once, in its row.
 * Not thread-safe: called from sk_conf_load, before threads exist. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk/conf.h"
#include "conf_int.h"

/* ------------------------------------------------------------------ --help */

/* The default of a common option as --help shows it ("6", "none", a masked URL). */
static void copt_default(const copt_t *o, const sk_conf_t *d, char *def, size_t size)
{
        const char *field = (const char *)d + o->off;

        if (o->kind == V_INT) {
                int v = *(const int *)(const void *)field;
                if (v < o->min && o->unset)
                        sk__sfmt(def, size, ": %s", o->unset);
                else if (v < 0)
                        sk__sfmt(def, size, " none");
                else
                        sk__sfmt(def, size, " %d", v);
        } else if (o->kind == V_LEVEL) {
                sk__sfmt(def, size, " %s", o->def);
        } else if (!*field && o->unset) {
                sk__sfmt(def, size, ": %s", o->unset);
        } else {
                def[0] = ' ';
                sk__mask_url(field, def + 1, size - 1);
        }
}

/* The default of a binary's option as --help shows it, after "default": " 2 (1..64)",
 * " none (1..4)" or ": <unset> (1..4)" when it is not given, " \"text\"", " on"/" off". */
static void extra_default(const sk_opt_t *o, char *def, size_t size)
{
        const char *s = o->def_str ? o->def_str : "";

        if (o->type == SK_OPT_INT && o->def >= o->min && o->def <= o->max)
                sk__sfmt(def, size, " %ld (%ld..%ld)", o->def, o->min, o->max);
        else if (o->type == SK_OPT_INT)
                sk__sfmt(def, size, "%s%s (%ld..%ld)", o->unset ? ": " : " ",
                         o->unset ? o->unset : "none", o->min, o->max);
        else if (o->type == SK_OPT_STR && !*s && o->unset)
                sk__sfmt(def, size, ": %s", o->unset);
        else if (o->type == SK_OPT_STR)
                sk__sfmt(def, size, " \"%s\"", s);
        else
                sk__sfmt(def, size, " %s", o->def ? "on" : "off");
}

void sk_conf_print_extra(FILE *f, const sk_opt_t *extra, size_t nextra)
{
        char def[600], left[80];

        for (size_t i = 0; i < nextra; i++) {
                const sk_opt_t *o = &extra[i];
                sk__sfmt(left, sizeof(left), "--%s%s", o->name,
                         o->type == SK_OPT_INT ? " N" : o->type == SK_OPT_STR ? " S" : "");
                extra_default(o, def, sizeof(def));
                fprintf(f, "  %-34s %s\n  %-34s   %s%s%sdefault%s\n", left, o->help ? o->help : "", "",
                        o->env ? "env " : "", o->env ? o->env : "", o->env ? ", " : "", def);
        }
}

void sk_conf_print_options(FILE *f, unsigned bins, const sk_opt_t *extra, size_t nextra)
{
        sk_conf_t d;
        char def[600], left[80];

        sk_conf_defaults(&d);
        for (size_t i = 0; i < SK__NCOPTS; i++) {
                const copt_t *o = &sk__copts[i];
                if (!(o->bins & bins))
                        continue;
                copt_default(o, &d, def, sizeof(def));
                sk__sfmt(left, sizeof(left), "--%s %s", o->flag, o->arg);
                if (sk__copt_secret(o))
                        fprintf(f, "  %-34s %s\n  %-34s   env %s or %s_FILE (read from that file), default%s\n",
                                left, o->help, "", o->env, o->env, def);
                else
                        fprintf(f, "  %-34s %s\n  %-34s   env %s, default%s\n", left, o->help, "", o->env, def);
        }
        sk_conf_print_extra(f, extra, nextra);
        fprintf(f, "  %-34s %s\n", "-X KEY=VALUE", "librdkafka property (repeatable)");
        fprintf(f, "  %-34s %s\n", "--print-config", "print the configuration (secrets masked) and exit");
        fprintf(f, "  %-34s %s\n", "--version", "print the version and exit");
        fprintf(f, "  %-34s %s\n", "-h, --help", "print this help and exit");
}

void sk__print_help(FILE *f, unsigned bins, const char *prog, const char *usage_args,
                    const sk_opt_t *extra, size_t nextra)
{
        fprintf(f, "Usage: %s [options]%s%s\n\nOptions (flag > environment > default):\n", prog,
                usage_args ? " " : "", usage_args ? usage_args : "");
        sk_conf_print_options(f, bins, extra, nextra);
#ifdef SK_FAILPOINTS_ENABLED
        fprintf(f, "\nSECKILL_FAILPOINTS=name=[N*]exit|error|sleep(MS)|off;... enables failpoints.\n");
#endif
}

/* ------------------------------------------------------------------ --help-markdown */

/* @p s as the text of a table cell: '|' escaped. */
static void md_text(FILE *f, const char *s)
{
        for (; *s; s++) {
                if (*s == '|')
                        fputc('\\', f);
                fputc(*s, f);
        }
}

/* The binaries of SK_BIN_* bits @p bins, "every binary" for all of them. */
static void md_bins(FILE *f, unsigned bins)
{
        static const char *const names[] = { "front", "consumer", "reconciler", "admin" };
        const char *sep = "";

        if ((bins & SK_BIN_ALL) == SK_BIN_ALL) {
                fputs("every binary", f);
                return;
        }
        for (unsigned i = 0; i < 4; i++)
                if (bins & (1u << i)) {
                        fprintf(f, "%s%s", sep, names[i]);
                        sep = ", ";
                }
}

static void md_header(FILE *f, const char *who)
{
        fprintf(f, "| variable | flag | %s | default | range | meaning |\n|---|---|---|---|---|---|\n", who);
}

static void md_common(FILE *f)
{
        fputs("<!-- common -->\n", f);
        md_header(f, "used by");
        for (size_t i = 0; i < SK__NCOPTS; i++) {
                const copt_t *o = &sk__copts[i];
                fprintf(f, "| `%s`", o->env);
                if (sk__copt_secret(o))
                        fprintf(f, " or `%s_FILE`", o->env);
                fprintf(f, " | `--%s` | ", o->flag);
                md_bins(f, o->bins);
                if (o->kind == V_INT && o->unset && strtol(o->def, NULL, 10) < o->min)
                        fprintf(f, " | %s | %ld..%ld | ", o->unset, o->min, o->max);
                else if (o->kind == V_INT)
                        fprintf(f, " | `%s` | %ld..%ld | ", o->def, o->min, o->max);
                else if (!*o->def && o->unset) {
                        fprintf(f, " | %s | `", o->unset);
                        md_text(f, o->arg);
                        fputs("` | ", f);
                } else {
                        fprintf(f, " | `%s` | `", o->def);
                        md_text(f, o->arg);
                        fputs("` | ", f);
                }
                md_text(f, o->help);
                fputs(" |\n", f);
        }
        /* Read by the loader too (validate_pass, conf.c); whatever the build. */
        fputs("| `SECKILL_FAILPOINTS` | — | every binary | unset | `name=[N*]exit\\|error\\|sleep(MS)\\|off;...` "
              "| fault injection for tests (DESIGN.md 11); a build without failpoints refuses it |\n", f);
}

void sk__print_markdown(FILE *f, const char *prog, const sk_opt_t *extra, size_t nextra)
{
        const char *who = strncmp(prog, "seckill-", 8) == 0 ? prog + 8 : prog;

        md_common(f);
        fprintf(f, "<!-- %s -->\n", prog);
        md_header(f, "binary");
        for (size_t i = 0; i < nextra; i++) {
                const sk_opt_t *o = &extra[i];
                const char *s = o->def_str ? o->def_str : "";
                if (o->env)
                        fprintf(f, "| `%s` | `--%s` | %s | ", o->env, o->name, who);
                else
                        fprintf(f, "| — | `--%s` | %s | ", o->name, who);
                if (o->type == SK_OPT_INT && o->def >= o->min && o->def <= o->max)
                        fprintf(f, "`%ld` | %ld..%ld | ", o->def, o->min, o->max);
                else if (o->type == SK_OPT_INT)
                        fprintf(f, "%s | %ld..%ld | ", o->unset ? o->unset : "none", o->min, o->max);
                else if (o->type == SK_OPT_STR && *s)
                        fprintf(f, "`%s` | text, max %zu chars | ", s, o->dst_size - 1);
                else if (o->type == SK_OPT_STR)
                        fprintf(f, "%s | text, max %zu chars | ", o->unset ? o->unset : "none",
                                o->dst_size - 1);
                else
                        fprintf(f, "off | flag | ");
                md_text(f, o->help ? o->help : "");
                fputs(" |\n", f);
        }
}

/* ------------------------------------------------------------------ --print-config */

void sk__print_config(FILE *f, unsigned bins, const sk_conf_t *conf, const sk_opt_t *extra,
                      size_t nextra)
{
        static const char *const levels[] = { "debug", "info", "warn", "error" };
        char masked[600];

        for (size_t i = 0; i < SK__NCOPTS; i++) {
                const copt_t *o = &sk__copts[i];
                const char *field = (const char *)conf + o->off;
                int v = o->kind == V_INT || o->kind == V_LEVEL ? *(const int *)(const void *)field : 0;
                if (!(o->bins & bins))
                        continue;
                if (o->kind == V_INT && o->unset && v < o->min) {
                        /* Not given: printed so the output can be sourced back as is. */
                        fprintf(f, "%s=   # unset: %s\n", o->env, o->unset);
                } else if (o->kind == V_INT) {
                        fprintf(f, "%s=%d\n", o->env, v);
                } else if (o->kind == V_LEVEL) {
                        fprintf(f, "%s=%s\n", o->env, v >= 0 && v <= 3 ? levels[v] : "info");
                } else {
                        sk__mask_url(field, masked, sizeof(masked));
                        fprintf(f, "%s=%s\n", o->env, masked);
                }
        }
        fprintf(f, "dlq_topic=%s\n", conf->dlq_topic);
        for (int i = 0; i < conf->nkafka_props; i++) {
                /* librdkafka secrets (sasl.password, ssl.key.password...) are masked too. */
                const char *k = conf->kafka_props[i][0];
                int secret = sk_conf_secret_key(k);
                fprintf(f, "-X %s=%s\n", k, secret ? "***" : conf->kafka_props[i][1]);
        }
        for (size_t i = 0; i < nextra; i++) {
                const sk_opt_t *o = &extra[i];
                if (o->type == SK_OPT_STR)
                        fprintf(f, "%s=%s\n", o->name, (const char *)o->dst);
                else
                        fprintf(f, "%s=%d\n", o->name, *(const int *)o->dst);
        }
        fflush(f);
}
