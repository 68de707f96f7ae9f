#!/usr/bin/env bash
# 0611_queue_voucher_cache.sh: the room's routes do not cost a DB read or a Redis round per
# request for a made-up voucher id or a voucher without a room (DESIGN.md 15 "Cost of
# hostile input"; DESIGN.md 18). One front, SECKILL_SOLDOUT_CACHE_MS=60000:
#   - 40 GETs of /api/v1/vouchers/M (M made up) and 20 joins of M: every answer 404 10004,
#     one DB read in all (seckill_queue_voucher_db_reads_total), the rest answered by the
#     unknown-voucher cache the purchase route uses; a purchase of M after that is 404
#     from the same cache (before: one DB read per request);
#   - 40 GETs of /api/v1/vouchers/U (U on sale, no room): every answer 200, at most one DB
#     read and one stock reading per second of the burst (before: one of each per GET).
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_voucher_cache
ftq_keys
ft_consumer c
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_SOLDOUT_CACHE_MS=60000
F=${FT_ADDR[f]}
U=$(ft_voucher 10)
M=$((U + 987654321))
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
reads() { metric seckill_queue_voucher_db_reads_total; }

d0=$(reads) h0=$(metric seckill_front_unknown_voucher_cache_hits_total)
bad=""
for ((i = 0; i < 40; i++)); do
        c=$(curl -s -m 10 -o "$FT_WORK/m.json" -w '%{http_code}' "http://$F/api/v1/vouchers/$M")
        [[ $c == 404 ]] && grep -q 10004 "$FT_WORK/m.json" || bad+=" GET:$c"
done
for ((i = 0; i < 20; i++)); do
        c=$(curl -s -m 10 -o "$FT_WORK/m.json" -w '%{http_code}' -X POST -H "X-User-Id: $((i + 1))" \
                "http://$F/api/v1/vouchers/$M/queue")
        [[ $c == 404 ]] && grep -q 10004 "$FT_WORK/m.json" || bad+=" join:$c"
done
ft_eq "$bad" "" "60 requests for a made-up voucher: all 404 10004"
ft_eq "$(($(reads) - d0))" 1 "one DB read for the made-up id in all"
ft_eq "$(($(metric seckill_front_unknown_voucher_cache_hits_total) - h0))" 59 \
        "the other 59 answered by the unknown-voucher cache"
c=$(curl -s -m 10 -o "$FT_WORK/m.json" -w '%{http_code}' -X POST -H "X-User-Id: 1" "http://$F/api/v1/vouchers/$M/seckill")
ft_eq "$c $(($(metric seckill_front_unknown_voucher_cache_hits_total) - h0))" "404 60" \
        "a purchase of the made-up id: 404 from the same cache"

d0=$(reads) s0=$(metric seckill_queue_voucher_stock_reads_total)
t0=$(date +%s%3N)
bad=""
for ((i = 0; i < 40; i++)); do
        c=$(curl -s -m 10 -o "$FT_WORK/u.json" -w '%{http_code}' "http://$F/api/v1/vouchers/$U")
        [[ $c == 200 ]] && grep -q '"mode":"off"' "$FT_WORK/u.json" || bad+=" $c"
done
secs=$((($(date +%s%3N) - t0 + 999) / 1000))
ft_eq "$bad" "" "40 GETs of a voucher without a room: all 200"
dr=$(($(reads) - d0)) sr=$(($(metric seckill_queue_voucher_stock_reads_total) - s0))
((dr >= 1 && dr <= secs + 1)) && ft_ok "$dr DB reads for 40 GETs in $secs s" ||
        ft_fail "$dr DB reads for 40 GETs in $secs s (want 1..$((secs + 1)))"
((sr >= 1 && sr <= secs + 1)) && ft_ok "$sr stock readings for 40 GETs in $secs s" ||
        ft_fail "$sr stock readings for 40 GETs in $secs s (want 1..$((secs + 1)))"
ft_log "last answer: $(cat "$FT_WORK/u.json")"
ft_alive f && ft_ok "the front is alive" || ft_fail "the front died"
ft_finish
