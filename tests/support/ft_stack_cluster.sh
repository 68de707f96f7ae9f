#!/usr/bin/env bash
# tests/support/ft_stack_cluster.sh: the stack's own Redis Cluster (`scripts/stack.sh up
# cluster`: 3 masters with 2 replicas each on 127.0.0.1:7000-7008, cluster-node-timeout
# 3000, cluster-require-full-coverage no; DESIGN.md 4b, 10) for what measures a master
# loss on the topology the stack ships: the fault cases that kill one of its masters
# (labels faults and cluster, lock redis-cluster) and bench/windows.sh. Sourced before or
# after ft.sh:
#   ft_sc_up                      start it or reuse it (scripts/stack.sh up cluster, which
#                                 also restarts a node of ours that is missing) and export
#                                 SECKILL_REDIS_URL with its nine nodes; 1 if it fails
#   ft_sc_full S                  wait up to S s until cluster_state is ok and every master
#                                 has two good replicas (min-replicas-to-write counts them)
#   ft_sc_owner SLOT              the port of the master serving SLOT, as the first node
#                                 that answers sees it (a failed master is skipped)
#   ft_sc_slot KEY                the slot of KEY (CLUSTER KEYSLOT on a live node)
#   ft_sc_pid PORT                the pid of the node on PORT (INFO server)
#   ft_sc_cfg PORT NAME           one CONFIG GET value of the node on PORT
#   ft_sc_elected PORT SINCE_MS   the wall-clock ms of the node on PORT's last "Failover
#                                 election won" at or after SINCE_MS, from its own log
#                                 (loglevel warning logs it, with ms); empty if none
# The stack's state is $SECKILL_STACK_DIR (default the checkout's .stack): a Cluster
# started from another checkout is healed only when it points there.
#
# What it deliberately does not do: start a private topology (ft_redis_topo.sh does),
# kill anything by itself, or judge speed.

FT_SC_PORT0=${SECKILL_STACK_CLUSTER_PORT:-7000}
FT_SC_SRC=${SK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

ft_sc_ports() { local i; for ((i = 0; i < 9; i++)); do echo $((FT_SC_PORT0 + i)); done; }
ft_sc_cli() { local p=$1; shift; timeout 5 redis-cli -h 127.0.0.1 -p "$p" "$@" 2>/dev/null; }
ft_sc_repl() { ft_sc_cli "$1" info replication | tr -d '\r' | sed -n "s/^$2://p"; }

ft_sc_up() {
        local p seeds=
        bash "$FT_SC_SRC/scripts/stack.sh" up cluster >&2 || return 1
        for p in $(ft_sc_ports); do seeds+=${seeds:+,}127.0.0.1:$p; done
        export SECKILL_REDIS_URL="redis-cluster://$seeds"
}

# CLUSTER NODES as the first live node sees it.
ft_sc_nodes() {
        local p out
        for p in $(ft_sc_ports); do
                out=$(ft_sc_cli "$p" cluster nodes) && [[ -n $out ]] && { echo "$out"; return 0; }
        done
        return 1
}

ft_sc_owner() {
        ft_sc_nodes | awk -v s="$1" '
                $3 ~ /master/ && $3 !~ /fail/ {
                        for (i = 9; i <= NF; i++) {
                                if ($i ~ /^\[/) continue
                                n = split($i, r, "-"); lo = r[1] + 0; hi = (n == 2 ? r[2] : r[1]) + 0
                                if (s >= lo && s <= hi) { sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2; exit }
                        }
                }'
}

ft_sc_slot() {
        local p out
        for p in $(ft_sc_ports); do
                out=$(ft_sc_cli "$p" cluster keyslot "$1") && [[ $out =~ ^[0-9]+$ ]] && { echo "$out"; return 0; }
        done
        return 1
}

ft_sc_full() {
        local i p ok masters
        for ((i = 0; i < $1 * 5; i++)); do
                ok=1
                masters=$(ft_sc_nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 {sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2}')
                [[ $(wc -w <<<"$masters") == 3 ]] || ok=0
                for p in $masters; do
                        [[ $(ft_sc_repl "$p" min_slaves_good_slaves) == 2 ]] || ok=0
                        ft_sc_cli "$p" cluster info | tr -d '\r' | grep -q '^cluster_state:ok' || ok=0
                done
                ((ok)) && return 0
                sleep 0.2
        done
        return 1
}

ft_sc_pid() { ft_sc_cli "$1" info server | tr -d '\r' | sed -n 's/^process_id://p'; }
ft_sc_cfg() { ft_sc_cli "$1" config get "$2" | sed -n 2p; }
ft_sc_elected() {
        local f t ms
        f=$(ft_sc_cfg "$1" logfile)
        [[ -n $f && -r $f ]] || f=$(ft_sc_cfg "$1" dir)/$f
        [[ -r $f ]] || return 0
        grep 'Failover election won' "$f" | sed -n 's/^[0-9]*:[A-Z] \([0-9]* [A-Za-z]* [0-9]* [0-9:.]*\) .*/\1/p' |
                while read -r t; do
                        ms=$(date -d "$t" +%s%3N 2>/dev/null) || continue
                        ((ms >= $2)) && echo "$ms"
                done | tail -n 1
}
