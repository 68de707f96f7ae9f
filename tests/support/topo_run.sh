#!/usr/bin/env bash
# topo_run.sh cluster|sentinel COMMAND [ARG...]: run one integration test against the
# local Redis Cluster or Sentinel topology (DESIGN.md 4b, 10; CTest labels cluster /
# sentinel, registered in tests/CMakeLists.txt). Starts the topology with
# `scripts/stack.sh up cluster|sentinel` (reuses a running one; never stops it) unless
# SECKILL_TEST_CLUSTER_URL / SECKILL_TEST_SENTINEL_URL names another one, then runs the
# test with SECKILL_REDIS_URL set to it. The test's own exit status is returned.
set -euo pipefail
which=${1:?usage: topo_run.sh cluster|sentinel COMMAND [ARG...]}
shift
src=${SK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
case $which in
cluster)
        url=${SECKILL_TEST_CLUSTER_URL:-}
        def="redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002" ;;
sentinel)
        url=${SECKILL_TEST_SENTINEL_URL:-}
        def="redis-sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/seckill" ;;
*)
        echo "topo_run.sh: unknown topology '$which'" >&2
        exit 2 ;;
esac
if [[ -z $url ]]; then
        bash "$src/scripts/stack.sh" up "$which" >&2
        url=$def
fi
export SECKILL_REDIS_URL=$url
echo "topo_run.sh: SECKILL_REDIS_URL=$url" >&2
exec "$@"
