#!/usr/bin/env bash
# bench/windows.sh: the failover windows buyers see on the stack's own topologies
# (DESIGN.md 4b, 12, 16), each measured WINDOWS_RUNS times (3) during a sale that keeps
# one purchase in flight at a time (a fresh user each, 20 ms apart, per watched voucher;
# bench/windows_buyer.py), medians printed beside their budgets:
#   sentinel     `scripts/stack.sh up sentinel` (a master, two replicas, three Sentinels);
#                once both replicas are linked, SENTINEL FAILOVER mid-sale. Window = the
#                503 window buyers saw (windows_buyer.py window: from the first bad answer
#                to the first 202 after the last one; 0 without a bad answer). Budget
#                <= 2000 ms. Also: from the command to the Sentinels' +switch-master, and
#                from it to the old master's demotion (ROLE slave).
#   cluster      `scripts/stack.sh up cluster` (3 masters with 2 replicas each); the
#                measurement of fault case 0393: one 8-bucket voucher whose buckets span the
#                three masters, two buyers; SIGKILL of bucket 0's master mid-sale; the
#                answers split by the buyer's home bucket. Window = the 503 window of the
#                buyers homed on the dead master, budget <= cluster-node-timeout + 2000 ms;
#                the buyers homed on the other masters must answer 202 throughout (answers
#                other than 202 and 409 counted, budget 0; of them, 503s and no answers
#                shown apart: a 200 is the DB-only path). The killed node is restarted by
#                `scripts/stack.sh up cluster` (it rejoins as a replica).
#   galera-kill  `scripts/stack.sh galera up` (three nodes) as the book of record, the
#   galera-stop  shared standalone Redis for admissions; SIGKILL (kill) or SIGSTOP for 14 s
#                (stop) of node1, the writer, mid-sale. Figures: 503s with cause "lease"
#                on the Redis path (budget 0) and other bad answers, and the time from the
#                kill to the first order row committed after it, read on node2 every
#                100 ms (the count 0.3 s after the fault is the base, as in fault cases
#                0282/0283), budget <= eviction + 2000 ms, where the eviction is measured:
#                the first sample of node2 with wsrep_cluster_size < 3 (the configured
#                evs.suspect_timeout is printed beside it). node1 is restarted (kill) or
#                continued (stop) and Synced again before the next run.
#   standalone   a redis-server of the stack's own (`scripts/stack.sh up redis` with a
#                private state dir and a spare SECKILL_STACK_REDIS_PORT: the shared one
#                on 6379 serves every other user and is never killed), SIGKILL mid-sale;
#                window = from the kill to the first 200 CREATED of the DB-only path
#                (DESIGN.md 12). Budget <= 3000 ms.
# Usage: bench/windows.sh [sentinel|cluster|galera-kill|galera-stop|standalone ...]
# (default: all five, in that order). Prints each run, then one line per window:
# name, median (runs), budget, within|OVER, and the load average (/proc/loadavg) at the
# start and end of that window's runs; then name=value lines (medians) for scripts.
# Exit 0 iff every run produced its figures (a figure over budget is printed, not an
# error: the figures go to docs/SCALING.md with the machine's load).
# It kills and restarts nodes of the shared topologies: nothing else may use them
# meanwhile (on a shared machine run it under the stack lock, e.g. `sk-stack`). A topology
# it had to start is stopped at the end (`scripts/stack.sh down ...`); one that was
# running is left running, healed. Needs the stack (MariaDB, Kafka, Redis: scripts/stack.sh
# up) and build/bin. Env: SK_BIN (build/bin), WINDOWS_RUNS (3), WINDOWS_LEASE_MS (the
# front's SECKILL_WORKER_LEASE_MS; default the binaries' own, 30000), WINDOWS_LOG_DIR
# (each run's log; default a fresh /tmp/windows.XXXXXX, kept).
# Uses the fault suite's harness (tests/support/ft.sh: its own database, prefix and topic
# per run, removed at exit).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
STACK=$repo/scripts/stack.sh
BUYER=$here/windows_buyer.py
runs=${WINDOWS_RUNS:-3}

now_ms() { date +%s%3N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
result() { echo "RESULT $*"; }

# ---------------------------------------------------------------- one run (subprocess)
# Before ft.sh: the harness reads SECKILL_MYSQL_URL / SECKILL_REDIS_URL when sourced.
# The front's worker lease: WINDOWS_LEASE_MS, else the binaries' default (the harness's
# 3 s stays for seckill-admin, which mints once).
FRONT_LEASE_MS=${WINDOWS_LEASE_MS:-30000}
# ft.sh itself is sourced at the top level of the run (its arrays are declared there).
harness() {
        ft_init "windows_$1"
        BUYER_PIDS=()
        SUB_PID=
        FT_CLEANUP_HOOKS+=(buyers_stop)
}
front() { ft_front f1 SECKILL_WORKER_LEASE_MS="$FRONT_LEASE_MS"; }
# buyer_start V FIRST OUT: a buyer on front f1 for voucher V, users from FIRST.
buyer_start() {
        python3 "$BUYER" buy "${FT_ADDR[f1]}" "$1" "$2" "$3" "$FT_WORK/buyers.stop" 20 &
        BUYER_PIDS+=($!)
}
buyers_stop() {
        local p
        [[ -n ${SUB_PID:-} ]] && kill "$SUB_PID" 2>/dev/null
        touch "$FT_WORK/buyers.stop"
        for p in "${BUYER_PIDS[@]}"; do wait "$p" 2>/dev/null; done
        BUYER_PIDS=()
}
win() { python3 "$BUYER" window "$@"; }
field() { sed -n "s/.*\<$1=\([0-9-]*\).*/\1/p" <<<"$2"; }
tally() { awk -v t="$2" '$1 >= t {print $3 ($3 == "503" ? ":" $4 : "")}' "$1" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}'; }
repl() { redis-cli -h 127.0.0.1 -p "$1" info replication 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }

# Wait up to $1 s until the Sentinels' master has both replicas linked and good.
sentinel_full() {
        local i m
        for ((i = 0; i < $1 * 5; i++)); do
                m=$(redis-cli -p 26390 sentinel get-master-addr-by-name seckill 2>/dev/null | sed -n 2p)
                [[ -n $m && $(repl "$m" min_slaves_good_slaves) == 2 ]] && return 0
                sleep 0.2
        done
        return 1
}

one_sentinel() {
        local v old new t_cmd t_sw t_dem out i w sp
        harness sentinel
        sentinel_full 90 || ft_die "the Sentinels' master has not two good replicas after 90 s"
        v=$(ft_voucher 1000000)
        front
        ft_consumer c1
        out=$FT_WORK/answers.txt
        # The Sentinels' announcement, timestamped as it arrives ($! is redis-cli itself:
        # killed below, no process of this run outlives it).
        redis-cli -p 26391 subscribe +switch-master 2>/dev/null \
                > >(while read -r l; do [[ $l == "seckill "* ]] && echo "$(now_ms) $l"; done >"$FT_WORK/switch.txt") &
        sp=$!
        SUB_PID=$sp
        buyer_start "$v" 1 "$out"
        sleep 3
        old=$(redis-cli -p 26390 sentinel get-master-addr-by-name seckill | sed -n 2p)
        for ((i = 0; i < 30; i++)); do
                t_cmd=$(now_ms)
                [[ $(redis-cli -p 26390 sentinel failover seckill 2>&1) == OK ]] && break
                sleep 1
        done
        ((i < 30)) || ft_die "SENTINEL FAILOVER refused for 30 s"
        for ((i = 0; i < 1500; i++)); do
                new=$(redis-cli -p 26390 sentinel get-master-addr-by-name seckill | sed -n 2p)
                [[ $new != "$old" ]] && break
                sleep 0.02
        done
        for ((i = 0; i < 1500; i++)); do
                [[ $(repl "$old" role) == slave ]] && break
                sleep 0.02
        done
        t_dem=$(now_ms)
        sleep 6
        buyers_stop
        kill "$sp" 2>/dev/null
        wait "$sp" 2>/dev/null
        SUB_PID=
        t_sw=$(awk 'NR == 1 {print $1}' "$FT_WORK/switch.txt")
        w=$(win "$out" "$t_cmd" 30000)
        result sentinel "$w" "master=$old->$new" "switch_ms=$(( ${t_sw:-$t_cmd} - t_cmd ))" \
                "demote_ms=$(( t_dem - ${t_sw:-$t_cmd} ))" "answers=$(tally "$out" "$t_cmd")"
        exit 0
}

# The measurement of fault case 0393 (tests/faults/0393_redis_cluster_master_kill_window.sh),
# helpers in tests/support/ft_stack_cluster.sh: one 8-bucket voucher whose buckets span
# the three masters, two buyers, the master of bucket 0 SIGKILLed; the answers split by
# the buyer's home bucket (windows_buyer.py split): the dead master's buckets give the
# window, the others the answers other than 202 (409 apart) and the bad ones.
one_cluster() {
        local v m i t_kill t_prom= t_el= victim pid nt w others=0 others202=0 k b dead= nb=8 slot0
        local -A own=()
        harness cluster
        ft_sc_full 90 || ft_die "the Cluster has not two good replicas per master after 90 s"
        for ((i = 0; i < 20; i++)); do
                v=$(ft_voucher 3000 "$nb")
                own=()
                for ((b = 0; b < nb; b++)); do own[$b]=$(ft_sc_owner "$(ft_sc_slot "{v:$v:$b}")"); done
                (($(printf '%s\n' "${own[@]}" | sort -u | grep -c .) == 3)) && break
        done
        (($(printf '%s\n' "${own[@]}" | sort -u | grep -c .) == 3)) || ft_die "no voucher with buckets on all three masters in 20 tries"
        victim=${own[0]}
        for ((b = 0; b < nb; b++)); do [[ ${own[$b]} == "$victim" ]] && dead+=${dead:+,}$b; done
        front
        ft_consumer c1
        for k in 0 1; do
                python3 "$BUYER" buy "${FT_ADDR[f1]}" "$v" $(((k + 1) * 10000000)) "$FT_WORK/answers-$k.txt" \
                        "$FT_WORK/buyers.stop" 20 &
                BUYER_PIDS+=($!)
        done
        sleep 3
        pid=$(ft_sc_pid "$victim")
        nt=$(ft_sc_cfg "$victim" cluster-node-timeout)
        [[ $pid =~ ^[0-9]+$ ]] || ft_die "no pid for the master on $victim"
        slot0=$(ft_sc_slot "{v:$v:0}")
        t_kill=$(now_ms)
        kill -KILL "$pid"
        ft_log "SIGKILL of master $victim (pid $pid, voucher $v buckets $dead); node timeout $nt ms"
        for ((i = 0; i < 300; i++)); do
                m=$(ft_sc_owner "$slot0")
                [[ -n $m && $m != "$victim" ]] && { t_prom=$(now_ms); break; }
                sleep 0.1
        done
        sleep 8
        buyers_stop
        # The election read to the ms in the new master's own log (the poll above is an
        # upper bound, 100 ms apart and slower at load); the front's share = window - it.
        t_el=$(ft_sc_elected "${m:-0}" "$t_kill")
        python3 "$BUYER" split <(sort -n "$FT_WORK"/answers-*.txt) "$nb" "$dead" "$FT_WORK/dead.txt" "$FT_WORK/live.txt"
        w=$(win "$FT_WORK/dead.txt" "$t_kill" 40000)
        others=$(awk -v t="$t_kill" '$1 >= t && $3 != 200 && $3 != 202' "$FT_WORK/live.txt" | wc -l)
        others202=$(awk -v t="$t_kill" '$1 >= t && $3 != 202 && $3 != 409' "$FT_WORK/live.txt" | wc -l)
        # The killed node back (it rejoins as a replica of the promoted one).
        "$STACK" up cluster >>"$FT_WORK/stack.log" 2>&1 || ft_log "scripts/stack.sh up cluster failed: $(tail -n 3 "$FT_WORK/stack.log")"
        ft_sc_full 120 || ft_log "the Cluster has not two good replicas per master 120 s after the restart"
        result cluster "$w" "others_bad=$others" "others_non202=$others202" "node_timeout_ms=$nt" "master=$victim->${m:-?}" \
                "promoted_ms=$(( ${t_prom:-$((t_kill + 99999))} - t_kill ))" \
                "elected_ms=$(( ${t_el:-${t_prom:-$((t_kill + 99999))}} - t_kill ))" \
                "answers=$(tally "$FT_WORK/dead.txt" "$t_kill")" \
                "others=$(tally "$FT_WORK/live.txt" "$t_kill")"
        exit 0
}

galera_pid() { "$STACK" galera status 2>/dev/null | awk -v n="galera-node$1" '$1 == n && $5 == "started_by_us=yes" {sub(/^pid=/, "", $4); print $4}'; }
galera_synced() { "$STACK" galera status >/dev/null 2>&1; }
suspect_ms() {
        local v
        v=$(mysql --no-defaults -uroot -h127.0.0.1 -P3312 --protocol=TCP -N -B \
                -e "SHOW VARIABLES LIKE 'wsrep_provider_options'" 2>/dev/null |
                tr ';' '\n' | sed -n 's/^ *evs.suspect_timeout = *//p')
        # ISO 8601 durations as Galera prints them: PT5S, PT1.5S, PT1M
        python3 -c 'import re, sys
m = re.fullmatch(r"PT(?:(\d+)M)?(?:([\d.]+)S)?", sys.argv[1].strip())
print(int((int(m.group(1) or 0) * 60 + float(m.group(2) or 0)) * 1000) if m else "")' "${v:-x}"
}

one_galera() {
        local mode=$1 v pid t_kill t_commit= t_evict= out w i ev writer
        harness "galera_$mode"
        v=$(ft_voucher 1000000)
        front
        ft_consumer c1
        out=$FT_WORK/answers.txt
        buyer_start "$v" 1 "$out"
        sleep 4
        writer=$(curl -s -m 3 "http://${FT_OPS[f1]}/readyz" | sed -n 's/.*"dbWriter":"\{0,1\}\([^",}]*\).*/\1/p')
        pid=$(galera_pid 1)
        [[ $pid =~ ^[1-9][0-9]*$ ]] || ft_die "node1 was not started by scripts/stack.sh galera up"
        ev=$(suspect_ms)
        ft_galera_watch 3312
        t_kill=$(now_ms)
        if [[ $mode == kill ]]; then kill -KILL "$pid"; else kill -STOP "$pid"; fi
        ft_log "node1 (pid $pid, the front's writer: $writer) SIG$([[ $mode == kill ]] && echo KILL || echo STOP)"
        # Node2 watched as in fault cases 0282/0283 (tests/support/ft_galera_watch.sh): the
        # eviction it saw, and the first order committed after the fault from the count it
        # held 0.3 s after it; read once the 14 s of the fault are over.
        while (( $(now_ms) - t_kill < 14000 )); do sleep 0.2; done
        ft_galera_figures "$t_kill"
        [[ -n $FT_GALERA_EVICT ]] && t_evict=$((t_kill + FT_GALERA_EVICT))
        [[ -n $FT_GALERA_FIRST ]] && t_commit=$((t_kill + FT_GALERA_FIRST))
        ft_log "node2: evicted after ${FT_GALERA_EVICT:-?} ms; first commit after ${FT_GALERA_FIRST:-?} ms"
        [[ $mode == stop ]] && kill -CONT "$pid"
        sleep 4
        buyers_stop
        w=$(win "$out" "$t_kill" 30000)
        if [[ $mode == kill ]]; then
                "$STACK" galera up >>"$FT_WORK/galera.log" 2>&1 || ft_log "galera up after the kill failed"
        else
                for ((i = 0; i < 90; i++)); do galera_synced && break; sleep 1; done
                galera_synced || { kill -KILL "$pid"; sleep 1; "$STACK" galera up >>"$FT_WORK/galera.log" 2>&1; }
        fi
        galera_synced || ft_log "Galera not Synced with three nodes after the run"
        result "galera_$mode" "$w" "first_commit_ms=$(( ${t_commit:-$((t_kill + 99999))} - t_kill ))" \
                "after_eviction_ms=$(( ${t_commit:-$((t_kill + 99999))} - ${t_evict:-$t_kill} ))" \
                "eviction_ms=$(( ${t_evict:-$((t_kill + 99999))} - t_kill ))" "suspect_ms=${ev:-?}" \
                "writer=$writer" "lease_ms=$FRONT_LEASE_MS" \
                "answers=$(tally "$out" "$t_kill")"
        exit 0
}

# The standalone run's redis-server, started by scripts/stack.sh in a state dir of its own
# on a spare port below the ephemeral range (none of the stack's shared ports).
standalone_up() {
        SDIR=$(mktemp -d /tmp/windows.redis.XXXXXX)
        SPORT=$(python3 "$repo/tests/support/sk_low_ports.py" 1)
        SECKILL_STACK_DIR=$SDIR SECKILL_STACK_REDIS_PORT=$SPORT "$STACK" up redis >"$SDIR/up.log" 2>&1 ||
                { cat "$SDIR/up.log" >&2; rm -rf "$SDIR"; echo "scripts/stack.sh up redis failed" >&2; exit 1; }
        export SECKILL_REDIS_URL=redis://127.0.0.1:$SPORT/0
}
standalone_down() {
        SECKILL_STACK_DIR=$SDIR SECKILL_STACK_REDIS_PORT=$SPORT "$STACK" down redis >/dev/null 2>&1
        rm -rf "$SDIR"
}

one_standalone() {
        local sdir=$SDIR port=$SPORT pid v t_kill t_first out i
        FT_CLEANUP_HOOKS+=(standalone_down)
        harness standalone
        v=$(ft_voucher 1000000)
        front
        ft_consumer c1
        out=$FT_WORK/answers.txt
        buyer_start "$v" 1 "$out"
        sleep 4
        pid=$(tr -dc '0-9' <"$sdir/run/redis.pid")
        t_kill=$(now_ms)
        kill -KILL "$pid"
        ft_log "SIGKILL of the stack's redis-server on $port (pid $pid)"
        for ((i = 0; i < 300; i++)); do
                [[ -n $(python3 "$BUYER" first "$out" "$t_kill" 200) ]] && break
                sleep 0.1
        done
        buyers_stop
        t_first=$(python3 "$BUYER" first "$out" "$t_kill" 200)
        result standalone "window_ms=$(( ${t_first:-$((t_kill + 99999))} - t_kill ))" \
                "timed_rule_ms=$((2 * FT_DELIVERY_MS + 1000 + 1000))" "answers=$(tally "$out" "$t_kill")"
        exit 0
}

case ${1:-} in
--one)
        # The run's topology, before ft.sh reads the URLs.
        case ${2:-} in
        sentinel | cluster) eval "$(SECKILL_STACK_REDIS=$2 "$STACK" env | grep SECKILL_REDIS_URL)" ;;
        galera-kill | galera-stop)
                "$STACK" galera up >"/tmp/windows.galera.$$.log" 2>&1 ||
                        { tail -n 20 "/tmp/windows.galera.$$.log" >&2; echo "scripts/stack.sh galera up failed" >&2; exit 1; }
                rm -f "/tmp/windows.galera.$$.log"
                eval "$("$STACK" galera env)" ;;
        standalone) standalone_up ;;
        *) exit 2 ;;
        esac
        # shellcheck source=../tests/support/ft.sh
        . "$repo/tests/support/ft.sh"
        # shellcheck source=../tests/support/ft_stack_cluster.sh
        . "$repo/tests/support/ft_stack_cluster.sh"
        # shellcheck source=../tests/support/ft_galera_watch.sh
        . "$repo/tests/support/ft_galera_watch.sh"
        case $2 in
        sentinel) one_sentinel ;;
        cluster) one_cluster ;;
        galera-kill) one_galera kill ;;
        galera-stop) one_galera stop ;;
        standalone) one_standalone ;;
        esac
        exit 2 ;;
-h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
esac

# ---------------------------------------------------------------- the driver
whats=("$@")
[[ ${#whats[@]} -eq 0 ]] && whats=(sentinel cluster galera-kill galera-stop standalone)
for what in "${whats[@]}"; do
        case $what in sentinel | cluster | galera-kill | galera-stop | standalone) ;;
        *) echo "windows.sh: unknown window '$what' (sentinel, cluster, galera-kill, galera-stop, standalone)" >&2; exit 2 ;;
        esac
done
logdir=${WINDOWS_LOG_DIR:-$(mktemp -d /tmp/windows.XXXXXX)}
mkdir -p "$logdir"
res=$logdir/results.txt
: >"$res"
# What was running before: a topology the bench starts is stopped at the end.
was_up() { "$STACK" status 2>/dev/null | awk -v s="$1" '$1 ~ "^"s && $3 == "up" {f = 1} END {exit !f}'; }
stop_after=()
for what in "${whats[@]}"; do
        case $what in
        sentinel | cluster) t=$what ;;
        galera-*) t=galera ;;
        *) continue ;;
        esac
        [[ " ${stop_after[*]} " == *" $t "* ]] && continue
        was_up "$t" || stop_after+=("$t")
        case $t in
        galera) "$STACK" galera up >"$logdir/stack-$t.log" 2>&1 ;;
        *) "$STACK" up "$t" >"$logdir/stack-$t.log" 2>&1 ;;
        esac || { tail -n 20 "$logdir/stack-$t.log" >&2; echo "windows.sh: scripts/stack.sh up $t failed" >&2; exit 1; }
        grep -E 'cluster: master|sentinel: master|galera: up' "$logdir/stack-$t.log" | sed 's/^/topology: /'
done
fails=0
declare -A LOAD0=() LOAD1=()
for what in "${whats[@]}"; do
        LOAD0[$what]=$(load)
        for ((k = 1; k <= runs; k++)); do
                bash "$0" --one "$what" >"$logdir/$what-$k.log" 2>&1
                line=$(grep '^RESULT ' "$logdir/$what-$k.log")
                if [[ -z $line ]]; then
                        echo "run $k $what: no figures (log: $logdir/$what-$k.log)"
                        tail -n 5 "$logdir/$what-$k.log" | sed 's/^/    /'
                        fails=$((fails + 1))
                        continue
                fi
                echo "run $k ${line#RESULT }"
                echo "$line" >>"$res"
        done
        LOAD1[$what]=$(load)
done
for t in "${stop_after[@]}"; do
        case $t in
        galera) "$STACK" down galera >>"$logdir/stack-down.log" 2>&1 ;;
        *) "$STACK" down "$t" >>"$logdir/stack-down.log" 2>&1 ;;
        esac || echo "windows.sh: scripts/stack.sh down $t failed (log: $logdir/stack-down.log)"
done

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "" }'; }
vals() { grep "^RESULT $1 " "$res" | sed -n "s/.* $2=\([0-9-]*\).*/\1/p"; }
first_val() { grep "^RESULT $1 " "$res" | sed -n "s/.* $2=\([^ ]*\).*/\1/p" | head -n 1; }
# row NAME KIND FIELD OP BUDGET BUDGET_TEXT: one line of the table.
declare -a KV=()
row() {
        local name=$1 kind=$2 f=$3 op=$4 budget=$5 text=$6 all med verdict=-
        all=$(vals "$kind" "$f" | paste -sd, -)
        med=$(vals "$kind" "$f" | median)
        if [[ -n $med && -n $budget ]]; then
                verdict=OVER
                if [[ $op == le ]]; then
                        ((med <= budget)) && verdict=within
                elif ((med == budget)); then
                        verdict=within
                fi
        fi
        printf '%-34s %8s  (%-20s)  %-36s %-7s load %s -> %s\n' "$name" "${med:-none}" "${all:-}" "$text" "$verdict" \
                "${LOAD0[${kind/_/-}]:-?}" "${LOAD1[${kind/_/-}]:-?}"
        KV+=("$name=${med:-}")
}
echo
echo "medians of $runs runs (ms or counts), budget, verdict, load average (1 5 15 min) at the start -> end of the runs"
for what in "${whats[@]}"; do
        case $what in
        sentinel)
                row sentinel_failover_503_ms sentinel window_ms le 2000 "<= 2000 ms"
                row sentinel_switch_ms sentinel switch_ms "" "" "(command -> +switch-master)"
                row sentinel_demote_ms sentinel demote_ms "" "" "(+switch-master -> old master demoted)" ;;
        cluster)
                nt=$(first_val cluster node_timeout_ms)
                row cluster_kill_503_ms cluster window_ms le $(( ${nt:-3000} + 2000 )) "<= node timeout ${nt:-?} + 2000 ms"
                row cluster_kill_other_masters_non202 cluster others_non202 eq 0 "== 0 (other masters: 202 throughout)"
                row cluster_kill_other_masters_bad cluster others_bad "" "" "(of them 503 or no answer)"
                row cluster_promoted_ms cluster promoted_ms "" "" "(kill -> the CLUSTER NODES poll sees the replica serve the slot)"
                row cluster_elected_ms cluster elected_ms "" "" "(kill -> 'Failover election won' in the new master's log: the Cluster's own share)" ;;
        galera-kill | galera-stop)
                k=galera_${what#galera-}
                row "${k}_lease_503" "$k" lease eq 0 "== 0 (503 lease, Redis path)"
                row "${k}_other_bad" "$k" other "" "" "(other 503s and failures)"
                row "${k}_eviction_ms" "$k" eviction_ms "" "" "(fault -> node2 sees a cluster of 2: Galera's own share)"
                row "${k}_first_commit_ms" "$k" first_commit_ms "" "" "(fault -> first order committed after it)"
                row "${k}_commit_after_eviction_ms" "$k" after_eviction_ms le 2000 "<= 2000 ms after the eviction" ;;
        standalone)
                row standalone_kill_first_dbonly_ms standalone window_ms le 3000 "<= 3000 ms" ;;
        esac
done
echo
printf '%s\n' "${KV[@]}"
echo "logs: $logdir"
((fails == 0))
