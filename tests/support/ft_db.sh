#!/usr/bin/env bash
# tests/support/ft_db.sh: what the database fault cases 0282-0286 share (DESIGN.md 16
# "What is promised"), sourced after ft.sh and ft_init. A case starts a front and a
# consumer (ft_db_services), then:
#   ft_db_sale FRONT V FIRST_USER   the sale in flight: a buy loop (ft_buy_loop), the
#                                   payment provider (odd users pay as soon as they have a
#                                   202) and an observer asking orders/me; closes come from
#                                   the consumer's closer (a short SECKILL_PAY_TIMEOUT_S)
#   ...inject the database fault...
#   ft_db_sale_stop                 stops the three loops
#   ft_db_promised FRONT V          every §9 invariant (ft_check) and what a client saw:
#                                   every orders/me CREATED and every payment answered
#                                   200 PAID is in the DB; no id minted twice
#   ft_db_services [VAR=VALUE...]  the payment keys (FT_PAY_SECRET), front f1 taking signed
#                                   callbacks, V = a voucher of 400 units in 2 buckets, then
#                                   consumer c1 (10 s pay window, closer every 200 ms; the
#                                   extra environment, e.g. a failpoint, goes to it)
#   ft_db_wait_acknowledged S       waits up to S s for an orders/me CREATED and a 200 PAID
#   ft_db_mark_before               what clients were told so far: seen.before, paid.before
#   ft_db_node_rows PORT            "orders sum(status)" as node PORT of the URL sees them
#   ft_db_log_503                   the 503 answers of the case by body, in the log
#   ft_db_survived_before V         what a client saw before the fault (seen.before,
#                                   paid.before: the case copies seen.txt / paid.txt at
#                                   the kill) is in the DB after it
#   ft_sqlproxy NAME                a COMMIT proxy (support/sk_sqlproxy.py) in front of the
#                                   case's MariaDB node: FT_SQLPROXY_URL[NAME] is the
#                                   SECKILL_MYSQL_URL through it; stopped at exit
#   ft_sqlproxy_ctl NAME COMMAND    one control command (arm ACTION HOLD_MS RECONNECT_MS
#                                   COUNT MARKER..., disarm, delay MS, status); prints the
#                                   answer
#   ft_sqlproxy_fired NAME N S      wait up to S s until the proxy's rule fired N times
#   ft_pay_logged FRONT ORDER TXN AMOUNT [CUR]   ft_pay, its answer appended to
#                                   payments.txt ("CODE ORDER TXN BODY") and printed
#   ft_check_pay_told               invariant 7 for payments (DESIGN.md 9): every 200 PAID
#                                   of payments.txt is PAID by an applied row of its txn, no
#                                   409/422 is for an order its txn made PAID
# Files under $FT_WORK: paid.txt ("CODE ORDER BODY" per payment), seen.txt ("USER ORDER"
# per orders/me CREATED answer, with the second of the case it was seen at).
#
# What it deliberately does not do: inject anything, or judge speed.

# ft_db_payer FRONT: the provider pays every order of an odd user once it is in accepted.tsv
# (again after a 503, once a round, until another answer).
# One awk a round picks the orders not paid yet, and the round pays the newest 8 of them
# first: a grep per accepted line made a round take seconds at load 25, and paying the
# oldest first, about a second a payment at load 14, fell behind for good (every order
# late or closed at its deadline, no 200 PAID in 0285/0286 on CI). An order left behind is
# paid later (409 late or closed: refund), as a slow provider's would be.
ft_db_payer() {
        local front=$1 seen=$FT_WORK/payer.seen order out
        : >"$seen"
        while [[ ! -f $FT_WORK/loop.stop ]]; do
                while read -r order; do
                        out=$(ft_pay "${FT_ADDR[$front]}" "$order" "txn-$order" 0)
                        echo "${out%% *} $order ${out#* }" >>"$FT_WORK/paid.txt"
                        # 503 = nothing recorded (no order yet, DB away): the provider
                        # retries, as a real one does; any other answer is final.
                        [[ ${out%% *} == 503 || ${out%% *} == 000 ]] || echo "$order" >>"$seen"
                done < <(awk 'FILENAME == ARGV[1] {s[$1] = 1; next}
                        $1 ~ /[13579]$/ && $2 ~ /^[0-9]+$/ && !($2 in s) {s[$2] = 1; print $2}' \
                        "$seen" "$FT_WORK/accepted.tsv" | tail -n 8 | tac)
                sleep 0.3
        done
}

# ft_db_observer FRONT V: asks orders/me for up to 8 accepted users a round (the newest
# first) until each answers CREATED; every CREATED answer goes to seen.txt as
# "USER ORDER SECOND" (the orderId of the answer, the case's clock).
ft_db_observer() {
        local front=$1 v=$2 user order body st id
        while [[ ! -f $FT_WORK/loop.stop ]]; do
                while read -r user order; do
                        body=$(curl -s -m 3 -H "X-User-Id: $user" \
                                "http://${FT_ADDR[$front]}/api/v1/vouchers/$v/orders/me")
                        st=$(sed -n 's/.*"state":"\([A-Z]*\)".*/\1/p' <<<"$body")
                        id=$(sed -n 's/.*"orderId":"\([0-9]*\)".*/\1/p' <<<"$body")
                        [[ $st == CREATED && -n $id ]] &&
                                echo "$user $id $(($(date +%s) - FT_T0))" >>"$FT_WORK/seen.txt"
                done < <(awk 'FILENAME == ARGV[1] {s[$1] = 1; next} !($1 in s) {print $1, $2}' \
                        "$FT_WORK/seen.txt" "$FT_WORK/accepted.tsv" | tail -n 8)
                sleep 0.3
        done
}

ft_db_services() {
        FT_PAY_SECRET=$FT_NAME-secret-$RANDOM-$RANDOM
        ft_pay_keys "$FT_WORK/pay.keys" "$FT_PAY_SECRET"
        ft_front f1 SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
        V=$(ft_voucher 400 2)
        ft_consumer c1 SECKILL_PAY_TIMEOUT_S=10 SECKILL_CLOSE_INTERVAL_MS=200 "$@"
}

# ft_db_wait_acknowledged S: waits (up to S s, on the clock) until a client has seen an
# orders/me CREATED and a payment 200 PAID, so the "before the kill" checks have something
# to check on a loaded machine (a fixed sleep let a kill at load 25 come first).
ft_db_wait_acknowledged() {
        local end=$((SECONDS + $1))
        while ((SECONDS < end)); do
                [[ -s $FT_WORK/seen.txt ]] && grep -q '^200 .*"orderStatus":"PAID"' "$FT_WORK/paid.txt" && return 0
                sleep 0.3
        done
        return 1
}

# (answers still in flight may land in the files just after; they are checked with the rest)
ft_db_mark_before() {
        cp "$FT_WORK/seen.txt" "$FT_WORK/seen.before"
        awk '$1 == 200 && /"orderStatus":"PAID"/' "$FT_WORK/paid.txt" >"$FT_WORK/paid.before"
        ft_log "acknowledged before the kill: $(wc -l <"$FT_WORK/seen.before") orders/me CREATED, $(wc -l <"$FT_WORK/paid.before") payments 200 PAID"
}

ft_db_sale() {
        local front=$1 v=$2 first=$3
        : >"$FT_WORK/paid.txt"
        : >"$FT_WORK/seen.txt"
        ft_buy_loop "$front" "$v" "$first" 4 10 0.2
        ft_db_payer "$front" &
        FT_DB_PAYER=$!
        ft_db_observer "$front" "$v" &
        FT_DB_OBSERVER=$!
}
ft_db_sale_stop() {
        ft_buy_loop_stop
        wait "$FT_DB_PAYER" "$FT_DB_OBSERVER"
}

# ft_db_node_rows PORT: "COUNT(*) SUM(status)" of the case's orders read on 127.0.0.1:PORT
# (wsrep_sync_wait = 1 on a Galera node: after everything the cluster committed).
ft_db_node_rows() {
        mysql --no-defaults -uroot -h127.0.0.1 -P"$1" --protocol=TCP --connect-timeout=3 -N -B \
                "${FT_MYSQL_INIT[@]}" "$FT_DB" -e "SELECT COUNT(*), COALESCE(SUM(status), 0) FROM tb_voucher_order" \
                2>&1 | tr '\t' ' '
}

# ft_db_promised FRONT V: the end of a database fault case (the sale stopped, the fault over).
ft_db_promised() {
        local front=$1 v=$2 paid closed n ok
        ft_mysql_pick
        # Worker-id leases across the fault (DESIGN.md 2, 16): no id minted twice.
        ft_eq "$(awk '{print $2}' "$FT_WORK/accepted.tsv" | sort | uniq -d | wc -l)" 0 "no orderId answered twice"
        ft_eq "$(awk '{print $3}' "$FT_WORK/accepted.tsv" | sort | uniq -d | wc -l)" 0 "no traceId answered twice"
        ft_settle 120 || ft_fail "purchases not decided after the fault"
        # The closer closes the unpaid even users' orders past their deadline.
        ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $v AND status = 1 AND user_id % 2 = 0" \
                0 300 0.2 || ft_fail "unpaid orders left 60 s after their deadline"
        ft_log "payments: $(awk '{print $1}' "$FT_WORK/paid.txt" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
        awk '$1 == 200 && /"orderStatus":"PAID"/ {print $2}' "$FT_WORK/paid.txt" | sort -u >"$FT_WORK/paid200.txt"
        paid=$(wc -l <"$FT_WORK/paid200.txt")
        ((paid > 0)) && ft_ok "$paid payment(s) answered 200 PAID" || ft_fail "no payment answered 200 PAID"
        if ((paid > 0)); then
                ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE status = 2 AND id IN ($(paste -sd, "$FT_WORK/paid200.txt"))")" \
                        "$paid" "every payment answered 200 PAID is PAID in the DB"
        fi
        closed=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $v AND status = 4")
        ((closed > 0)) && ft_ok "$closed unpaid order(s) closed" || ft_fail "no order closed"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_payment p JOIN tb_voucher_order o ON o.id = p.order_id
                WHERE p.result = 1 AND o.status <> 2")" 0 "no applied payment on an order that is not PAID"
        # Every orders/me CREATED a client saw names an order row of that user (any status
        # since: PAID, or CLOSED by the closer).
        sort -u -k1,2 "$FT_WORK/seen.txt" | awk '{print $1, $2}' | sort -u >"$FT_WORK/seen.uniq"
        n=$(wc -l <"$FT_WORK/seen.uniq")
        ((n > 0)) && ft_ok "$n orders/me CREATED answer(s) seen" || ft_fail "no orders/me CREATED answer seen"
        if ((n > 0)); then
                ok=$(awk -v v="$v" '{printf "SELECT COUNT(*) FROM tb_voucher_order WHERE id = %s AND user_id = %s AND voucher_id = %s;\n", $2, $1, v}' \
                        "$FT_WORK/seen.uniq" | ft_mysql -N -B "$FT_DB" | awk '{s += $1} END {print s + 0}')
                ft_eq "$ok" "$n" "every orders/me CREATED answer a client saw is an order row in the DB"
        fi
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM (SELECT trace_id FROM tb_voucher_order GROUP BY trace_id HAVING COUNT(*) > 1) d")" \
                0 "no purchase has two order rows"
        ft_reconcile 90 || ft_fail "reconciler: last exit $FT_RECON_RC"
        ft_check "$v"
}

ft_db_log_503() {
        ft_log "503 answers by body: $(awk '$2 == 503 {$1 = ""; $2 = ""; print}' "$FT_WORK/results.txt" |
                sed 's/"traceId":"[0-9]*"//; s/"orderId":"[0-9]*"//' | sort | uniq -c | sort -rn | head -n 3 | tr '\n' ' ')"
}

ft_db_survived_before() {
        local v=$1 n
        n=$(wc -l <"$FT_WORK/seen.before")
        ((n > 0)) && ft_ok "$n orders/me CREATED answer(s) before the kill" || ft_fail "no orders/me CREATED answer before the kill"
        if ((n > 0)); then
                ft_eq "$(awk -v v="$v" '{printf "SELECT COUNT(*) FROM tb_voucher_order WHERE id = %s AND user_id = %s AND voucher_id = %s;\n", $2, $1, v}' \
                        "$FT_WORK/seen.before" | ft_mysql -N -B "$FT_DB" | awk '{s += $1} END {print s + 0}')" "$n" \
                        "every orders/me CREATED answered before the kill survived it"
        fi
        n=$(wc -l <"$FT_WORK/paid.before")
        ((n > 0)) && ft_ok "$n payment(s) answered 200 PAID before the kill" || ft_fail "no payment answered 200 PAID before the kill"
        if ((n > 0)); then
                ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE status = 2 AND id IN ($(awk '{print $2}' "$FT_WORK/paid.before" | paste -sd, -))")" \
                        "$n" "every payment answered 200 PAID before the kill survived it"
        fi
}

declare -A FT_SQLPROXY_URL=()

ft_sqlproxy() {
        local name=$1 port i
        port=$(ft_free_port)
        python3 "$FT_SRC/tests/support/sk_sqlproxy.py" --listen "127.0.0.1:$port" \
                --upstream "$FT_MYSQL_HOST:$FT_MYSQL_PORT" --control "$FT_WORK/$name.ctl" \
                >>"$FT_WORK/$name.log" 2>&1 &
        FT_PID[$name]=$!
        for ((i = 0; i < 100; i++)); do
                ft_port_open 127.0.0.1 "$port" && [[ -S $FT_WORK/$name.ctl ]] && break
                ft_alive "$name" || ft_die "sqlproxy $name exited: $(tail -n 5 "$FT_WORK/$name.log")"
                sleep 0.1
        done
        FT_SQLPROXY_URL[$name]="mysql://root@127.0.0.1:$port/$FT_DB"
        ft_log "started sqlproxy $name (pid ${FT_PID[$name]}) on 127.0.0.1:$port -> $FT_MYSQL_HOST:$FT_MYSQL_PORT"
}
ft_sqlproxy_ctl() {
        python3 "$FT_SRC/tests/support/sk_sqlproxy.py" --control "$FT_WORK/$1.ctl" --send "$2"
}
ft_sqlproxy_fired() {
        local name=$1 want=$2 timeout_s=$3 t0=$SECONDS st
        while :; do
                st=$(ft_sqlproxy_ctl "$name" status)
                [[ ${st#fired=} =~ ^([0-9]+) ]] && ((BASH_REMATCH[1] >= want)) && return 0
                ((SECONDS - t0 >= timeout_s)) && { ft_log "sqlproxy $name: $st"; return 1; }
                sleep 0.1
        done
}

ft_pay_logged() {
        local out
        out=$(ft_pay "${FT_ADDR[$1]}" "$2" "$3" "$4" "${5:-CNY}")
        echo "${out%% *} $2 $3 ${out#* }" >>"$FT_WORK/payments.txt"
        echo "$out"
}

ft_check_pay_told() {
        local code order txn body bad=0 n=0 paid
        [[ -s $FT_WORK/payments.txt ]] || return 0
        while read -r code order txn body; do
                n=$((n + 1))
                paid=$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order o JOIN tb_payment p ON p.order_id = o.id
                        AND p.provider_txn_id = '$txn' AND p.result = 1 WHERE o.id = $order AND o.status = 2")
                case $code in
                200) [[ $paid == 1 ]] || { bad=$((bad + 1)); ft_log "order $order txn $txn told 200 PAID: not PAID by it in the DB"; } ;;
                409 | 422) [[ $paid == 0 ]] || { bad=$((bad + 1)); ft_log "order $order txn $txn told $code ($body): PAID by it in the DB"; } ;;
                esac
        done <"$FT_WORK/payments.txt"
        ft_eq "$bad" 0 "every payment answer of $n is true to the DB (200 = PAID by its txn, 409/422 = not)"
        ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_payment p JOIN tb_voucher_order o ON o.id = p.order_id
                WHERE p.result = 1 AND o.status <> 2")" 0 "no applied payment on an order that is not PAID"
}
