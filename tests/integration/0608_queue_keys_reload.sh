#!/usr/bin/env bash
# 0608_queue_keys_reload.sh: SECKILL_QUEUE_KEYS_FILE follows its file without a restart
# (DESIGN.md 18 "Admissions" rotation; re-read like the payment keys, DESIGN.md 15): one
# front, a queued voucher (stock 3, overbook 100%), members 1 and 2 admitted under k1.
#   - the file replaced by "k2, then k1" (written and renamed, no signal): within 10 s
#     (the test waits 30) a poll hands member 2 a token under k2; member 1's k1 token,
#     issued before, still buys (202): a later line verifies;
#   - "k2" alone written in place and SIGHUP: at once member 2's saved k1 token is 403
#     10014 and its k2 token buys (202);
#   - a broken file (a secret under 16 bytes) written in place: one failed reload, logged
#     once (queue_keys_reload_failed) and counted; member 3 is admitted under k2, the
#     keys in force. Before the reload existed the k2 token never came (the keys were read
#     once at start).
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_keys_reload
K1="k1 queue-secret-0123456789abcdef" K2="k2 queue-secret-fedcba9876543210"
ftq_keys
ftq_voucher 3 --stock 3 --queue --queue-overbook 100 --queue-ttl 300 --title "Keys"
ft_consumer c
ft_front f SECKILL_QUEUE_KEYS_FILE="$KEYS"
F=${FT_ADDR[f]}
Q=/api/v1/vouchers/$V/queue
S=/api/v1/vouchers/$V/seckill
# req METHOD PATH USER [X-Admission] -> "CODE BODY" through front f (ftq_req)
req() { ftq_req "$1" "$F" "$2" "$3" "${4:-}"; }
metric() { curl -s -m 5 "http://${FT_OPS[f]}/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# token_of USER PREFIX: poll (up to 30 s) until USER is admitted with a token starting
# with PREFIX; prints the token (or the last answer).
token_of() {
        local i r t
        for ((i = 0; i < 120; i++)); do
                r=$(req GET "$Q" "$1")
                t=$(field admission "$r")
                [[ $r == *'"state":"admitted"'* && $t == "$2"* ]] && { echo "$t"; return; }
                sleep 0.25
        done
        echo "$r"
}
# write_keys LINE...: the keys file replaced (written, then renamed into place)
write_keys() { printf '%s\n' "$@" >"$KEYS.new" && chmod 600 "$KEYS.new" && mv -f "$KEYS.new" "$KEYS"; }

while (($(date +%s) < BEGIN)); do sleep 0.2; done
for u in 1 2; do
        r=$(req POST "$Q" "$u")
        [[ $(field position "$r") == "$u" ]] || ft_fail "join $u: $r"
done
t1=$(token_of 1 v1.k1.) t2old=$(token_of 2 v1.k1.)
[[ $t1 == v1.k1.* && $t2old == v1.k1.* ]] && ft_ok "members 1 and 2 admitted under k1" ||
        ft_die "admissions under k1: '$t1' '$t2old'"

# Rotation by the file alone: k2 promoted, k1 a later line.
write_keys "# rotated" "$K2" "$K1"
t0=$(date +%s)
t2=$(token_of 2 v1.k2.)
[[ $t2 == v1.k2.* ]] && ft_ok "a changed file, no signal: member 2's token is under k2 after $(($(date +%s) - t0)) s" ||
        ft_fail "no k2 token within 30 s of the change: $t2"
ft_eq "$(metric seckill_queue_key_reloads_total)" 1 "one reload counted"
ft_eq "$(grep -c 'event=queue_keys_reloaded.*trigger=changed' "$FT_WORK/f.log")" 1 "logged: trigger=changed"
r=$(req POST "$S" 1 "$t1")
[[ $r == "202 "* ]] && ft_ok "member 1's k1 token (a later line now) buys: $r" || ft_fail "k1 token after promotion: $r"

# k1 retired, by SIGHUP (the file written in place, same second: the signal, not the stamp).
printf '%s\n' "$K2" >"$KEYS"
kill -HUP "${FT_PID[f]}"
for ((i = 0; i < 120; i++)); do
        (($(grep -c 'event=queue_keys_reloaded.*trigger=sighup' "$FT_WORK/f.log") >= 1)) && break
        sleep 0.25
done
ft_eq "$(grep -c 'event=queue_keys_reloaded.*trigger=sighup' "$FT_WORK/f.log")" 1 "logged: trigger=sighup"
r=$(req POST "$S" 2 "$t2old")
[[ $r == "403 "*10014* ]] && ft_ok "a token under the retired k1: 403 10014" || ft_fail "retired k1 token: $r"
r=$(req POST "$S" 2 "$t2")
[[ $r == "202 "* ]] && ft_ok "the same member's k2 token buys: $r" || ft_fail "k2 token: $r"

# A broken file: the keys in force stay, one failure logged and counted.
printf 'k3 short\n' >"$KEYS"
for ((i = 0; i < 120; i++)); do [[ $(metric seckill_queue_key_reload_failures_total) == 1 ]] && break; sleep 0.25; done
ft_eq "$(metric seckill_queue_key_reload_failures_total)" 1 "the broken file: one failed reload"
ft_eq "$(grep -c 'event=queue_keys_reload_failed' "$FT_WORK/f.log")" 1 "logged once: queue_keys_reload_failed"
grep 'event=queue_keys_reload_failed' "$FT_WORK/f.log" | grep -q 'short' &&
        ft_fail "the error line quotes the file's content" || ft_ok "the error line quotes no secret"
r=$(req POST "$Q" 3)
[[ $(field position "$r") == 3 ]] || ft_fail "join 3: $r"
t3=$(token_of 3 v1.k2.)
[[ $t3 == v1.k2.* ]] && ft_ok "member 3 admitted under k2, the keys in force" || ft_fail "member 3: $t3"
ft_alive f && ft_ok "the front is alive" || ft_fail "the front died"
ft_finish
