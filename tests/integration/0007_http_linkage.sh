#!/usr/bin/env bash
# 0007_http_linkage.sh: libmicrohttpd is linked only by the binaries that serve HTTP
# (seckill-front's API, seckill-consumer's metrics); the reconciler and the admin,
# which serve nothing, do not load it (the metrics HTTP server lives in its own
# library, common/http/ (sk_http), not in the layers of common/).
set -u
BIN=${SK_BIN:?SK_BIN not set}
rc=0
for b in seckill-reconciler seckill-admin; do
        if ! out=$(ldd "$BIN/$b" 2>&1); then
                echo "FAIL: ldd $b: $out"; rc=1; continue
        fi
        if grep -q microhttpd <<<"$out"; then
                echo "FAIL: $b links libmicrohttpd:"; grep microhttpd <<<"$out"; rc=1
        else
                echo "ok: $b does not link libmicrohttpd"
        fi
done
for b in seckill-front seckill-consumer; do
        if ldd "$BIN/$b" | grep -q microhttpd; then
                echo "ok: $b links libmicrohttpd (it serves HTTP)"
        else
                echo "FAIL: $b does not link libmicrohttpd"; rc=1
        fi
done
exit $rc
