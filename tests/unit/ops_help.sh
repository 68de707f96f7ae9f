#!/usr/bin/env bash
# tests/unit/ops_help.sh: each binary's --help lists its own options and the shared ones
# once (DESIGN.md 2, 17;), and `seckill-admin <command> --help` answers for every
# command. No services: help, --version and --print-config return before any connection.
#   1. per binary: the flags it must list and the other binaries' flags it must not
#   2. the shared lines (-X, --print-config, --version, --help) once each, no flag twice
#   3. seckill-admin COMMAND --help for every command and group (db, voucher), exit 0
#   4. another binary's flag is refused (exit 2, "does not apply"); another binary's
#      SECKILL_* variable is not read (an invalid one does not stop --print-config)
# Env: SK_BIN (the binaries; default build/bin under the source root).
set -uo pipefail
SRC=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${SK_BIN:-$SRC/build/bin}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# Every run without the caller's SECKILL_* settings.
run() { env -i PATH="$PATH" "$@"; }

# expect BINARY "flags it lists" "flags it must not list"
expect() {
        local b=$1 out f rc=0
        out=$(run "$BIN/$b" --help) || rc=$?
        [[ $rc -eq 0 ]] || bad "$b --help exited $rc"
        for f in $2; do
                grep -qE -- "^  $f( |$)" <<<"$out" || bad "$b --help does not list $f"
        done
        for f in $3; do
                grep -qE -- "(^|[^a-z-])$f( |$)" <<<"$out" && bad "$b --help lists $f (not its option)"
        done
        for f in '-X KEY=VALUE' '--print-config' '--version' '-h, --help'; do
                [[ $(grep -cF -- "  $f " <<<"$out") -eq 1 ]] || bad "$b --help: '$f' not listed exactly once"
        done
        dup=$(grep -oE -- '^  --[a-z-]+' <<<"$out" | sort | uniq -d)
        [[ -z $dup ]] || bad "$b --help lists twice: $dup"
        run "$BIN/$b" --version | grep -qE "^$b [0-9]+\.[0-9]+\.[0-9]+" || bad "$b --version"
}

FRONT_ONLY='--http-addr --max-inflight --soldout-cache-ms --breaker-failures --breaker-slow-ms
            --breaker-open-ms --breaker-healthy-ms --degrade-db-conns --switch-stale-ms --http-threads'
CONSUMER_ONLY='--metrics-addr --close-interval-ms --workers --batch-max'
echo "== seckill-front"
expect seckill-front "--redis-url --mysql-url --http-addr --breaker-failures --degrade-db-conns
        --worker-id --pay-timeout-s --http-threads" "$CONSUMER_ONLY --repair"
echo "== seckill-consumer"
expect seckill-consumer "--redis-url --mysql-url --metrics-addr --close-interval-ms --workers
        --pay-timeout-s" "$FRONT_ONLY --worker-id --repair"
echo "== seckill-reconciler"
expect seckill-reconciler "--redis-url --mysql-url --repair --window-hours --grace-seconds" \
        "$FRONT_ONLY $CONSUMER_ONLY --worker-id --pay-timeout-s"
echo "== seckill-admin"
expect seckill-admin "--redis-url --mysql-url --worker-id --group-id" \
        "$FRONT_ONLY $CONSUMER_ONLY --pay-timeout-s --partitions"
out=$(run "$BIN/seckill-admin" --help)
for c in "db migrate" "db grants" "voucher create" "voucher preheat" "voucher show" "voucher add-stock" \
         "voucher set-status" "verify VOUCHER_ID" "degrade status"; do
        grep -qF -- "  $c" <<<"$out" || bad "seckill-admin --help does not list the command '$c'"
done

echo "== seckill-admin COMMAND --help"
for c in "db" "db migrate" "db grants" "voucher" "voucher create" "voucher preheat" "voucher show" \
         "voucher add-stock" "voucher set-status" "verify" "degrade"; do
        rc=0
        # shellcheck disable=SC2086  # the words of the command
        out=$(run "$BIN/seckill-admin" $c --help 2>&1) || rc=$?
        [[ $rc -eq 0 ]] || bad "seckill-admin $c --help exited $rc: $out"
        grep -q "^Usage: seckill-admin $c" <<<"$out" || bad "seckill-admin $c --help: no usage line of '$c': $out"
        grep -qE -- '--breaker|--http-addr' <<<"$out" && bad "seckill-admin $c --help names a front flag"
done
run "$BIN/seckill-admin" voucher --help | grep -q "voucher add-stock" || bad "voucher --help lists no add-stock"

echo "== another binary's flag, another binary's variable"
for b in seckill-admin seckill-consumer seckill-reconciler; do
        rc=0
        err=$(run "$BIN/$b" --breaker-failures 3 --print-config 2>&1 >/dev/null) || rc=$?
        [[ $rc -eq 2 && $err == *"option --breaker-failures does not apply to $b"* ]] ||
                bad "$b --breaker-failures: exit $rc, '$err' (want 2, does not apply)"
        rc=0
        run SECKILL_BREAKER_FAILURES=0 SECKILL_HTTP_ADDR=nonsense "$BIN/$b" --print-config >/dev/null || rc=$?
        [[ $rc -eq 0 ]] || bad "$b --print-config with an invalid front-only variable exited $rc (want 0: not read)"
done
rc=0
run SECKILL_BREAKER_FAILURES=0 "$BIN/seckill-front" --print-config >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || bad "seckill-front --print-config with SECKILL_BREAKER_FAILURES=0 exited $rc (want 2)"
run "$BIN/seckill-admin" --print-config | grep -q '^SECKILL_HTTP_ADDR=' &&
        bad "seckill-admin --print-config prints SECKILL_HTTP_ADDR"

echo "== seckill-reconciler: the grace covers the front's request deadline"
# DESIGN.md 4 v5, 14: an entry's ts is the request's arrival, so --grace-seconds must be
# >= 2 x delivery timeout + 1 s (checked before any connection; Redis and MySQL point
# nowhere).
rc=0
err=$(run SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=2000 SECKILL_REDIS_URL=redis://127.0.0.1:1 SECKILL_MYSQL_URL=mysql://none@127.0.0.1:1/none \
        "$BIN/seckill-reconciler" --grace-seconds 4 2>&1 >/dev/null) || rc=$?
[[ $rc -eq 2 && $err == *"must cover the front's request deadline"*">= 5"* ]] ||
        bad "reconciler --grace-seconds 4 with a 2000 ms delivery timeout: exit $rc, '$err' (want 2, >= 5)"
err=$(run SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=2000 SECKILL_REDIS_URL=redis://127.0.0.1:1 SECKILL_MYSQL_URL=mysql://none@127.0.0.1:1/none \
        "$BIN/seckill-reconciler" --grace-seconds 5 2>&1 >/dev/null)
[[ $err == *"request deadline"* ]] && bad "reconciler --grace-seconds 5 refused: '$err'"

[[ $fail -eq 0 ]] && echo "ops_help: PASS" || echo "ops_help: FAIL"
exit "$fail"
