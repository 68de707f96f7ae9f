#!/usr/bin/env bash
# tests/browser/page_mock.sh: the browser scenario of queue_page.js run against
# mock_room.js (a stand-in written from DESIGN.md 3 and 18) instead of the real front: it
# checks the page's own logic (states, polls, countdowns, reloads, no purchase without an
# admission) with no service running. The test of record is queue_page.sh.
# Environment: SK_SRC, SK_BUILD (as CTest sets them). Screenshots: SK_BUILD/browser-out/page_mock/.
set -euo pipefail
src=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SK_BUILD:-$src/build}
here=$src/tests/browser
bash "$here/install.sh" "$build"
out=$build/browser-out/page_mock
work=$(mktemp -d /tmp/sk-browser-mock.XXXXXX)
rm -rf "$out" && mkdir -p "$out"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
secret=mock-$RANDOM-$RANDOM-$RANDOM
for i in $(seq 1 30); do echo "mock-user-$i"; done >"$work/tokens"
MOCK_PORT=$port MOCK_BEGIN_IN_MS=45000 MOCK_PAY_SECRET=$secret node "$here/mock_room.js" >"$work/mock.log" 2>&1 &
mock=$!
stop_mock() { kill "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; rm -rf "$work"; }
trap stop_mock EXIT
for ((i = 0; i < 100; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
done
rc=0
BASE=http://127.0.0.1:$port VOUCHER=4200000000000000001 TOKENS=$work/tokens STOCK=5 PAY_SECRET=$secret \
        PRICE=500 CURRENCY=CNY OUT=$out NODE_MODULES=$build/browser-node/node_modules \
        node "$here/queue_page.js" || rc=$?
stop_mock
trap - EXIT
exit "${rc:-0}"
