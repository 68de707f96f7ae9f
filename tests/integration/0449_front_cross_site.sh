#!/usr/bin/env bash
# 0449_front_cross_site.sh: cross-site requests (DESIGN.md 15 "Cross-site requests"), with
# the real front and broker. In trusted-header mode the gateway names the buyer from a
# session cookie, which a browser also sends with a plain cross-site form POST (no
# preflight for a body-less POST); before, such a POST bought in the visitor's name.
#   - trusted-header, SECKILL_ALLOWED_ORIGINS=https://shop.example: a POST with neither
#     Origin nor Sec-Fetch-Site (not a browser) buys (202); Sec-Fetch-Site: same-origin
#     buys; a listed Origin buys whatever Sec-Fetch-Site says;
#   - a cross-site purchase (Sec-Fetch-Site: cross-site, Origin: https://evil.example),
#     Sec-Fetch-Site: same-site alone, Origin: null, an Origin that is only a prefix or a
#     case variant of the listed one, two Origin headers: 403/10001 with a body naming the
#     cross-site refusal, and nothing bought (the buyer buys afterwards without the
#     headers: 202, so no Redis or DB state was left);
#   - the rule is the request path's, not a route's: a cross-site cancel and a cross-site
#     POST to a route the front does not have are 403 too (a POST route added later is
#     covered); a cross-site GET (orders/me) is not refused;
#   - SECKILL_ALLOWED_ORIGINS in canonical form only: a path, a trailing "/", upper case,
#     the scheme's default port, "null", "*": exit 2 with one line naming the entry;
#   - jwt mode needs no such rule: a cross-site POST with a valid Bearer token buys (202).
. "$(dirname "$0")/../support/ft.sh"
ft_init front_cross_site
V=$(ft_voucher 20)
ft_front t SECKILL_ALLOWED_ORIGINS="https://shop.example, http://127.0.0.1:8088"
A=${FT_ADDR[t]}
ft_eq "$(grep -c 'event=cross_site allowed_origins=2' "$FT_WORK/t.log")" 1 "start line: two allowed origins"

# post USER PATH HEADER...: "CODE BODY" of a POST from the trusted gateway.
post() {
        local user=$1 path=$2 args=() h
        shift 2
        for h in "$@"; do args+=(-H "$h"); done
        curl -s -m 10 -w ' %{http_code}' -X POST -H "X-User-Id: $user" "${args[@]}" "http://$A$path" |
                awk '{code=$NF; $NF=""; sub(/ $/, ""); print code, $0}'
}
code() { post "$@" | cut -d' ' -f1; }
refused() {     # WHAT USER PATH HEADER...
        local what=$1 out
        shift
        out=$(post "$@")
        ft_eq "${out%% *}" 403 "$what: 403"
        grep -q '"code":10001' <<<"$out" && grep -q 'cross-site request refused' <<<"$out" &&
                ft_ok "$what: 10001, cross-site named" || ft_fail "$what: body $out"
}
S=/api/v1/vouchers/$V/seckill

ft_eq "$(code 101 "$S")" 202 "no Origin, no Sec-Fetch-Site (not a browser): 202"
ft_eq "$(code 102 "$S" 'Sec-Fetch-Site: same-origin' 'Origin: https://whatever.example')" 202 \
        "Sec-Fetch-Site: same-origin: 202"
ft_eq "$(code 103 "$S" 'Sec-Fetch-Site: cross-site' 'Origin: https://shop.example')" 202 \
        "a listed Origin: 202"
ft_eq "$(code 104 "$S" 'Origin: http://127.0.0.1:8088')" 202 "the second listed Origin, no Sec-Fetch-Site: 202"

refused "a cross-site form POST" 201 "$S" 'Sec-Fetch-Site: cross-site' 'Origin: https://evil.example'
refused "Sec-Fetch-Site: same-site alone" 202 "$S" 'Sec-Fetch-Site: same-site'
refused "Origin: null" 203 "$S" 'Origin: null'
refused "an Origin extending a listed one" 204 "$S" 'Origin: https://shop.example.evil.example'
refused "a case variant of a listed Origin" 205 "$S" 'Origin: https://SHOP.example'
refused "two Origin headers" 206 "$S" 'Origin: https://shop.example' 'Origin: https://evil.example'
refused "a cross-site cancel" 201 "/api/v1/orders/1/cancel" 'Sec-Fetch-Site: cross-site'
refused "a cross-site POST to a route the front does not have" 201 "/api/v1/vouchers/$V/queue" \
        'Sec-Fetch-Site: cross-site'
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H 'X-User-Id: 201' -H 'Sec-Fetch-Site: cross-site' \
        "http://$A/api/v1/vouchers/$V/orders/me")" 200 "a cross-site GET is not refused: 200"
# Nothing of the refused purchases stayed: each of those buyers buys once now.
for u in 201 202 203 204 205 206; do
        ft_eq "$(code $u "$S")" 202 "user $u refused before: buys without the headers (202)"
done
ft_eq "$(ft_rstock "$V")" 10 "Redis stock: 20 - 10 purchases"

# Canonical entries only.
bad_origin() {  # VALUE WANT_TEXT
        local out rc
        out=$(SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 SECKILL_ALLOWED_ORIGINS=$1 \
                timeout 30 "$FT_BIN/seckill-front" --http-addr "127.0.0.1:$(ft_free_port)" \
                --ops-addr "127.0.0.1:$(ft_free_port)" 2>&1 >/dev/null)
        rc=$?
        ft_eq "$rc" 2 "SECKILL_ALLOWED_ORIGINS=$1: exit 2"
        grep -qF -- "$2" <<<"$out" && ft_ok "the line says: $2" || ft_fail "refusal of $1: $out"
}
bad_origin "https://shop.example/" '"https://shop.example/": the host must be'
bad_origin "https://shop.example/buy" '"https://shop.example/buy"'
bad_origin "https://Shop.example" 'write the host in lowercase'
bad_origin "https://shop.example:443" 'omits the scheme'"'"'s default port'
bad_origin "https://a.example,null" '"null": an origin starts with http:// or https://'
bad_origin "*" '"*": an origin starts with'
bad_origin "https://shop.example:08080" 'without leading zero'

# jwt mode: the rule does not apply (a browser sends no Bearer token by itself).
MINT=$FT_BUILD/tests/sk-mint-jwt
[[ -x $MINT ]] || ft_die "no $MINT (cmake --build)"
"$MINT" gen "$FT_WORK/keys" >/dev/null || ft_die "sk-mint-jwt gen failed"
ft_front j SECKILL_AUTH=jwt SECKILL_JWT_KEYS_FILE="$FT_WORK/keys/jwks.json" SECKILL_JWT_ISSUER=https://idp.test \
        SECKILL_JWT_AUDIENCE=seckill
ft_eq "$(grep -c 'event=cross_site' "$FT_WORK/j.log")" 0 "jwt: no cross-site rule"
tok=$("$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub 301 --exp-in 600 --iss https://idp.test --aud seckill)
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $tok" \
        -H 'Sec-Fetch-Site: cross-site' -H 'Origin: https://evil.example' \
        "http://${FT_ADDR[j]}$S")" 202 "jwt: a cross-site POST with a valid token: 202"
ft_finish
