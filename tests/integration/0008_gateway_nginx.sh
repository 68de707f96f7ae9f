#!/usr/bin/env bash
# 0008_gateway_nginx.sh: deploy/nginx/seckill-gateway.conf, run for real with Debian's
# nginx in front of real fronts (DESIGN.md 15 "Gateway": the example must run, rate-limit on
# the verified identity, and never forward client identity headers).
# The example file itself is included; the test only points its upstream at the front's
# unix socket and its listener at a free port (sed on the two example addresses). The
# fronts listen on unix sockets as the example expects (SECKILL_HTTP_ADDR=unix:PATH,
# DESIGN.md 15), the trusted-header one trusting "unix" (its default list).
#   jwt front behind the gateway:
#     - no token: 401 (the front's answer, passed through); a valid token: 202
#       (Authorization reaches the front);
#     - /metrics, /readyz, /healthz through the gateway: 404 (not proxied);
#     - a burst of 200 requests from one address: some 429 (limit_req per address);
#     - a 4 KiB+ body: 413; a 16 KiB header: 400/494 (size limits);
#     - the payment callback from an address outside its allow-list: 403.
#   trusted-header front (trusts 127.0.0.1, i.e. the gateway) behind the gateway:
#     - a client's own X-User-Id is removed: 400/10001 through the gateway, while the
#       same request sent straight to the front's socket buys (202).
. "$(dirname "$0")/../support/ft.sh"
ft_init gateway_nginx
command -v nginx >/dev/null || ft_die "nginx not installed (scripts/test.sh installs Debian's nginx)"
MINT=$FT_BUILD/tests/sk-mint-jwt
[[ -x $MINT ]] || ft_die "no $MINT (cmake --build)"
"$MINT" gen "$FT_WORK/keys" >/dev/null || ft_die "sk-mint-jwt gen failed"
V=$(ft_voucher 50)
ft_front fj SECKILL_AUTH=jwt SECKILL_JWT_KEYS_FILE="$FT_WORK/keys/jwks.json" SECKILL_JWT_ISSUER=https://idp.test \
        SECKILL_JWT_AUDIENCE=seckill -- --http-addr "unix:$FT_WORK/fj.sock"
ft_front ft -- --http-addr "unix:$FT_WORK/ft.sock"

NGX_PID=
# gateway FRONT: (re)start nginx with the example pointed at FRONT; sets GW.
gateway() {
        local port conf=$FT_WORK/ngx
        [[ -n $NGX_PID ]] && { kill "$NGX_PID" 2>/dev/null; wait "$NGX_PID" 2>/dev/null; }
        port=$(ft_free_port)
        rm -rf "$conf"; mkdir -p "$conf/tmp"
        sed -e "s|server unix:/run/seckill/front-main.sock |server unix:$FT_WORK/$1.sock |" \
                -e "s/listen 80;/listen 127.0.0.1:$port;/" \
                "$FT_SRC/deploy/nginx/seckill-gateway.conf" >"$conf/gateway.conf"
        grep -q "server unix:$FT_WORK/$1.sock " "$conf/gateway.conf" && grep -q "listen 127.0.0.1:$port;" "$conf/gateway.conf" ||
                ft_die "the example's upstream or listen line changed: update this test"
        cat >"$conf/nginx.conf" <<NGX
daemon off;
master_process off;
worker_processes 1;
pid $conf/nginx.pid;
error_log $conf/error.log warn;
events { worker_connections 1024; }
http {
    access_log $conf/access.log;
    client_body_temp_path $conf/tmp/body;
    proxy_temp_path $conf/tmp/proxy;
    fastcgi_temp_path $conf/tmp/fcgi;
    uwsgi_temp_path $conf/tmp/uwsgi;
    scgi_temp_path $conf/tmp/scgi;
    include $conf/gateway.conf;
}
NGX
        nginx -t -q -p "$conf" -c "$conf/nginx.conf" -e "$conf/error.log" || ft_die "nginx -t: $(cat "$conf/error.log")"
        nginx -p "$conf" -c "$conf/nginx.conf" -e "$conf/error.log" &
        NGX_PID=$!
        FT_PID[nginx]=$NGX_PID          # stopped by ft_cleanup
        GW=127.0.0.1:$port
        for _ in $(seq 1 50); do ft_port_open 127.0.0.1 "$port" && return 0; sleep 0.1; done
        ft_die "nginx did not listen: $(cat "$conf/error.log")"
}
code() { curl -s -o /dev/null -m 10 -w '%{http_code}' "$@"; }
buy() { echo "http://$GW/api/v1/vouchers/$V/seckill"; }

gateway fj
tok=$("$MINT" sign --key "$FT_WORK/keys/rs1.pem" --kid rs1 --sub 701 --exp-in 600 --iss https://idp.test --aud seckill)
ft_eq "$(code -X POST "$(buy)")" 401 "no token through the gateway: 401 (the front's)"
ft_eq "$(code -X POST -H "Authorization: Bearer $tok" "$(buy)")" 202 "a valid token through the gateway: 202 (Authorization passed)"
for p in metrics readyz healthz; do
        ft_eq "$(code "http://$GW/$p")" 404 "/$p through the gateway: 404 (not proxied)"
done
ft_eq "$(code -X POST -H 'Content-Type: application/json' --data "$(head -c 5000 /dev/zero | tr '\0' x)" "$(buy)")" 413 \
        "a 5000-byte body: 413"
big=$(head -c 16384 /dev/zero | tr '\0' a)
c=$(code -H "X-Junk: $big" "$(buy)")
[[ $c == 400 || $c == 494 ]] && ft_ok "a 16 KiB header: $c" || ft_fail "a 16 KiB header: $c, want 400 or 494"
ft_eq "$(code -X POST -H 'X-Payment-Signature: t=1,v1=00' --data '{}' "http://$GW/api/v1/payments/callback")" 403 \
        "the payment callback from outside its allow-list: 403"
# A burst from one address: 400 requests from one curl, 50 at a time (no token: the
# front answers 401). One process, so the rate does not depend on how fast a loaded
# host can fork curl (20 processes at a time stayed under 20 r/s + burst in CI).
for _ in $(seq 1 400); do printf 'url = "%s"\noutput = "/dev/null"\n' "$(buy)"; done >"$FT_WORK/burst.cfg"
curl -s -Z --parallel-max 50 -m 20 -X POST -w '%{http_code}\n' -K "$FT_WORK/burst.cfg" >"$FT_WORK/burst.txt"
n429=$(grep -c '^429$' "$FT_WORK/burst.txt")
ft_log "burst: $(sort "$FT_WORK/burst.txt" | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
((n429 > 0)) && ft_ok "a burst from one address: $n429 × 429 (limit_req per address)" ||
        ft_fail "a burst of 400 from one address: no 429"

gateway ft
ft_eq "$(code -X POST -H 'X-User-Id: 702' "$(buy)")" 400 "a client's X-User-Id is removed by the gateway: 400 at the front"
ft_eq "$(code --unix-socket "$FT_WORK/ft.sock" -X POST -H 'X-User-Id: 702' "http://front/api/v1/vouchers/$V/seckill")" 202 \
        "the same request straight to the front's socket (unix, trusted): 202"
ft_finish
