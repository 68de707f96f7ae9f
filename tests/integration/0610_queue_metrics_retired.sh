#!/usr/bin/env bash
# 0610_queue_metrics_retired.sh: a room's own metric series are retired after its end
# (DESIGN.md 18 "Metrics": "labelled by voucher for at most 16 rooms on sale ..., series
# retired after the room's end"). One front, a queued voucher on sale for 10 s:
#   - a member joins: seckill_queue_members{voucher="V"} and its five sibling series are
#     in /metrics;
#   - a minute after the end (when the front's table no longer lists the room) every
#     seckill_queue_* series labelled voucher="V" is gone and queue_room_retired is logged (before, they
#     stayed for the life of the process, and the 16 labels ran out);
#   - a later GET /api/v1/vouchers/V does not bring them back.
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_metrics_retired
ftq_keys
now=$(date +%s)
BEGIN=$((now + 3)) END=$((now + 13))
out=$("$FT_BIN/seckill-admin" voucher create --stock 5 --queue --queue-overbook 100 --queue-ttl 30 \
        --title "Short" --begin "$BEGIN" --end "$END" --preheat 2>>"$FT_WORK/admin.log") ||
        ft_die "voucher create: $(tail -n 3 "$FT_WORK/admin.log")"
V=$(sed -n 's/.*"voucherId":"\([1-9][0-9]*\)".*/\1/p' <<<"$out")
[[ -n $V ]] || ft_die "no voucher id: $out"
ft_consumer c
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
F=${FT_ADDR[f]}
# the room's own series (seckill_queue_*; the degrade state has its own per-voucher series)
series() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | grep -c "^seckill_queue_[a-z_]*{voucher=\"$V\"}"; }

while (($(date +%s) < BEGIN)); do sleep 0.2; done
r=$(curl -s -m 20 -X POST -H "X-User-Id: 1" "http://$F/api/v1/vouchers/$V/queue")
[[ $r == *'"position":1'* ]] || ft_fail "join: $r"
for ((i = 0; i < 80; i++)); do (($(series) >= 6)) && break; sleep 0.25; done
ft_eq "$(series)" 6 "the room's six series are labelled voucher=\"$V\""
ft_log "$(curl -s -m 5 "http://${FT_OPS[f]}/metrics" | grep "^seckill_queue_[a-z_]*{voucher=\"$V\"}" | tr '\n' ' ')"

# The table drops the room a minute after its end (its own query), then the series go.
for ((i = 0; i < 600; i++)); do
        (($(date +%s) > END + 60)) && (($(series) == 0)) && break
        sleep 0.25
done
ft_eq "$(series)" 0 "no series labelled voucher=\"$V\" $(($(date +%s) - END)) s after the end"
ft_eq "$(grep -c "event=queue_room_retired voucher=$V" "$FT_WORK/f.log")" 1 "queue_room_retired logged once"
curl -s -m 10 -o /dev/null "http://$F/api/v1/vouchers/$V"
curl -s -m 10 -o /dev/null -H "X-User-Id: 1" "http://$F/api/v1/vouchers/$V/queue"
sleep 2   # more than one table read (1 s): a re-added room would have its series again
ft_eq "$(series)" 0 "a later request does not bring the series back"
ft_alive f && ft_ok "the front is alive" || ft_fail "the front died"
ft_finish
