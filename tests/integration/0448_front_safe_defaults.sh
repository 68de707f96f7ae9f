#!/usr/bin/env bash
# 0448_front_safe_defaults.sh: the defaults are the safe ones (DESIGN.md 15), with the real
# front and broker:
#   - with no SECKILL_AUTH the front is in jwt mode: it refuses to start without a keys
#     file (exit 2, naming SECKILL_JWT_KEYS_FILE), and with one but without issuer or
#     audience (exit 2, naming the missing one); before, the default was trusted-header
#     with 127.0.0.1 trusted, and jwt started silently without iss/aud checks;
#   - with keys, issuer and audience it starts; any local process sending X-User-Id alone
#     is refused (401/10007): the finding "as nobody, curl -H 'X-User-Id: 502' cancelled
#     user 502's order" no longer holds;
#   - SECKILL_JWT_ISSUER=* and SECKILL_JWT_AUDIENCE=* opt out of those checks, each
#     warned at start (event=jwt_claim_not_checked), and then a token of any iss/aud buys;
#   - SECKILL_AUTH=trusted-header with the default SECKILL_TRUSTED_PROXIES (unix only) on
#     a TCP address refuses to start (exit 2); on a unix socket it starts and believes
#     X-User-Id from the socket.
. "$(dirname "$0")/../support/ft.sh"
ft_init front_safe_defaults
MINT=$FT_BUILD/tests/sk-mint-jwt
[[ -x $MINT ]] || ft_die "no $MINT (cmake --build)"
"$MINT" gen "$FT_WORK/keys" >/dev/null || ft_die "sk-mint-jwt gen failed"
KEYS=$FT_WORK/keys/jwks.json
V=$(ft_voucher 5)

# front_exit VAR=VAL...: a front (nothing of the identity settings but what is given) that
# must not start: its exit status; its stderr in $FT_WORK/e.
front_exit() {
        env -u SECKILL_AUTH -u SECKILL_JWT_KEYS_FILE -u SECKILL_JWT_ISSUER -u SECKILL_JWT_AUDIENCE \
                -u SECKILL_TRUSTED_PROXIES "$@" SECKILL_OPS_ADDR=127.0.0.1:$(ft_free_port) \
                timeout 60 "$FT_BIN/seckill-front" --http-addr "127.0.0.1:$(ft_free_port)" >/dev/null 2>"$FT_WORK/e"
}
said() { grep -qF -- "$1" "$FT_WORK/e" && ft_ok "it says: $1" || ft_fail "want '$1' in: $(cat "$FT_WORK/e")"; }

front_exit
ft_eq "$?" 2 "no SECKILL_AUTH, no keys: exit 2 (jwt is the default)"
said "SECKILL_AUTH=jwt needs SECKILL_JWT_KEYS_FILE"
front_exit SECKILL_JWT_KEYS_FILE="$KEYS" SECKILL_JWT_AUDIENCE=seckill
ft_eq "$?" 2 "jwt without an issuer: exit 2"
said "(SECKILL_JWT_ISSUER is not set)"
front_exit SECKILL_JWT_KEYS_FILE="$KEYS" SECKILL_JWT_ISSUER=https://idp.test
ft_eq "$?" 2 "jwt without an audience: exit 2"
said "(SECKILL_JWT_AUDIENCE is not set)"
front_exit SECKILL_AUTH=trusted-header
ft_eq "$?" 2 "trusted-header, default list (unix), TCP listener: exit 2"
said "none of the trusted peers can reach this listener"

# The default mode, configured: X-User-Id from a local process is nobody.
ft_front j SECKILL_AUTH= SECKILL_TRUSTED_PROXIES= SECKILL_JWT_KEYS_FILE="$KEYS" \
        SECKILL_JWT_ISSUER=https://idp.test SECKILL_JWT_AUDIENCE=seckill
ft_eq "$(grep -c 'event=identity auth=jwt' "$FT_WORK/j.log")" 1 "no SECKILL_AUTH: jwt"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H 'X-User-Id: 502' \
        "http://${FT_ADDR[j]}/api/v1/vouchers/$V/seckill")" 401 "X-User-Id alone from a local process: 401"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H 'X-User-Id: 502' \
        "http://${FT_ADDR[j]}/api/v1/orders/1/cancel")" 401 "a cancel with X-User-Id alone: 401"
tok=$("$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub 503 --exp-in 600 --iss https://idp.test --aud seckill)
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $tok" \
        "http://${FT_ADDR[j]}/api/v1/vouchers/$V/seckill")" 202 "a token of the configured issuer and audience: 202"
other=$("$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub 504 --exp-in 600 --iss https://idp.test --aud crm)
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $other" \
        "http://${FT_ADDR[j]}/api/v1/vouchers/$V/seckill")" 401 "a token the same IdP minted for another audience: 401"

# "*": opted out, warned.
ft_front s SECKILL_AUTH=jwt SECKILL_JWT_KEYS_FILE="$KEYS" SECKILL_JWT_ISSUER='*' SECKILL_JWT_AUDIENCE='*'
ft_eq "$(grep -c 'event=jwt_claim_not_checked' "$FT_WORK/s.log")" 2 "issuer and audience *: two warnings at start"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H "Authorization: Bearer $other" \
        "http://${FT_ADDR[s]}/api/v1/vouchers/$V/seckill")" 202 "with *: a token of any audience buys"

# trusted-header on its unix socket with the default list.
ft_front u SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES= -- --http-addr "unix:$FT_WORK/u.sock"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 --unix-socket "$FT_WORK/u.sock" -X POST -H 'X-User-Id: 505' \
        "http://front/api/v1/vouchers/$V/seckill")" 202 "trusted-header, default list, unix socket: X-User-Id buys"
ft_finish
