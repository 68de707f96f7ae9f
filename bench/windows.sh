#!/usr/bin/env bash
# bench/windows.sh: the two availability windows (DESIGN.md §4b, §12),
# each measured three times on a sale that keeps one purchase in flight every ~20 ms:
#   sentinel  a private Sentinel group (tests/support/ft_redis_topo.sh: a master, two
#             replicas, so the new master has a replica at once under min-replicas-to-
#             write 1), a front and a consumer on it; SENTINEL FAILOVER; window = from
#             the Sentinels' switch (their +switch-master message) to the first 202 after
#             the failover's first 503 (0 when 202s were back before the message).
#             Baseline of the same run: from the switch to the old master's demotion
#             (ROLE slave), the moment a front that re-resolves only on READONLY moves.
#             Target: window <= 2000 ms.
#   kill      a private redis-server killed (SIGKILL) mid-sale with consumers caught up;
#             window = from the kill to the first 200 CREATED of the DB-only path.
#             Baseline: the v4 timed drain rule, since + 2 x delivery timeout + 1 s + the
#             1 s read period (a figure of the configuration, not measured).
#             Target: window <= 3000 ms.
# Prints each run, then the medians: sentinel_ms=, sentinel_demote_ms=,
# sentinel_ratio=<window / demotion>, kill_ms=, kill_timed_rule_ms=, kill_ratio=<window /
# timed rule>. Uses the fault suite's harness (its own database, prefix, topic; private
# Redis servers; everything removed at exit). Needs the local stack (MariaDB, Kafka):
# scripts/stack.sh up. Env: SK_BIN (build/bin), WINDOWS_RUNS (3).
# Speed is not judged here: the figures go to bench/README.md with the machine's load.
set -u
here=$(cd "$(dirname "$0")" && pwd)
runs=${WINDOWS_RUNS:-3}

now_ms() { date +%s%3N; }

# buy_loop ADDR V FIRST OUT: one purchase after another (fresh users) until killed;
# each answer as "epoch_ms status" in OUT.
buy_loop() {
        local addr=$1 v=$2 u=$3 out=$4 code
        while :; do
                code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -X POST -H "X-User-Id: $u" \
                        "http://$addr/api/v1/vouchers/$v/seckill" 2>/dev/null)
                echo "$(now_ms) ${code:-000}" >>"$out"
                u=$((u + 1))
                sleep 0.02
        done
}

# first_after FILE T STATUS: epoch ms of the first answer STATUS at or after T, or "".
first_after() { awk -v t="$2" -v s="$3" '$1 >= t && $2 == s { print $1; exit }' "$1"; }

one_sentinel() {
        . "$here/../tests/support/ft.sh"
        . "$here/../tests/support/ft_redis_topo.sh"
        FT_TOPO_REPLICAS=2 # a second replica: the new master has one at once (min-replicas-to-write 1)
        ft_init windows_sentinel
        ft_sentinel_start
        local v old new t_cmd t_addr t_sw t_dem t_first out=$FT_WORK/loop.txt lp sp i
        v=$(ft_voucher 100000)
        ft_front f1
        ft_consumer c1
        # The Sentinels' announcement, timestamped as it arrives.
        redis-cli -h 127.0.0.1 -p "${FT_TOPO_SENTINELS[1]}" subscribe +switch-master 2>/dev/null |
                while read -r l; do [[ $l == "$FT_TOPO_MASTER "* ]] && echo "$(now_ms) $l"; done \
                >"$FT_WORK/switch.txt" &
        sp=$!
        buy_loop "${FT_ADDR[f1]}" "$v" 1 "$out" &
        lp=$!
        sleep 3
        old=$(ft_sentinel_master | cut -d' ' -f2)
        t_cmd=$(now_ms)
        ft_sentinel_failover 30 || { kill "$lp"; ft_die "no failover"; }
        for ((i = 0; i < 1500; i++)); do
                new=$(ft_sentinel_master | cut -d' ' -f2)
                [[ $new != "$old" ]] && break
                sleep 0.02
        done
        t_addr=$(now_ms)
        for ((i = 0; i < 1500; i++)); do
                [[ $(ft_topo_cli "$old" role 2>/dev/null | head -n 1) == slave ]] && break
                sleep 0.02
        done
        t_dem=$(now_ms)
        sleep 5
        kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null
        pkill -P "$sp" 2>/dev/null; kill "$sp" 2>/dev/null
        t_sw=$(awk 'NR == 1 { print $1 }' "$FT_WORK/switch.txt")
        t_sw=${t_sw:-$t_addr}
        t_first=$(first_after "$out" "$t_cmd" 503)
        t_first=$(first_after "$out" "${t_first:-$t_cmd}" 202)
        grep -hE 'sentinel_switch|breaker_(open|close)|degrade_state' "$FT_WORK/f1.log" | head -n 20 >&2
        w=$(( ${t_first:-$((t_sw + 99999))} - t_sw ))
        ((w < 0)) && w=0
        echo "RESULT sentinel window_ms=$w from_failover_ms=$(( ${t_first:-$((t_cmd + 99999))} - t_cmd ))" \
                "addr_changed_ms=$((t_addr - t_cmd)) switch_master_ms=$((t_sw - t_cmd))" \
                "demote_ms=$((t_dem - t_sw))" \
                "answers=$(awk -v t="$t_cmd" '$1 >= t {print $2}' "$out" | sort | uniq -c | tr -s ' \n' ' ')"
        exit 0
}

one_kill() {
        . "$here/../tests/support/ft.sh"
        ft_init windows_kill
        ft_private_redis
        local v t_kill t_first out=$FT_WORK/loop.txt lp
        v=$(ft_voucher 100000)
        ft_front f1
        ft_consumer c1
        buy_loop "${FT_ADDR[f1]}" "$v" 1 "$out" &
        lp=$!
        sleep 4
        t_kill=$(now_ms)
        ft_private_redis_kill
        for _ in $(seq 1 300); do
                [[ -n $(first_after "$out" "$t_kill" 200) ]] && break
                sleep 0.1
        done
        kill "$lp" 2>/dev/null; wait "$lp" 2>/dev/null
        t_first=$(first_after "$out" "$t_kill" 200)
        echo "RESULT kill window_ms=$(( ${t_first:-$((t_kill + 99999))} - t_kill ))" \
                "timed_rule_ms=$((2 * FT_DELIVERY_MS + 1000 + 1000))" \
                "answers=$(awk -v t="$t_kill" '$1 >= t {print $2}' "$out" | sort | uniq -c | tr -s ' \n' ' ')"
        exit 0
}

case ${1:-} in
--one-sentinel) one_sentinel ;;
--one-kill) one_kill ;;
esac

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "" }'; }
res=$(mktemp)
for ((k = 1; k <= runs; k++)); do
        for what in sentinel kill; do
                line=$(bash "$0" "--one-$what" 2>/dev/null | grep '^RESULT ')
                echo "run $k: ${line#RESULT }"
                echo "$line" >>"$res"
        done
done
field() { grep "^RESULT $1 " "$res" | sed -n "s/.* $2=\([0-9-]*\).*/\1/p" | median; }
s=$(field sentinel window_ms) d=$(field sentinel demote_ms)
kw=$(field kill window_ms) kt=$(field kill timed_rule_ms)
echo "sentinel_ms=$s"
echo "sentinel_demote_ms=$d"
[[ -n $s && -n $d && $d -gt 0 ]] && echo "sentinel_ratio=$(awk -v a="$s" -v b="$d" 'BEGIN { printf "%.2f", a / b }')"
echo "kill_ms=$kw"
echo "kill_timed_rule_ms=$kt"
[[ -n $kw && -n $kt && $kt -gt 0 ]] && echo "kill_ratio=$(awk -v a="$kw" -v b="$kt" 'BEGIN { printf "%.2f", a / b }')"
rm -f "$res"
