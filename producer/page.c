/* producer/page.c: the buyer page (DESIGN.md 18) served from the binary: the page
 * itself at /sale/{voucherId} (the template index.html with the voucher id and the
 * fragment-token switch written into its data attributes) and its script, style and icon
 * at /sale/assets/{name}, each with the page's CSP and nosniff. The files are embedded
 * at build time (page_files.h, cmake/embed_files.cmake); nothing is read from disk.
 * What it does not do: know anything of the voucher (the page asks the API for that,
 * GET /api/v1/vouchers/{id}) or of the buyer (the page's requests carry the identity). */
#include <stdlib.h>
#include <string.h>

#include "page.h"
#include "page_files.h"
#include "sk/ids.h"
#include "sk/model.h"

static const char assets_prefix[] = FR_PAGE_PREFIX "assets/";

/* The page's template: the one .html file. Its placeholders are replaced once each. */
#define PAGE_TEMPLATE "index.html"
#define PH_VOUCHER "{{voucherId}}"
#define PH_FRAGMENT "{{fragmentToken}}"

static const fr_page_file_t *find(const char *name)
{
        size_t i;

        for (i = 0; i < fr_page_nfiles; i++)
                if (!strcmp(fr_page_files[i].name, name))
                        return &fr_page_files[i];
        return NULL;
}

/* Content-Type by extension; NULL for a file that is not an asset (the template). */
static const char *asset_type(const char *name)
{
        static const struct { const char *ext, *type; } types[] = {
                { ".js", "text/javascript; charset=utf-8" },
                { ".css", "text/css; charset=utf-8" },
                { ".svg", "image/svg+xml" },
        };
        size_t n = strlen(name), i, e;

        for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
                e = strlen(types[i].ext);
                if (n > e && !strcmp(name + n - e, types[i].ext))
                        return types[i].type;
        }
        return NULL;
}

/* Append @p src[0..n) to @p out at *len (the caller sized out). */
static void put(char *out, size_t *len, const char *src, size_t n)
{
        memcpy(out + *len, src, n);
        *len += n;
}

/* The template with every placeholder replaced: malloc'd, NUL-terminated; NULL when out
 * of memory. The replacements are short ASCII (a canonical id, "0" or "1"): no escaping
 * is needed, and none of them can contain a placeholder. */
static char *render(const fr_page_file_t *tpl, const char *voucher, const char *fragment)
{
        size_t cap = tpl->len + 1, len = 0;
        const char *p = tpl->data, *end = tpl->data + tpl->len;
        char *out;

        for (const char *q = p; (q = strstr(q, "{{")) != NULL; q += 2)
                cap += strlen(voucher) + strlen(fragment); /* generous: every "{{" */
        if (!(out = malloc(cap)))
                return NULL;
        while (p < end) {
                const char *ph = strstr(p, "{{");

                if (!ph) {
                        put(out, &len, p, (size_t)(end - p));
                        break;
                }
                put(out, &len, p, (size_t)(ph - p));
                if (!strncmp(ph, PH_VOUCHER, sizeof(PH_VOUCHER) - 1)) {
                        put(out, &len, voucher, strlen(voucher));
                        p = ph + sizeof(PH_VOUCHER) - 1;
                } else if (!strncmp(ph, PH_FRAGMENT, sizeof(PH_FRAGMENT) - 1)) {
                        put(out, &len, fragment, strlen(fragment));
                        p = ph + sizeof(PH_FRAGMENT) - 1;
                } else {
                        put(out, &len, ph, 2);
                        p = ph + 2;
                }
        }
        out[len] = '\0';
        return out;
}

static void not_found(fr_req_t *req)
{
        fr_quick(req, 404, fr_json_err(SK_CODE_BAD_INPUT, "no such route"));
}

void fr_page_route(fr_req_t *req, const char *url, const char *method, int fragment_token)
{
        const fr_page_file_t *f;
        const char *type;
        char *body;

        req->page = 1;
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
                req->allow = "GET, HEAD";
                fr_quick(req, 405, fr_json_err(SK_CODE_BAD_INPUT, "method not allowed"));
                return;
        }
        if (!strncmp(url, assets_prefix, sizeof(assets_prefix) - 1)) {
                const char *name = url + sizeof(assets_prefix) - 1;

                if (!(f = find(name)) || !(type = asset_type(name))) {
                        not_found(req);
                        return;
                }
                if (!(body = malloc(f->len + 1))) {
                        fr_quick_503(req, "overload", "out of memory");
                        return;
                }
                memcpy(body, f->data, f->len + 1);
                req->ctype = type;
                fr_quick(req, 200, body);
                return;
        }
        {
                const char *id = url + sizeof(FR_PAGE_PREFIX) - 1;

                if (strchr(id, '/') || !(f = find(PAGE_TEMPLATE))) {
                        not_found(req);
                        return;
                }
                if (sk_id_parse(id, strlen(id), &req->voucher_id) != 0) {
                        fr_quick(req, 400, fr_json_err(SK_CODE_BAD_INPUT, "invalid voucher id"));
                        return;
                }
                sk_id_format(req->voucher_id, req->sv);
                if (!(body = render(f, req->sv, fragment_token ? "1" : "0"))) {
                        fr_quick_503(req, "overload", "out of memory");
                        return;
                }
                req->ctype = "text/html; charset=utf-8";
                fr_quick(req, 200, body);
        }
}
