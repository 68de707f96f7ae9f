#!/usr/bin/env bash
# tests/support/ft_galera.sh: the start of a Galera fault case (0282-0285, DESIGN.md 16),
# sourced first, instead of ft.sh: `scripts/stack.sh galera up` (the case exits 1 when
# it fails), SECKILL_MYSQL_URL = the three nodes (before ft.sh, which parses it when it
# is sourced), then ft.sh and ft_db.sh, and the cleanup hook galera_heal: galera up
# again, since the next case needs three nodes (a case may redefine galera_heal).
#   ft_galera_pids N...   the pids of nodes N... that scripts/stack.sh started (galera
#                         status: pid=, started_by_us=yes), space separated, in order
#   ft_galera_writer FRONT        the DB node FRONT writes through (its /readyz dbWriter)
#   ft_galera_down_then_up FRONT  after node1's death: 3 s later FRONT must write through
#                                 node2; 5 s after that node1 is restarted (galera up, it
#                                 rejoins by IST) and the fault is over (ft_fault_over)
GREPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$GREPO/scripts/stack.sh" galera up >/tmp/skf.galera_up.$$.log 2>&1 ||
        { tail -n 30 /tmp/skf.galera_up.$$.log; echo "$(basename "$0" .sh): scripts/stack.sh galera up failed"; exit 1; }
rm -f /tmp/skf.galera_up.$$.log
eval "$("$GREPO/scripts/stack.sh" galera env)"
. "$(dirname "${BASH_SOURCE[0]}")/ft.sh"
. "$(dirname "${BASH_SOURCE[0]}")/ft_db.sh"
[[ $FT_MYSQL_HOSTS == *,* ]] || { echo "$(basename "$0" .sh): not a multi-host URL: $SECKILL_MYSQL_URL"; exit 1; }

galera_heal() { "$GREPO/scripts/stack.sh" galera up >/dev/null 2>&1 || ft_log "galera up at cleanup failed"; }
FT_CLEANUP_HOOKS+=(galera_heal)

ft_galera_pids() {
        local status n out=()
        status=$("$GREPO/scripts/stack.sh" galera status 2>/dev/null)
        for n in "$@"; do
                out+=("$(awk -v n="galera-node$n" '$1 == n && $5 == "started_by_us=yes" {sub(/^pid=/, "", $4); print $4}' <<<"$status")")
        done
        echo "${out[*]}"
}

ft_galera_writer() {
        curl -s -m 3 "http://${FT_OPS[$1]}/readyz" | sed -n 's/.*"dbWriter":"\{0,1\}\([^",}]*\).*/\1/p'
}

ft_galera_down_then_up() {
        local w
        sleep 3
        w=$(ft_galera_writer "$1")
        [[ $w == *3312* ]] && ft_ok "the front writes through node2 while node1 is down ($w)" ||
                ft_fail "front writer while node1 is down: '$w' (want 127.0.0.1:3312)"
        sleep 5
        "$GREPO/scripts/stack.sh" galera up >>"$FT_WORK/galera.log" 2>&1 || ft_fail "galera up (node1 rejoins)"
        ft_fault_over
}
