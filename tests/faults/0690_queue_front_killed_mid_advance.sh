#!/usr/bin/env bash
# 0690_queue_front_killed_mid_advance.sh: a front SIGKILLed again and again while it
# advances the waiting room and sells to admitted members (DESIGN.md 18, invariant 8).
# Stock 10, overbook 100% (window 10), 40 members join after begin. Fronts f and g both
# advance the line (each one's tick runs queue_advance.lua); a crowd polls and buys
# through both, and the first buyers cancel (each cancel releases a unit, so the line
# advances in bursts). Front f is SIGKILLed 4 times during this, mid-tick, mid-purchase
# (the used bit set, deduct.lua maybe not run), and started again each time.
# Afterwards (quiesced): admissions in queue order (every admitted, used or expired
# position is one of 1..admittedUpTo, each once; every waiting one is behind it),
# live <= window of the room's reading, a token bought at most once (no second 2xx for a
# token), no order without an admission (every order's buyer holds a position <=
# admittedUpTo), plus ft_check (no oversell, one order per user, DB = Redis).
# fault: front SIGKILLed 4 times mid-advance and mid-purchase of a queued voucher (no failpoint in the tick: kills at random points of a burst)
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_front_killed_mid_advance
ftq_crowd_start
crowd &
CROWD=$!
for k in 1 2 3 4; do
        sleep 2.$((RANDOM % 10))
        ft_kill f
        ft_log "front f SIGKILLed ($k)"
        echo "127.0.0.1:1" >"$FT_WORK/f.addr"
        ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
        echo "${FT_ADDR[f]}" >"$FT_WORK/f.addr"
done
ft_fault_over
wait "$CROWD"
ft_settle 60 || ft_fail "purchases not decided"

ftq_check_room
ft_check "$V"
ft_finish
