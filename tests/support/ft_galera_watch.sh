#!/usr/bin/env bash
# tests/support/ft_galera_watch.sh: the figures of a Galera writer loss (DESIGN.md 16,
# docs/SCALING.md), read on a surviving node; sourced after ft.sh (it needs FT_WORK and
# FT_DB) by ft_galera.sh for fault cases 0282/0283 and by bench/windows.sh. Sourcing it
# starts nothing.
#   ft_galera_watch PORT          from now until ft_galera_figures: every 0.1 s, node PORT's
#                                 order count and cluster size (local reads, which a
#                                 stalled cluster still answers) into $FT_WORK/watch.txt
#                                 ("EPOCH_MS COUNT SIZE"; 300 s at most)
#   ft_galera_figures KILL_MS     stops the watch; FT_GALERA_EVICT = ms from the fault
#                                 (KILL_MS, epoch ms) to the first sample with a cluster
#                                 of fewer than 3, FT_GALERA_FIRST = ms from the fault to the
#                                 first order committed after it (the count 0.3 s after
#                                 the fault is the base: write sets certified before it
#                                 still arrive); FT_GALERA_FIRST_LO = ms from the fault to
#                                 the sample before that one, so the commit happened in
#                                 (FIRST_LO, FIRST]: on a loaded host one mysql call can take
#                                 a second, and the bounds say how sharp the figure is;
#                                 each empty when the watch never saw it
# What it deliberately does not do: judge the figures (ft_galera_budget, windows.sh do).

ft_galera_watch() {
        local port=$1
        : >"$FT_WORK/watch.txt"
        rm -f "$FT_WORK/watch.stop"
        (
                # Bounded: a case that dies before ft_galera_figures leaves no loop behind.
                end=$((SECONDS + 300))
                while [[ -d $FT_WORK && ! -f $FT_WORK/watch.stop ]] && ((SECONDS < end)); do
                        out=$(mysql --no-defaults -uroot -h127.0.0.1 -P"$port" --protocol=TCP --connect-timeout=1 \
                                -N -B "$FT_DB" -e "SELECT (SELECT COUNT(*) FROM tb_voucher_order),
                                (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                 WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE')" 2>/dev/null | tr '\t' ' ')
                        [[ -n $out ]] && echo "$(date +%s%3N) $out" >>"$FT_WORK/watch.txt"
                        sleep 0.1
                done
        ) &
        FT_GALERA_WATCH_PID=$!
}

ft_galera_figures() {
        local kill_ms=$1
        touch "$FT_WORK/watch.stop"
        wait "$FT_GALERA_WATCH_PID"
        FT_GALERA_EVICT=$(awk -v k="$kill_ms" '$1 > k && $3 < 3 {print $1 - k; exit}' "$FT_WORK/watch.txt")
        read -r FT_GALERA_FIRST_LO FT_GALERA_FIRST < <(awk -v k="$kill_ms" \
                '$1 < k + 300 {next} base == "" {base = $2; p = $1; next}
                $2 > base {print p - k, $1 - k; exit} {p = $1}' "$FT_WORK/watch.txt")
}
