#!/usr/bin/env bash
# tests/integration/0001_stack.sh: the local stack the integration tests need is up
# (DESIGN.md 10): `scripts/stack.sh status` reports redis, mariadb and kafka up (Kafka
# serving metadata when the jars are there), MariaDB's root logs in over TCP, and Redis
# runs with maxmemory-policy noeviction (DESIGN.md 4). Read-only: changes nothing.
# Honours the SECKILL_STACK_* overrides that scripts/stack.sh honours.
set -euo pipefail

SRC=${SK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
STACK=$SRC/scripts/stack.sh
fail() { echo "FAIL: $*" >&2; exit 1; }

rc=0
out=$("$STACK" status) || rc=$?
echo "$out"
for svc in redis mariadb kafka; do
        line=$(awk -v s="$svc" '$1 == s' <<<"$out")
        [[ -n $line ]] || fail "status has no line for $svc"
        [[ $(awk '{print $3}' <<<"$line") == up ]] || fail "$svc is not up: $line"
done
[[ $rc -eq 0 ]] || fail "scripts/stack.sh status exited $rc with every service up"
grep -q '^mariadb .* root_tcp_login=ok' <<<"$out" || fail "mariadb: root cannot log in over TCP without a password"
grep -q '^redis .* maxmemory-policy=noeviction' <<<"$out" || fail "redis: status does not report maxmemory-policy=noeviction"

# Ask Redis directly as well, at the port the stack uses.
port=$(awk '$1 == "redis" {split($2, a, ":"); print a[2]}' <<<"$out")
if command -v redis-cli >/dev/null 2>&1; then
        policy=$(redis-cli -h 127.0.0.1 -p "$port" config get maxmemory-policy | sed -n 2p)
        [[ $policy == noeviction ]] || fail "redis 127.0.0.1:$port: maxmemory-policy is '$policy', want noeviction"
fi
echo "PASS: redis, mariadb and kafka up; redis noeviction"
