#!/usr/bin/env bash
# 0612_queue_cluster_slots.sh: the waiting room on the stack's Redis Cluster with the room's
# slot on another master than every bucket's (DESIGN.md 4 `{q:ID}` and `{v:ID:b}`, 4b, 10,
# 18). Every room script runs on the room's keys alone and every bucket script on one
# bucket's keys, so no EVALSHA can meet CROSSSLOT; this case shows it end to end. A queued
# voucher, stock 2 in 2 buckets (one unit each), overbook 100% (window = units left), is
# created until its {q:ID} slot and both {v:ID:b} slots are served by other masters than
# the room's (CLUSTER KEYSLOT, the owner by CLUSTER SLOTS and CLUSTER NODES, each master
# answering MOVED for the other's keys). Users are picked by home bucket (CRC-16 of the id
# mod 2): two of home 0 join the pre-queue through two fronts, then after begin one of
# home 1 (position 3) and two of home 0 (4, 5). MONITOR on the masters records where each
# command ran. Asserted:
#   - joins before begin: prequeue, no position, a repeat join changes nothing; the
#     pre-queue zset and `begun` on the room's master; the pre-queue drawn at begin
#     (positions 1, 2 in some order), late joiners 3..5; positions 1, 2 admitted, 3 waits;
#   - position 1's first purchase goes through a front whose failpoint holds it past its
#     deadline after the used bit: 503, and the bit is cleared again on the room's master
#     (set once, cleared once, no DECRBY of the voucher on any bucket's master);
#   - the same admission then buys (202, its trace in its home bucket 0 on that bucket's
#     master); used again (other front): 403 10014; MONITOR times (one host's clock): the
#     used bit and the uselog entry on the room's master before the DECRBY on bucket 0's;
#     no room key ran on a bucket's master, no bucket key on the room's;
#   - position 2 (home 0, empty) buys through front g by overflow into bucket 1 (202, its
#     trace on bucket 1's master; g now remembers bucket 0 empty); 3, 4, 5 are told
#     sold_out (unitsHeld 2), 3 is never admitted; a purchase without admission: 10014;
#   - position 1 cancels: the released unit (bucket 0) admits position 3 (window 1: 4
#     waits); position 3 (home 1, empty) buys it through g by overflow into bucket 0, past
#     g's sold-out cache (a valid admission bypasses it, in the probe too: it answered
#     10005 before); 4 and 5 are told sold_out again; `seckill-admin voucher queue` reads
#     the room through the Cluster; two active orders, one cancelled.
# It reads the shared Cluster and runs MONITOR on its masters: label cluster, lock
# redis-cluster (never beside a test that kills or migrates a node; run it under sk-stack).
here=$(dirname "$0")
. "$here/../support/ft_stack_cluster.sh"
ft_sc_up || { echo "scripts/stack.sh up cluster failed"; exit 1; }
. "$here/../support/ft.sh"
. "$here/../support/ft_queue.sh"
ft_init queue_cluster_slots
ft_sc_full 120 || ft_die "the stack's Cluster is not ok with two good replicas per master after 120 s"
ftq_keys

# slots_owner SLOT: the port of the master CLUSTER SLOTS names for SLOT (first live node).
slots_owner() {
        local p out
        for p in $(ft_sc_ports); do
                out=$(timeout 5 redis-cli --json -h 127.0.0.1 -p "$p" cluster slots 2>/dev/null) || continue
                [[ $out == '[['* ]] || continue
                python3 -c 'import json, sys
s = int(sys.argv[1])
print(next(r[2][1] for r in json.load(sys.stdin) if r[0] <= s <= r[1]))' "$1" <<<"$out" && return 0
        done
        return 1
}
# owner KEY: "SLOT PORT" when CLUSTER SLOTS and CLUSTER NODES agree on the key's master
owner() {
        local s a b
        s=$(ft_sc_slot "$1") && a=$(slots_owner "$s") && b=$(ft_sc_owner "$s") && [[ $a == "$b" ]] || return 1
        echo "$s $a"
}

# Users by home bucket (DESIGN.md 4: CRC-16/XMODEM of the decimal id, mod 2): two of home
# 0 for the pre-queue, then one of home 1 (position 3) and two of home 0 (4, 5).
NB=2
read -r P1 P2 L3 L4 L5 <<<"$(python3 -c 'import binascii
h = lambda u: binascii.crc_hqx(str(u).encode(), 0) % 2
z = [u for u in range(1, 100) if h(u) == 0][:4]
o = [u for u in range(1, 100) if h(u) == 1][:1]
print(z[0], z[1], o[0], z[2], z[3])')"
[[ -n $L5 ]] || ft_die "no users by home bucket"
ft_log "pre-queue users $P1 $P2 (home 0); after begin $L3 (home 1), $L4, $L5 (home 0)"

# The services first (slow to start on a loaded host): the voucher begins after them.
ft_consumer c
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_SOLDOUT_CACHE_MS=60000
ft_front g SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_SOLDOUT_CACHE_MS=60000
# h holds its first queued purchase 7 s after the used bit: past the 5 s request deadline
ft_front h SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_FAILPOINTS="front.after_queue_use=1*sleep(7000)"
F=${FT_ADDR[f]} G=${FT_ADDR[g]} H=${FT_ADDR[h]}

# 1. A voucher whose room slot is served by another master than both bucket slots.
for ((try = 1; try <= 20; try++)); do
        # begin 25 s ahead: the owners' checks, MONITOR and two pre-queue joins before it
        ftq_voucher 25 --stock 2 --buckets "$NB" --queue --queue-overbook 100 --queue-ttl 120 \
                --title "Cluster sale"
        RK=$FT_PREFIX:{q:$V}
        o=$(owner "$RK:state") || ft_die "no owner of $RK (CLUSTER SLOTS and CLUSTER NODES disagree?)"
        read -r RSLOT ROOM <<<"$o"
        ok=1
        declare -A BSLOT=() BOWN=()
        for ((b = 0; b < NB; b++)); do
                o=$(owner "$(ft_key "$V" stock "$b")") || ft_die "no owner of bucket $b of $V"
                read -r "BSLOT[$b]" "BOWN[$b]" <<<"$o"
                [[ ${BOWN[$b]} == "$ROOM" ]] && ok=0
        done
        ((ok)) && break
done
((ok)) || ft_die "no voucher with its room apart from its buckets in 20 tries"
ft_ok "voucher $V (try $try): room {q:$V} slot $RSLOT on master $ROOM; bucket 0 slot ${BSLOT[0]} on ${BOWN[0]}, bucket 1 slot ${BSLOT[1]} on ${BOWN[1]}"
# each master serves its own keys and redirects the other's (no -c: no redirect followed)
for ((b = 0; b < NB; b++)); do
        bk=$(ft_key "$V" stock "$b")
        r1=$(ft_sc_cli "${BOWN[$b]}" exists "$RK:state")
        r2=$(ft_sc_cli "$ROOM" exists "$bk")
        r3=$(ft_sc_cli "${BOWN[$b]}" get "$bk")
        [[ $r1 == "MOVED $RSLOT 127.0.0.1:$ROOM" && $r2 == "MOVED ${BSLOT[$b]} 127.0.0.1:${BOWN[$b]}" && $r3 == 1 ]] &&
                ft_ok "bucket $b's master ${BOWN[$b]} holds its stock (1) and redirects the room's keys to $ROOM, and back" ||
                ft_fail "ownership of bucket $b: room key on ${BOWN[$b]}: '$r1'; bucket key on $ROOM: '$r2'; stock '$r3'"
done

# MONITOR on the three masters: where each of the case's commands ran (stopped at exit)
MON_PIDS=()
mon_stop() {
        local p
        for p in "${MON_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        MON_PIDS=()
}
FT_CLEANUP_HOOKS+=(mon_stop)
MASTERS=$(printf '%s\n' "$ROOM" "${BOWN[@]}" $(ft_sc_nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 {sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2}') | sort -u)
for p in $MASTERS; do
        timeout 600 redis-cli -h 127.0.0.1 -p "$p" monitor >"$FT_WORK/mon.$p" 2>&1 &
        MON_PIDS+=($!)
done
for p in $MASTERS; do
        for ((i = 0; i < 100; i++)); do [[ -s $FT_WORK/mon.$p ]] && break; sleep 0.1; done
        [[ $(head -n 1 "$FT_WORK/mon.$p") == OK ]] || ft_die "MONITOR on $p: $(head -n 1 "$FT_WORK/mon.$p")"
done

Q=/api/v1/vouchers/$V/queue
S=/api/v1/vouchers/$V/seckill
# req METHOD ADDR PATH USER [X-Admission] -> "CODE BODY" (ftq_req: also in the transcript)
req() { ftq_req "$@"; }
# wait_state USER STATE [ADDR]: poll (up to 90 s) until the member's state is STATE; prints the answer
wait_state() {
        local r i
        for ((i = 0; i < 360; i++)); do
                r=$(req GET "${3:-$F}" "$Q" "$1")
                [[ $r == *"\"state\":\"$2\""* ]] && break
                sleep 0.25
        done
        echo "$r"
}
# room CMD ARG...: one command on the room's master itself (no redirect followed)
room() { ft_sc_cli "$ROOM" "$1" "$RK:$2" "${@:3}"; }

# 2. The pre-queue, then begin.
(($(date +%s) < BEGIN - 2)) || ft_die "begin passed before the pre-queue joins (services slow to start)"
r=$(req POST "$F" "$Q" "$P1")
[[ $r == "200 "*'"state":"prequeue"'* && $r != *'"position"'* ]] || ft_fail "pre-queue join $P1: $r"
r=$(req POST "$G" "$Q" "$P2")
[[ $r == "200 "*'"state":"prequeue"'* && $r != *'"position"'* ]] || ft_fail "pre-queue join $P2: $r"
r=$(req POST "$F" "$Q" "$P2")
[[ $r == "200 "*'"state":"prequeue"'*'"members":2'* && $r != *'"position"'* ]] &&
        ft_ok "two pre-queue members, no position; a repeat join (other front) changes nothing: $r" ||
        ft_fail "repeat join: $r"
ft_eq "$(room zcard pre)" 2 "the pre-queue zset (2 members) lives on the room's master $ROOM"
while (($(date +%s) < BEGIN)); do sleep 0.2; done
p=3
for u in "$L3" "$L4" "$L5"; do
        r=$(req POST "$G" "$Q" "$u")
        [[ $(field position "$r") == "$p" ]] && ft_ok "$u joined after begin: position $p" || ft_fail "late join $u: $r"
        p=$((p + 1))
done
ft_eq "$(room hget state begun)" 1 "begun set in the room's state on $ROOM"

# 3. The draw and the admissions in order (window 2).
declare -A POS=() TOK=() AT=()
for ((i = 0; i < 360; i++)); do
        n=0
        for u in "$P1" "$P2" "$L3" "$L4" "$L5"; do
                r=$(req GET "$F" "$Q" "$u")
                POS[$u]=$(field position "$r")
                [[ $r == *'"state":"admitted"'* ]] && { TOK[$u]=$(field admission "$r"); n=$((n + 1)); }
        done
        ((n >= 2)) && break
        sleep 0.25
done
ft_eq "$(printf '%s\n' "${POS[$P1]}" "${POS[$P2]}" | sort -n | tr '\n' ' ')" "1 2 " \
        "the pre-queue drawn at begin: its members hold positions 1 and 2 (P1 at ${POS[$P1]})"
for u in "$P1" "$P2" "$L3" "$L4" "$L5"; do AT[${POS[$u]:-x}]=$u; done
adm=""
for p in 1 2 3 4 5; do [[ -n ${TOK[${AT[$p]:-x}]:-} ]] && adm+="$p "; done
ft_eq "$adm" "1 2 " "positions 1 and 2 admitted, in order (window 2 = 2 units x 100%)"
u1=${AT[1]:-} u2=${AT[2]:-}
[[ -n $u1 && -n $u2 ]] || ft_die "positions: ${POS[*]}"
ft_eq "$(room hget state upto)" 2 "admittedUpTo 2 on the room's master"

# trace_bucket T: the buckets whose master holds trace T's DEDUCT entry (asked on each
# bucket's own master, no redirect followed)
trace_bucket() {
        local b out=
        for ((b = 0; b < NB; b++)); do
                [[ $(ft_sc_cli "${BOWN[$b]}" hexists "$(ft_key "$V" trace "$b")" "$1") == 1 ]] && out+=$b
        done
        echo "$out"
}

# 4. A 503 after the used bit clears it; then the admission buys once.
r=$(req POST "$H" "$S" "$u1" "${TOK[$u1]}")
[[ $r == "503 "* ]] && ft_ok "position 1 held past its deadline after the used bit (front h's failpoint): $r" ||
        ft_fail "position 1 through front h: $r"
for ((i = 0; i < 120; i++)); do [[ $(room getbit used 1) == 0 ]] && break; sleep 0.25; done
ft_eq "$(room getbit used 1)" 0 "the 503 cleared position 1's used bit on $ROOM"
setc=$(grep -cF "\"SETBIT\" \"$RK:used\" \"1\" \"1\"" "$FT_WORK/mon.$ROOM")
clrc=$(grep -cF "\"SETBIT\" \"$RK:used\" \"1\" \"0\"" "$FT_WORK/mon.$ROOM")
dec=$(for p in "${BOWN[@]}"; do grep -F '"DECRBY"' "$FT_WORK/mon.$p" | grep -F "{v:$V:"; done | wc -l)
[[ $setc == 1 && $clrc == 1 && $dec == 0 ]] && ft_ok "MONITOR on $ROOM: the bit set once and cleared once; no DECRBY of the voucher on a bucket's master" ||
        ft_fail "after the 503: set $setc, clear $clrc on $ROOM, DECRBY $dec on the buckets' masters"
r=$(req POST "$F" "$S" "$u1" "${TOK[$u1]}")
[[ $r == "202 "* ]] && ft_ok "the same admission buys after the 503: $r" || ft_fail "position 1's purchase: $r"
O1=$(field orderId "$r") T1=$(field traceId "$r")
r=$(req POST "$G" "$S" "$u1" "${TOK[$u1]}")
[[ $r == "403 "*10014* ]] && ft_ok "the same admission again (other front): 403 10014" || ft_fail "admission used twice: $r"
ft_eq "$(room getbit used 1)" 1 "position 1's used bit set on the room's master $ROOM"
ft_eq "$(trace_bucket "$T1")" 0 "position 1's deduct in its home bucket 0, on master ${BOWN[0]}"
# MONITOR times (one host's clock): the second set of bit 1 and its uselog entry on the
# room's master, then the DECRBY on bucket 0's master
t_set=$(grep -F "\"SETBIT\" \"$RK:used\" \"1\" \"1\"" "$FT_WORK/mon.$ROOM" | sed -n '2s/ .*//p')
t_log=$(grep -F "\"ZADD\" \"$RK:uselog\"" "$FT_WORK/mon.$ROOM" | awk -v s="$t_set" '$1 >= s {print $1; exit}')
t_dec=$(grep -F '"DECRBY"' "$FT_WORK/mon.${BOWN[0]}" | grep -F "{v:$V:0}:stock" | head -n 1 | cut -d' ' -f1)
if [[ -n $t_set && -n $t_log && -n $t_dec ]] && awk -v s="$t_set" -v l="$t_log" -v d="$t_dec" 'BEGIN {exit !(s <= l && l < d)}'; then
        ft_ok "used bit ($t_set) and uselog ($t_log) written on $ROOM before the deduct's DECRBY ($t_dec) on ${BOWN[0]}"
else
        ft_fail "order of the writes: set '$t_set' uselog '$t_log' on $ROOM, DECRBY '$t_dec' on ${BOWN[0]}"
fi

# 5. The last unit; sold-out told.
r=$(req POST "$G" "$S" "$u2" "${TOK[$u2]}")
[[ $r == "202 "* ]] && ft_ok "position 2 (home 0, empty) buys through g by overflow: $r" || ft_fail "position 2: $r"
ft_eq "$(trace_bucket "$(field traceId "$r")")" 1 "position 2's take in bucket 1, on master ${BOWN[1]}"
for u in "$L3" "$L4" "$L5"; do
        r=$(wait_state "$u" sold_out)
        [[ $r == *'"state":"sold_out"'*'"unitsHeld":2'*'"closed":false'* ]] && ft_ok "member $u (waiting) told sold_out, 2 units held: $r" ||
                ft_fail "member $u after the last unit: $r"
done
grep -q "user=$L3 -> 200 .*\"state\":\"admitted\"" "$FT_WORK/transcript.txt" &&
        ft_fail "position 3 admitted with no unit left" || ft_ok "position 3 never admitted with no unit left"
r=$(req POST "$F" "$S" "$L3")
[[ $r == "403 "*10014* ]] && ft_ok "a waiting member's purchase: 403 10014" || ft_fail "waiting member's purchase: $r"
bad=$(for p in "${BOWN[@]}"; do grep -F "{q:$V}" "$FT_WORK/mon.$p"; done | wc -l)
bad2=$(grep -cF "{v:$V:" "$FT_WORK/mon.$ROOM")
[[ $bad == 0 && $bad2 == 0 ]] && ft_ok "no room command ran on a bucket's master, no bucket command on the room's" ||
        ft_fail "commands on the wrong master: $bad room lines on the buckets' masters, $bad2 bucket lines on $ROOM"
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)" 2 480 0.25 ||
        ft_fail "two orders in the DB"

# 6. A released unit admits the next member, in order; its admission buys past g's cache.
r=$(ft_cancel f "$u1" "$O1")
[[ $r == 200* ]] && ft_ok "position 1 cancels: $r" || ft_fail "cancel: $r"
r=$(wait_state "$L3" admitted "$G")
[[ $r == *'"state":"admitted"'*'"position":3'* ]] && ft_ok "the released unit admits position 3: $r" ||
        ft_fail "position 3 after the release: $r"
r4=$(req GET "$F" "$Q" "$L4")
[[ $r4 != *'"state":"admitted"'* ]] && ft_ok "position 4 not admitted (window 1): $r4" || ft_fail "position 4: $r4"
r=$(req POST "$G" "$S" "$L3" "$(field admission "$r")")
[[ $r == "202 "* ]] && ft_ok "position 3 (home 1, empty) buys the released unit through g by overflow, past g's memory of bucket 0 empty: $r" ||
        ft_fail "position 3's purchase: $r"
ft_eq "$(trace_bucket "$(field traceId "$r")")" 0 "position 3's take in bucket 0, on master ${BOWN[0]}"
for u in "$L4" "$L5"; do
        r=$(wait_state "$u" sold_out)
        [[ $r == *'"state":"sold_out"'* ]] && ft_ok "member $u told sold_out again: $r" || ft_fail "member $u at the end: $r"
done
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)" 2 480 0.25 &&
        ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status = 3" 1 120 0.25 &&
        ft_ok "two active orders, one cancelled" ||
        ft_fail "orders: $(ft_sql "SELECT user_id, status FROM tb_voucher_order WHERE voucher_id = $V" | tr '\n' ' ')"
q=$("$FT_BIN/seckill-admin" voucher queue "$V" 2>&1)
[[ $q == *'"members":5,'*'"admittedUpTo":3,'*'"used":3,'*'"unitsLeft":0,'* ]] &&
        ft_ok "seckill-admin voucher queue through the Cluster: $q" || ft_fail "voucher queue: $q"
ft_alive f && ft_alive g && ft_alive h && ft_alive c && ft_ok "fronts and consumer alive" || ft_fail "a service exited"
mon_stop
cp "$FT_WORK/transcript.txt" "${FT_OUT:-/tmp}/0612_queue_cluster_slots.transcript.txt" 2>/dev/null || true
ft_finish
