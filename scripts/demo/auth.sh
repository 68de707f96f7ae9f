# scripts/demo/auth.sh: who the demo's buyers are to the front (DESIGN.md 15), sourced by
# run.sh (say, die, RUN, BUILD_DIR, BUYERS, AUTH). --auth jwt (the default): the front runs
# with SECKILL_AUTH=jwt and a key set of the demo's own (build/tests/sk-mint-jwt gen: RS256,
# ES256 and an HS256 secret) and its own issuer and audience, and every buyer sends
# `Authorization: Bearer` with a token for their user id, minted for that issuer and
# audience; --auth trusted-header: X-User-Id from loopback, as before v5. Either way the
# mode is named for the front (jwt is the binary's default, DESIGN.md 15) and loopback is
# listed in SECKILL_TRUSTED_PROXIES: wrk and the demo's scripts play the gateway (in jwt
# mode that keeps the crowd out of the per-client verification limit, which would key
# every buyer on 127.0.0.1).
#
#   auth_setup           SECKILL_AUTH and SECKILL_TRUSTED_PROXIES exported for the front;
#                        --auth jwt: the keys, SECKILL_JWT_KEYS_FILE, _ISSUER, _AUDIENCE,
#                        and one RS256 token per crowd buyer (line b of $SK_DEMO_TOKENS is
#                        user_of(b) of sale.lua), minted before the sale
#   auth_header USER     the header a buyer sends, for curl -H
# The Python side (report.py buyer_headers: orders/me, the late buyers) mints HS256
# tokens with the key set's secret (DEMO_JWKS).

AUTH_MINT=
DEMO_JWT_ISS=https://idp.demo.seckill
DEMO_JWT_AUD=seckill-demo

auth_setup() {
        export SECKILL_TRUSTED_PROXIES=127.0.0.1/32
        if [[ $AUTH != jwt ]]; then
                export SECKILL_AUTH=trusted-header
                return 0
        fi
        AUTH_MINT=$BUILD_DIR/tests/sk-mint-jwt
        [[ -x $AUTH_MINT ]] || die "--auth jwt needs $AUTH_MINT (cmake --build $BUILD_DIR --target sk-mint-jwt)"
        "$AUTH_MINT" gen "$RUN/jwt" > /dev/null || die "sk-mint-jwt gen failed"
        export SECKILL_AUTH=jwt SECKILL_JWT_KEYS_FILE=$RUN/jwt/jwks.json DEMO_JWKS=$RUN/jwt/jwks.json
        export SECKILL_JWT_ISSUER=$DEMO_JWT_ISS SECKILL_JWT_AUDIENCE=$DEMO_JWT_AUD DEMO_JWT_ISS DEMO_JWT_AUD
        local t0
        t0=$(date +%s%3N)
        # user_of(b) in sale.lua is 1990653204 followed by b on 9 digits
        "$AUTH_MINT" sign --key "$RUN/jwt/rs1.pem" --kid rs1 --sub 1990653204000000000 \
                --count "$BUYERS" --exp-in 7200 --iss "$DEMO_JWT_ISS" --aud "$DEMO_JWT_AUD" \
                > "$RUN/jwt/tokens.txt" || die "sk-mint-jwt sign failed"
        export SK_DEMO_TOKENS=$RUN/jwt/tokens.txt
        say "identity: SECKILL_AUTH=jwt; $BUYERS RS256 tokens minted in $(( $(date +%s%3N) - t0 )) ms (one per buyer, key set $RUN/jwt/jwks.json)"
}

auth_header() {
        if [[ $AUTH == jwt ]]; then
                echo "Authorization: Bearer $("$AUTH_MINT" sign --key "$RUN/jwt/rs1.pem" --kid rs1 --sub "$1" \
                        --exp-in 7200 --iss "$DEMO_JWT_ISS" --aud "$DEMO_JWT_AUD")"
        else
                echo "X-User-Id: $1"
        fi
}
