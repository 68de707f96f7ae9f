#!/usr/bin/env bash
# 0442_payment_keys_reload.sh: the payment keys follow their file without a signal
# (DESIGN.md 15 "Hardening rules": SIGHUP re-reads the JWKS and the payment keys; both
# are also re-read within 10 s of an mtime change). With the real front and consumer:
#   - the file replaced (a new secret, written then renamed into place): within 10 s (the
#     test waits up to 30) the new secret is accepted without SIGHUP and the old one is
#     401/10008; seckill_payment_key_reloads_total counts it, the log says
#     trigger=changed (before, the old secret stayed until a SIGHUP);
#   - a broken file (a secret under 16 bytes) written in place: the reload fails once
#     (seckill_payment_key_reload_failures_total 1), the keys in force stay;
#   - nothing else changes: no reload while the file stays as it is.
. "$(dirname "$0")/../support/ft.sh"
ft_init payment_keys_reload

A=0442-secret-a-$RANDOM-$RANDOM B=0442-secret-b-$RANDOM-$RANDOM
FT_PAY_SECRET=$A
ft_pay_keys "$FT_WORK/pay.keys" "$A"
ft_front f SECKILL_PAYMENT_KEYS_FILE="$FT_WORK/pay.keys"
ft_consumer c SECKILL_PAY_TIMEOUT_S=600 SECKILL_CLOSE_INTERVAL_MS=3600000
V=$(ft_voucher 10 1 100 CNY)
ft_buy f "$V" 1 3 3
ft_settle 60 || ft_die "purchases not settled"
order_of() { awk -v u="$1" '$1 == u {o = $2} END {print o}' "$FT_WORK/accepted.tsv"; }
o1=$(order_of 1) o2=$(order_of 2) o3=$(order_of 3)
addr=${FT_ADDR[f]}
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# wait_code SECRET ORDER TXN WANT: poll (30 s) until the callback answers WANT.
wait_code() {
        local i c
        for ((i = 0; i < 150; i++)); do
                c=$(ft_pay "$addr" "$2" "$3" 100 CNY "$1" | cut -d' ' -f1)
                [[ $c == "$4" ]] && { echo "$c"; return; }
                sleep 0.2
        done
        echo "$c"
}

ft_eq "$(ft_pay "$addr" "$o1" T1 100 CNY "$A" | cut -d' ' -f1)" 200 "secret A pays order 1"
ft_eq "$(ft_pay "$addr" "$o2" T2 100 CNY "$B" | cut -c1-17)" '401 {"code":10008' "secret B before the change: 401"

# Rotation by the file alone: B replaces A (a new file renamed into place).
ft_pay_keys "$FT_WORK/pay.keys.new" "$B"
mv -f "$FT_WORK/pay.keys.new" "$FT_WORK/pay.keys"
t0=$(date +%s)
ft_eq "$(wait_code "$B" "$o2" T2 200)" 200 "secret B after the file changed, no SIGHUP: 200"
ft_log "accepted $(($(date +%s) - t0)) s after the rename"
ft_eq "$(ft_pay "$addr" "$o3" T3 100 CNY "$A" | cut -c1-17)" '401 {"code":10008' "the retired secret A: 401"
ft_eq "$(metric seckill_payment_key_reloads_total)" 1 "one reload counted"
ft_eq "$(grep -c 'event=payment_keys_reloaded.*trigger=changed' "$FT_WORK/f.log")" 1 "logged: trigger=changed"

# A broken file in place: the reload fails once, B stays in force.
printf 'short\n' >"$FT_WORK/pay.keys"
for ((i = 0; i < 150; i++)); do [[ $(metric seckill_payment_key_reload_failures_total) == 1 ]] && break; sleep 0.2; done
ft_eq "$(metric seckill_payment_key_reload_failures_total)" 1 "the broken file: one failed reload"
ft_eq "$(ft_pay "$addr" "$o3" T3 100 CNY "$B" | cut -d' ' -f1)" 200 "secret B still in force: 200"
sleep 12   # more than one 10 s period with the file unchanged
ft_eq "$(metric seckill_payment_key_reload_failures_total) $(metric seckill_payment_key_reloads_total)" "1 1" \
        "an unchanged file is not read again"
ft_alive f && ft_ok "the front is alive" || ft_fail "the front died"
ft_finish
