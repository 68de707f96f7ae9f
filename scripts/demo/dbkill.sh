# scripts/demo/dbkill.sh: the database side of `scripts/demo.sh --db galera [--kill-db]`
# (DESIGN.md 16), sourced by run.sh (which defines say, warn, die, phase, RUN, REPO,
# HOT_STOCK, OPS_ADDR and the MYSQL_* endpoints).
#
#   db_galera_up     start (or reuse) the local three-node Galera cluster with
#                    `scripts/stack.sh galera up`; its URL becomes the run's database
#   dbkill_arm       --kill-db: arm the kill (after the front is up)
#   dbkill_step      one step, called by the sale loop about ten times a second:
#                    armed: SIGKILL node1 (the writer every binary starts on) once a fifth
#                    of the hot stock is taken; down: poll the front's /readyz until it
#                    names another writer, restart node1 after DBKILL_DOWN_S seconds
#                    (`scripts/stack.sh galera up`: it rejoins by IST); back: over once
#                    node1 is Synced and the front's writer is node1 again
#   dbkill_finish    after the sale: step until over (or 120 s)
#
# Written for report.py (dbkill.py): $RUN/dbkill.txt, "name value" lines: kill_at,
# accepted_at_kill, kill_ms, writer_before, switch_ms, writer_during, back_ms, synced_ms,
# writer_after (wall ms; writers as host:port).

DBKILL_PHASE=off          # off | armed | down | back | over
DBKILL_DOWN_S=${DBKILL_DOWN_S:-8}
DBKILL_KILL_AT=1
DBKILL_KILL_MS=0
DBKILL_BACK_PID=
DBKILL_NEXT_POLL=0

dbkill_now() { date +%s%3N; }
dbkill_mark() { echo "$1 $2" >> "$RUN/dbkill.txt"; }
# The DB node the front's new transactions go to (its /readyz "dbWriter"), or "-".
dbkill_writer() {
        local w
        w=$(curl -s -m 2 "http://$OPS_ADDR/readyz" 2>/dev/null | sed -n 's/.*"dbWriter":"\([^"]*\)".*/\1/p')
        echo "${w:--}"
}

db_galera_up() {
        local before
        # (galera status exits 1 unless the three nodes are Synced: a node count is wanted)
        before=$( { "$REPO/scripts/stack.sh" galera status 2>/dev/null || true; } | awk '$3 == "up"' | wc -l)
        if (( before == 0 )); then
                say "--db galera: no Galera node is running; starting the three-node cluster with scripts/stack.sh galera up (a minute or two the first time; log: $RUN/galera.log)"
        else
                say "--db galera: $before of 3 Galera nodes up; scripts/stack.sh galera up starts the others (log: $RUN/galera.log)"
        fi
        "$REPO/scripts/stack.sh" galera up > "$RUN/galera.log" 2>&1 9>&- ||
                { tail -n 20 "$RUN/galera.log" >&2; die "scripts/stack.sh galera up failed"; }
        # stopped at the end (unless --keep) only when this run started it
        (( before > 0 )) || STARTED_SERVICES+=(galera)
        MYSQL_BASE_URL=$("$REPO/scripts/stack.sh" galera env | sed -n 's/^export SECKILL_MYSQL_URL=//p')
        [[ -n $MYSQL_BASE_URL ]] || die "scripts/stack.sh galera env printed no URL"
}

dbkill_arm() {
        : > "$RUN/dbkill.txt"
        DBKILL_KILL_AT=$(( HOT_STOCK / 5 > 0 ? HOT_STOCK / 5 : 1 ))
        dbkill_mark kill_at "$DBKILL_KILL_AT"
        dbkill_mark down_s "$DBKILL_DOWN_S"
        dbkill_mark writer_before "$(dbkill_writer)"
        DBKILL_PHASE=armed
        say "--kill-db: node1 (127.0.0.1:3311, the writer) is SIGKILLed once $DBKILL_KILL_AT purchases are accepted, restarted ${DBKILL_DOWN_S}s later"
}

dbkill_step() {
        local now n w
        case $DBKILL_PHASE in off|over) return 0 ;; esac
        now=$(dbkill_now)
        if [[ $DBKILL_PHASE == armed ]]; then
                n=$( { cat "$RUN"/sale/accepted-*.tsv 2>/dev/null || true; } | wc -l)
                (( n >= DBKILL_KILL_AT )) || return 0
                "$REPO/scripts/stack.sh" galera kill 1 >> "$RUN/galera.log" 2>&1 9>&- ||
                        warn "scripts/stack.sh galera kill 1 failed (log: $RUN/galera.log)"
                DBKILL_KILL_MS=$now
                dbkill_mark kill_ms "$now"
                dbkill_mark accepted_at_kill "$n"
                phase db_writer_killed
                say "db: node1 (the writer) SIGKILLed after $n accepted purchases"
                DBKILL_PHASE=down
                return 0
        fi
        (( now >= DBKILL_NEXT_POLL )) || return 0
        DBKILL_NEXT_POLL=$((now + 200))
        if [[ $DBKILL_PHASE == down ]]; then
                w=$(dbkill_writer)
                if [[ $w != - && $w != *:3311 ]] && ! grep -q '^switch_ms ' "$RUN/dbkill.txt"; then
                        dbkill_mark switch_ms "$now"
                        dbkill_mark writer_during "$w"
                        say "db: the front writes through $w now ($(( now - DBKILL_KILL_MS )) ms after the kill)"
                fi
                if (( now - DBKILL_KILL_MS >= DBKILL_DOWN_S * 1000 )); then
                        # in the background: the sale loop keeps stepping while node1 rejoins
                        "$REPO/scripts/stack.sh" galera up >> "$RUN/galera.log" 2>&1 9>&- &
                        DBKILL_BACK_PID=$!
                        dbkill_mark back_ms "$now"
                        phase db_writer_restarted
                        say "db: node1 restarting (it rejoins by IST)"
                        DBKILL_PHASE=back
                fi
        elif [[ $DBKILL_PHASE == back ]] && ! kill -0 "$DBKILL_BACK_PID" 2>/dev/null; then
                wait "$DBKILL_BACK_PID" 2>/dev/null || warn "node1 did not rejoin (log: $RUN/galera.log)"
                DBKILL_BACK_PID=
                dbkill_mark synced_ms "$(dbkill_now)"
                # The binaries re-check the node list once a second (DESIGN.md 16), at their
                # next transaction: the front's next one may be its lease renewal (every
                # third of SECKILL_WORKER_LEASE_MS), so wait up to 15 s for node1 again.
                for _ in $(seq 1 75); do
                        w=$(dbkill_writer)
                        [[ $w == *:3311 ]] && break
                        sleep 0.2
                done
                dbkill_mark writer_after "$w"
                dbkill_mark writer_back_ms "$(dbkill_now)"
                phase db_writer_synced
                say "db: node1 Synced again; the front writes through $w"
                DBKILL_PHASE=over
        fi
}

dbkill_finish() {
        local t0=$SECONDS
        if [[ $DBKILL_PHASE == off ]]; then return 0; fi
        DBKILL_KILL_AT=0   # the sale ended before the kill: kill now, without a sale
        while [[ $DBKILL_PHASE != over ]]; do
                dbkill_step
                if (( SECONDS - t0 >= 120 )); then
                        warn "db: still in phase $DBKILL_PHASE after 120 s"
                        break
                fi
                sleep 0.1
        done
}
