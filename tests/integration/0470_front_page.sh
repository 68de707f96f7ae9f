#!/usr/bin/env bash
# 0470_front_page.sh: the buyer page's routes (DESIGN.md 3, 18) with the real front:
#   - GET /sale/{id}: 200 text/html, the voucher id and the fragment-token switch in the
#     body's data attributes (0 by default, 1 with SECKILL_PAGE_FRAGMENT_TOKEN=1), with
#     the §18 Content-Security-Policy, X-Content-Type-Options: nosniff;
#   - GET /sale/assets/sale.js, sale.css, icon.svg: 200, byte for byte the files of
#     producer/page/, each with its Content-Type and the same headers; HEAD answers too;
#   - a made-up asset, index.html (the template), a path with a dot-dot, /sale/{id}/x:
#     404; /sale/0 and /sale/01: 400/10001; POST /sale/{id}: 405 with Allow;
#   - the page names no other origin: no http: or https: URL in the page or its
#     assets (the CSP would block it anyway), and the title is never written with
#     innerHTML (the script sets it with textContent).
. "$(dirname "$0")/../support/ft.sh"
ft_init front_page
PAGE=$FT_SRC/producer/page
CSP="default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

# get FRONT PATH [CURL ARGS...]: headers to $FT_WORK/h, body to $FT_WORK/b; prints the code.
get() {
        local f=$1 p=$2
        shift 2
        curl -s -m 10 -D "$FT_WORK/h" -o "$FT_WORK/b" -w '%{http_code}' "$@" "http://${FT_ADDR[$f]}$p"
}
header() { awk -v h="$1" 'BEGIN {IGNORECASE = 1} index(tolower($0), tolower(h) ":") == 1 {sub(/^[^:]*: */, ""); sub(/\r$/, ""); print}' "$FT_WORK/h"; }
page_headers() {
        ft_eq "$(header Content-Security-Policy)" "$CSP" "$1: the CSP of DESIGN.md 18"
        ft_eq "$(header X-Content-Type-Options)" nosniff "$1: nosniff"
}

ft_front a
ft_eq "$(get a /sale/4200000000000000001)" 200 "GET /sale/ID: 200"
ft_eq "$(header Content-Type)" "text/html; charset=utf-8" "the page is text/html"
page_headers "the page"
grep -q 'data-voucher="4200000000000000001"' "$FT_WORK/b" && ft_ok "the voucher id is in data-voucher" ||
        ft_fail "no data-voucher: $(head -c 600 "$FT_WORK/b")"
grep -q 'data-fragment-token="0"' "$FT_WORK/b" && ft_ok "fragment token off by default" || ft_fail "data-fragment-token not 0"
grep -q '{{' "$FT_WORK/b" && ft_fail "a placeholder was left in the page" || ft_ok "no placeholder left"

for a in sale.js:text/javascript sale.css:text/css icon.svg:image/svg+xml; do
        name=${a%%:*} type=${a#*:}
        ft_eq "$(get a "/sale/assets/$name")" 200 "GET /sale/assets/$name: 200"
        [[ $(header Content-Type) == "$type"* ]] && ft_ok "$name: Content-Type $type" ||
                ft_fail "$name: Content-Type '$(header Content-Type)'"
        page_headers "$name"
        cmp -s "$FT_WORK/b" "$PAGE/$name" && ft_ok "$name: the file as it is in producer/page/" ||
                ft_fail "$name differs from producer/page/$name"
        grep -Eq 'https?://' "$FT_WORK/b" && [[ $name != icon.svg ]] && ft_fail "$name names another origin"
done
grep -Eq 'https?://' "$PAGE/index.html" && ft_fail "index.html names another origin" || ft_ok "the page names no other origin"
grep -n 'innerHTML\|outerHTML\|insertAdjacentHTML\|document\.write' "$PAGE/sale.js" &&
        ft_fail "sale.js writes HTML" || ft_ok "sale.js writes no HTML (textContent only)"
ft_eq "$(get a /sale/assets/sale.js -I)" 200 "HEAD of an asset: 200"

ft_eq "$(get a /sale/assets/nope.js)" 404 "a made-up asset: 404"
page_headers "the 404 of an asset"
ft_eq "$(get a /sale/assets/index.html)" 404 "the template is not an asset: 404"
ft_eq "$(get a /sale/assets/../../etc/passwd --path-as-is)" 404 "a dot-dot path: 404"
ft_eq "$(get a /sale/assets/)" 404 "no asset name: 404"
ft_eq "$(get a /sale/4200000000000000001/x)" 404 "/sale/ID/x: 404"
ft_eq "$(get a /sale/0)" 400 "/sale/0: 400"
grep -q '"code":10001' "$FT_WORK/b" && ft_ok "/sale/0: code 10001" || ft_fail "/sale/0 body: $(cat "$FT_WORK/b")"
ft_eq "$(get a /sale/01)" 400 "/sale/01: 400"
ft_eq "$(get a /sale/4200000000000000001 -X POST)" 405 "POST /sale/ID: 405"
ft_eq "$(header Allow)" "GET, HEAD" "405 with Allow: GET, HEAD"

ft_front b SECKILL_PAGE_FRAGMENT_TOKEN=1
ft_eq "$(get b /sale/4200000000000000002)" 200 "fragment-token front: GET /sale/ID: 200"
grep -q 'data-fragment-token="1"' "$FT_WORK/b" && ft_ok "SECKILL_PAGE_FRAGMENT_TOKEN=1: data-fragment-token 1" ||
        ft_fail "data-fragment-token not 1"
ft_eq "$(grep -c 'event=page_fragment_token' "$FT_WORK/b.log")" 1 "the fragment-token mode is warned at start"
ft_finish
