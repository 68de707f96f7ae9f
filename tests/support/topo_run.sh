#!/usr/bin/env bash
# topo_run.sh cluster|sentinel|galera COMMAND [ARG...]: run one integration test against
# the local Redis Cluster or Sentinel topology (DESIGN.md 4b, 10), or against the local
# three-node MariaDB Galera cluster (DESIGN.md 16); CTest labels cluster / sentinel /
# galera, registered in tests/CMakeLists.txt. Starts the topology with
# `scripts/stack.sh up cluster|sentinel` or `scripts/stack.sh galera up` (reuses a running
# one; never stops it) unless SECKILL_TEST_CLUSTER_URL / SECKILL_TEST_SENTINEL_URL /
# SECKILL_TEST_GALERA_URL names another one, then runs the test with SECKILL_REDIS_URL
# (SECKILL_MYSQL_URL for galera) set to it. The test's own exit status is returned.
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
galera)
        url=${SECKILL_TEST_GALERA_URL:-}
        def="mysql://root@127.0.0.1:3311,127.0.0.1:3312,127.0.0.1:3313/seckill" ;;
*)
        echo "topo_run.sh: unknown topology '$which'" >&2
        exit 2 ;;
esac
if [[ -z $url && $which == galera ]]; then
        bash "$src/scripts/stack.sh" galera up >&2   # under stack.sh's own lock
        url=$def
elif [[ -z $url ]]; then
        bash "$src/scripts/stack.sh" up "$which" >&2
        url=$def
fi
if [[ $which == galera ]]; then
        export SECKILL_MYSQL_URL=$url
        echo "topo_run.sh: SECKILL_MYSQL_URL=$url" >&2
else
        export SECKILL_REDIS_URL=$url
        echo "topo_run.sh: SECKILL_REDIS_URL=$url" >&2
fi
exec "$@"
