#!/usr/bin/env bash
# 0215_buckets_e2e.sh: a bucketed voucher end to end (DESIGN.md 4, 8 rebuild row, 14)
# with the real front, consumer, Redis, Kafka and MariaDB:
#   - `voucher create --buckets 4` then preheat: 16 keys {v:V:b}:meta|stock|users|trace,
#     each with an expiry; users and trace hold the placeholder `_`; every meta says
#     buckets=4; each bucket's stock = its tb_seckill_stock row;
#   - one user with 20 concurrent purchases gets exactly one order;
#   - many distinct buyers then buy the whole stock: orders = stock (zero undersell) and
#     every bucket row is drained to 0;
#   - seckill-admin verify passes; Redis = DB per bucket (ft_check_redis);
#   - `voucher preheat --rebuild-from-db` leaves Redis = DB per bucket, the `_` and the
#     expiries in place.
. "$(dirname "$0")/../support/ft.sh"
ft_init buckets_e2e

N=4
STOCK=40
ft_front f
ft_consumer c
V=$(ft_voucher "$STOCK" "$N")

# keys V: 16 keys with an expiry, `_` in users and trace, meta buckets=N.
keys_ok() {
        local b kind bad=0 pttl
        for ((b = 0; b < N; b++)); do
                for kind in meta stock users trace; do
                        pttl=$(ft_rcli pttl "$(ft_key "$V" "$kind" "$b")")
                        ((pttl > 0)) || { bad=$((bad + 1)); ft_log "$1: bucket $b $kind pttl $pttl"; }
                done
                [[ $(ft_rcli hexists "$(ft_key "$V" users "$b")" _) == 1 ]] || { bad=$((bad + 1)); ft_log "$1: bucket $b users lacks _"; }
                [[ $(ft_rcli hexists "$(ft_key "$V" trace "$b")" _) == 1 ]] || { bad=$((bad + 1)); ft_log "$1: bucket $b trace lacks _"; }
                [[ $(ft_rcli hget "$(ft_key "$V" meta "$b")" buckets) == "$N" ]] || { bad=$((bad + 1)); ft_log "$1: bucket $b meta buckets $(ft_rcli hget "$(ft_key "$V" meta "$b")" buckets)"; }
                [[ $(ft_rcli hget "$(ft_key "$V" meta "$b")" status) == 1 ]] || { bad=$((bad + 1)); ft_log "$1: bucket $b meta status $(ft_rcli hget "$(ft_key "$V" meta "$b")" status)"; }
        done
        ft_eq "$bad" 0 "$1: $((4 * N)) keys with expiry, _ in users and trace, meta buckets=$N status 1"
}

ft_eq "$(ft_sql "SELECT CONCAT(buckets, '/', init_stock) FROM tb_seckill_voucher WHERE voucher_id = $V")" "$N/$STOCK" "voucher row: $N buckets, $STOCK units"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(stock ORDER BY bucket) FROM tb_seckill_stock WHERE voucher_id = $V")" "10,10,10,10" "bucket rows 10 each"
keys_ok "preheat"
ft_check_redis "$V"

# One user, 20 concurrent requests: exactly one purchase.
ONE=777000001
: >"$FT_WORK/one.txt"
PIDS=()
for _ in $(seq 1 20); do
        "$FT_WORK/buy1.sh" "${FT_ADDR[f]}" "$V" "$ONE" "$FT_WORK/one.txt" &
        PIDS+=($!)
done
wait "${PIDS[@]}"   # not a bare wait: the front and consumer run in the background too
ft_log "user $ONE x20: $(awk '{print $2}' "$FT_WORK/one.txt" | sort | uniq -c | tr '\n' ' ')"
ft_eq "$(awk '$2 == 202' "$FT_WORK/one.txt" | wc -l)" 1 "one user, 20 concurrent requests: one 202"
cat "$FT_WORK/one.txt" >>"$FT_WORK/results.txt"
awk '$2 == 202' "$FT_WORK/one.txt" |
        sed -n "s/^\([0-9]*\) 202 .*\"orderId\":\"\([0-9]*\)\".*\"traceId\":\"\([0-9]*\)\".*/\1 \2 \3 $V/p" >>"$FT_WORK/accepted.tsv"

# Distinct buyers: far more than the stock, so every bucket is drained (whatever the
# front's overflow does, each home bucket alone has ~100 buyers for its 10 units).
ft_buy f "$V" 1000 400 16
ft_settle 90 || ft_fail "purchases not settled"
for _ in $(seq 1 60); do
        [[ $(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V") == "$STOCK" ]] && break
        sleep 1
done
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND status IN (1, 2)")" "$STOCK" "orders = stock (zero undersell)"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V AND user_id = $ONE")" 1 "user $ONE has one order"
ft_eq "$(ft_sql "SELECT GROUP_CONCAT(stock ORDER BY bucket) FROM tb_seckill_stock WHERE voucher_id = $V")" "0,0,0,0" "every bucket row drained to 0"
ft_log "orders per bucket: $(ft_sql "SELECT bucket, COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V GROUP BY bucket" | tr '\t\n' '= ')"
ft_check "$V" --sold-out

# The rebuild from the DB: Redis = DB per bucket, keys and placeholders in place.
for b in 0 1 2 3; do ft_rcli del "$(ft_key "$V" users "$b")" >/dev/null; done
ft_rcli set "$(ft_key "$V" stock 2)" 7 >/dev/null
"$FT_BIN/seckill-admin" voucher preheat "$V" --rebuild-from-db >"$FT_WORK/rebuild.log" 2>&1 &&
        ft_ok "voucher preheat --rebuild-from-db: exit 0" ||
        ft_fail "rebuild: $(tail -n 3 "$FT_WORK/rebuild.log")"
keys_ok "rebuild"
ft_check_redis "$V"
"$FT_BIN/seckill-admin" verify "$V" >"$FT_WORK/verify2.log" 2>&1 && ft_ok "verify after the rebuild: exit 0" ||
        ft_fail "verify after the rebuild: $(tr '\n' ' ' <"$FT_WORK/verify2.log" | cut -c1-400)"
ft_finish
