# tests/support/ft_queue.sh: the waiting room's shared fault-case steps (DESIGN.md 18,
# invariant 8), sourced after ft.sh by the cases that drive a crowd through a queued voucher
# while a fault hits (0690 front killed mid-advance, 0691 Sentinel failover).
#
#   ftq_keys, ftq_voucher, field: the keys file, a queued voucher, a JSON member.
#   ftq_req           one exchange as a member, logged in $FT_WORK/transcript.txt.
#   ftq_three_admitted: a front and members 1..3 admitted, member 1 bought (0604, 0607).
#   ftq_crowd_start   keys file, a queued voucher (stock 10, overbook 100%, ttl 300 s) that
#                     begins 3 s from now, consumer c, fronts f and g (both advance the
#                     line; f's address in $FT_WORK/f.addr, so a case that restarts f
#                     writes the new one there), 40 members joined after begin through g
#                     (positions 1..40); defines crowd(), to run in the background: it
#                     polls every member through f (odd users) or g, buys when admitted,
#                     cancels the first 6 orders, and logs "USER TOKEN CODE BODY" per
#                     purchase in $FT_WORK/buys.txt. Sets KEYS, N, BEGIN, V, G, Q and S.
#   ftq_check_room    once the sale is settled: live <= window, the admitted, used or
#                     expired positions are exactly 1..admittedUpTo, every waiting member is
#                     behind it, every member accounted for, no token bought twice, every
#                     order's buyer held an admission. ft_check stays the case's own call.

# ftq_req METHOD ADDR PATH USER [X-Admission]: one exchange as member USER (X-User-Id),
# prints "CODE BODY" (the body on one line) and appends "EPOCH_MS METHOD PATH user=USER ->
# CODE BODY" to $FT_WORK/transcript.txt (30 s bound per exchange, for a loaded machine).
ftq_req() {
        local hdr=() o
        [[ -n ${5:-} ]] && hdr=(-H "X-Admission: $5")
        o=$(curl -s -m 30 -w '\n%{http_code}' -X "$1" -H "X-User-Id: $4" "${hdr[@]}" "http://$2$3")
        printf '%s %s\n' "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
        printf '%s %s %s user=%s -> %s %s\n' "$(date +%s%3N)" "$1" "$3" "$4" "${o##*$'\n'}" \
                "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/transcript.txt"
}

# ftq_keys: the room's keys file (one test key, mode 0600) in $FT_WORK; sets KEYS.
ftq_keys() {
        KEYS=$FT_WORK/queue.keys
        printf '# test keys\nk1 queue-secret-0123456789abcdef\n' >"$KEYS"
        chmod 600 "$KEYS"
}

# ftq_voucher IN_S CREATE_ARG...: `seckill-admin voucher create CREATE_ARG... --begin
# now+IN_S --end now+3600 --preheat` (seconds); sets now, BEGIN (epoch s) and V; dies on
# failure.
ftq_voucher() {
        local in_s=$1 out
        shift
        now=$(date +%s)
        BEGIN=$((now + in_s))
        out=$("$FT_BIN/seckill-admin" voucher create "$@" --begin "$BEGIN" --end "$((now + 3600))" \
                --preheat 2>>"$FT_WORK/admin.log") ||
                ft_die "voucher create: $(tail -n 3 "$FT_WORK/admin.log")"
        V=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out")
        [[ -n $V ]] || ft_die "no voucher id: $out"
}

# field NAME JSON: the value of member NAME of a one-line JSON answer (quotes dropped).
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" <<<"$2"; }

# ftq_three_admitted: consumer c and front f (F its address) on a voucher made by
# ftq_voucher with stock 3 and overbook 100% (0604, 0607): waits for begin, joins members
# 1..4 (positions 1..4), waits until 1..3 are admitted (TOK[u] their tokens; 4 waits), and
# member 1 buys through Redis (202, its order in the DB). Defines req METHOD PATH USER
# [X-Admission] -> "CODE RETRY_AFTER BODY" (RETRY_AFTER "-" if absent; each exchange also
# in $FT_WORK/transcript.txt); sets Q and S.
ftq_three_admitted() {
        ft_consumer c
        ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
        F=${FT_ADDR[f]}
        # req METHOD PATH USER [X-Admission] -> "CODE RETRY_AFTER BODY" (RETRY_AFTER "-" if absent)
        req() {
                local hdr=() o code ra
                [[ -n ${4:-} ]] && hdr=(-H "X-Admission: $4")
                o=$(curl -s -m 30 -D "$FT_WORK/h.txt" -w '\n%{http_code}' -X "$1" -H "X-User-Id: $3" "${hdr[@]}" "http://$F$2")
                code=${o##*$'\n'}
                ra=$(tr -d '\r' <"$FT_WORK/h.txt" | awk 'tolower($1) == "retry-after:" {print $2}')
                printf '%s %s %s\n' "$code" "${ra:--}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
                printf '%s %s %s user=%s -> %s %s %s\n' "$(date +%s%3N)" "$1" "$2" "$3" "$code" "${ra:--}" \
                        "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/transcript.txt"
        }
        Q=/api/v1/vouchers/$V/queue
        S=/api/v1/vouchers/$V/seckill

        while (($(date +%s) < BEGIN)); do sleep 0.2; done
        for u in 1 2 3 4; do
                r=$(req POST "$Q" "$u")
                [[ $(field position "$r") == "$u" ]] || ft_fail "join $u after begin: $r"
        done
        declare -gA TOK
        for ((i = 0; i < 120; i++)); do
                n=0
                for u in 1 2 3 4; do
                        r=$(req GET "$Q" "$u")
                        [[ $r == *'"state":"admitted"'* ]] && { TOK[$u]=$(field admission "$r"); n=$((n + 1)); }
                done
                ((n >= 3)) && break
                sleep 0.25
        done
        ft_eq "${TOK[1]:+1}${TOK[2]:+2}${TOK[3]:+3}${TOK[4]:+4}" "123" "positions 1..3 admitted, 4 waits"
        r=$(req POST "$S" 1 "${TOK[1]}")
        [[ $r == "202 "* ]] && ft_ok "member 1 buys through Redis: $r" || ft_fail "member 1: $r"
        ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND user_id = 1" 1 120 0.25 ||
                ft_fail "member 1's order in the DB"
}

ftq_crowd_start() {
        ftq_keys
        N=40
        ftq_voucher 3 --stock 10 --queue --queue-overbook 100 --queue-ttl 300 --title "Kill"
        ft_consumer c
        ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
        ft_front g SECKILL_QUEUE_KEYS_FILE="$KEYS"
        echo "${FT_ADDR[f]}" >"$FT_WORK/f.addr"
        G=${FT_ADDR[g]}
        Q=/api/v1/vouchers/$V/queue
        S=/api/v1/vouchers/$V/seckill

        while (($(date +%s) < BEGIN)); do sleep 0.2; done
        for ((u = 1; u <= N; u++)); do
                r=$(curl -s -m 20 -X POST -H "X-User-Id: $u" "http://$G$Q")
                [[ $(field position "$r") == "$u" ]] || ft_fail "join $u: $r"
        done
        ft_ok "$N members joined after begin"

        # The crowd: each round polls every member not yet done through f (its address from
        # f.addr; f may be dead) or g, buys when admitted, and the first 6 buyers cancel.
        # Log: "USER TOKEN CODE BODY" per purchase in buys.txt.
        crowd() {
                local end=$(($(date +%s) + 40)) u a r tok code cancels=0 o
                declare -A done_
                while (($(date +%s) < end)); do
                        for ((u = 1; u <= N; u++)); do
                                [[ -n ${done_[$u]:-} ]] && continue
                                a=$G
                                ((u % 2)) && a=$(cat "$FT_WORK/f.addr")
                                r=$(curl -s -m 10 -H "X-User-Id: $u" "http://$a$Q") || continue
                                [[ $r == *'"state":"admitted"'* ]] || continue
                                tok=$(field admission "$r")
                                o=$(curl -s -m 20 -w '\n%{http_code}' -X POST -H "X-User-Id: $u" -H "X-Admission: $tok" "http://$a$S")
                                code=${o##*$'\n'}
                                printf '%s %s %s %s\n' "$u" "$tok" "$code" "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/buys.txt"
                                case $code in
                                202) done_[$u]=1
                                        if ((cancels < 6)); then
                                                local oid
                                                oid=$(field orderId "${o%$'\n'*}")
                                                for ((k = 0; k < 80; k++)); do
                                                        o=$(curl -s -m 10 -w ' %{http_code}' -X POST -H "X-User-Id: $u" \
                                                                "http://$G/api/v1/orders/$oid/cancel")
                                                        [[ $o == *' 200' ]] && { cancels=$((cancels + 1)); break; }
                                                        sleep 0.25
                                                done
                                                printf 'cancel %s %s\n' "$u" "$o" >>"$FT_WORK/buys.txt"
                                        fi ;;
                                403 | 409) done_[$u]=1 ;;
                                esac
                        done
                        sleep 0.2
                done
        }
}

ftq_check_room() {
        local q upto live win bad adm nsold nwait u r p st twice
        local -A POSOF
        # The room's state once quiet.
        q=$("$FT_BIN/seckill-admin" voucher queue "$V" 2>>"$FT_WORK/admin.log")
        ft_log "voucher queue: $q"
        upto=$(field admittedUpTo "$q") live=$(field live "$q") win=$(field window "$q")
        [[ $upto =~ ^[0-9]+$ && $live =~ ^-?[0-9]+$ && $win =~ ^[0-9]+$ ]] || ft_die "voucher queue: $q"
        ((live <= win)) && ft_ok "live $live <= window $win" || ft_fail "live $live > window $win"
        bad="" adm="" nsold=0 nwait=0
        for ((u = 1; u <= N; u++)); do
                r=$(curl -s -m 10 -H "X-User-Id: $u" "http://$G$Q")
                p=$(field position "$r") st=$(field state "$r")
                POSOF[$u]=$p
                case $st in
                admitted | used | expired) adm+="$p"$'\n' ;;
                waiting) nwait=$((nwait + 1)); ((p > upto)) || bad+=" $u:$st@$p" ;;
                sold_out) nsold=$((nsold + 1)) ;;   # a sold_out view carries no position
                *) bad+=" $u:?$r" ;;
                esac
        done
        ft_eq "$(sort -n <<<"${adm%$'\n'}" | tr '\n' ' ')" "$(seq -s ' ' 1 "$upto") " \
                "admissions in queue order: the admitted, used or expired positions are exactly 1..$upto"
        ft_eq "$bad" "" "every waiting member is behind admittedUpTo $upto"
        ft_eq "$((upto + nwait + nsold))" "$N" "every member accounted for ($upto admitted, $nwait waiting, $nsold told sold out)"
        twice=$(awk '$3 ~ /^2/ {n[$2]++} END {for (t in n) if (n[t] > 1) c++; print c + 0}' "$FT_WORK/buys.txt")
        ft_eq "$twice" 0 "no token bought twice"
        bad=""
        for u in $(ft_sql "SELECT user_id FROM tb_voucher_order WHERE voucher_id = $V"); do
                p=${POSOF[$u]:-}
                [[ -n $p ]] && ((p <= upto)) || bad+=" $u"
        done
        ft_eq "$bad" "" "every order's buyer held an admission (position <= admittedUpTo)"
        ft_log "purchases: $(awk '$1 != "cancel" {c[$3]++} END {for (k in c) printf "%s=%d ", k, c[k]}' "$FT_WORK/buys.txt")" \
                "cancels: $(grep -c '^cancel' "$FT_WORK/buys.txt")"
}
