#!/usr/bin/env bash
# 0605_queue_cross_site.sh: the waiting room's POST routes under the cross-site rule
# (DESIGN.md 15 "Cross-site requests", 18) in trusted-header mode with
# SECKILL_ALLOWED_ORIGINS=https://shop.example. A browser sends the gateway's session
# cookie with a plain cross-site form POST, so without the rule another site could join
# the line or spend an admission in the visitor's name.
#   - a cross-site POST …/queue (Sec-Fetch-Site: cross-site, Origin: https://evil.example)
#     is 403 10001 naming the cross-site refusal, and nobody joined (a poll of that user is
#     404 10016, the next join gets position 2); Origin: null alone is refused too;
#   - a same-origin join (Sec-Fetch-Site: same-origin) and a listed Origin join (200);
#   - a cross-site GET …/queue (a poll) is not refused;
#   - an admitted member's cross-site POST …/seckill with its valid token is 403 10001 and
#     spends nothing: the same token then buys from the shop's origin (202), and once more
#     is 403 10014 (a token buys once).
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_queue.sh"
ft_init queue_cross_site
ftq_keys
ftq_voucher 2 --stock 5 --queue --queue-overbook 100 --queue-ttl 120 --title "Cross-site"
ft_consumer c
ft_front t SECKILL_QUEUE_KEYS_FILE="$KEYS" SECKILL_ALLOWED_ORIGINS="https://shop.example"
A=${FT_ADDR[t]}
# req METHOD PATH USER [HEADER...] -> "CODE BODY"
req() {
        local m=$1 p=$2 u=$3 args=() h o
        shift 3
        for h in "$@"; do args+=(-H "$h"); done
        o=$(curl -s -m 20 -w '\n%{http_code}' -X "$m" -H "X-User-Id: $u" "${args[@]}" "http://$A$p")
        printf '%s %s\n' "${o##*$'\n'}" "$(tr -d '\n' <<<"${o%$'\n'*}")"
        printf '%s %s user=%s [%s] -> %s %s\n' "$m" "$p" "$u" "$*" "${o##*$'\n'}" \
                "$(tr -d '\n' <<<"${o%$'\n'*}")" >>"$FT_WORK/transcript.txt"
}
refused() {     # WHAT "CODE BODY"
        [[ $2 == "403 "*'"code":10001'*'cross-site request refused'* ]] && ft_ok "$1: 403 10001, cross-site named" ||
                ft_fail "$1: $2"
}
Q=/api/v1/vouchers/$V/queue
S=/api/v1/vouchers/$V/seckill
XS=('Sec-Fetch-Site: cross-site' 'Origin: https://evil.example')

while (($(date +%s) < BEGIN)); do sleep 0.2; done
r=$(req POST "$Q" 1 'Sec-Fetch-Site: same-origin' 'Origin: https://shop.example')
[[ $(field position "$r") == 1 ]] && ft_ok "same-origin join: position 1 ($r)" || ft_fail "same-origin join: $r"
refused "a cross-site join" "$(req POST "$Q" 2 "${XS[@]}")"
refused "a join with Origin: null" "$(req POST "$Q" 3 'Origin: null')"
r=$(req GET "$Q" 2)
[[ $r == "404 "*10016* ]] && ft_ok "the refused joiner is no member: $r" || ft_fail "refused joiner's poll: $r"
r=$(req POST "$Q" 4 'Origin: https://shop.example')
[[ $(field position "$r") == 2 ]] &&
        ft_ok "a listed Origin joins: position 2 (the refused joins took no place): $r" ||
        ft_fail "listed-origin join: $r"
tok=""
for ((i = 0; i < 120; i++)); do
        r=$(req GET "$Q" 1 "${XS[@]}")
        [[ $r == "200 "*'"state":"admitted"'* ]] && { tok=$(field admission "$r"); break; }
        [[ $r == "200 "* ]] || { ft_fail "a cross-site poll: $r"; break; }
        sleep 0.25
done
[[ -n $tok ]] && ft_ok "a cross-site GET …/queue is answered (polls are not refused); member 1 admitted" ||
        ft_fail "member 1 not admitted: $r"
refused "a cross-site purchase with a valid admission" "$(req POST "$S" 1 "X-Admission: $tok" "${XS[@]}")"
refused "a purchase with Sec-Fetch-Site: same-site alone" "$(req POST "$S" 1 "X-Admission: $tok" 'Sec-Fetch-Site: same-site')"
r=$(req POST "$S" 1 "X-Admission: $tok" 'Sec-Fetch-Site: same-origin')
[[ $r == "202 "* ]] && ft_ok "the same token then buys from the shop's origin (the refusals spent nothing): $r" ||
        ft_fail "same-origin purchase: $r"
r=$(req POST "$S" 1 "X-Admission: $tok" 'Sec-Fetch-Site: same-origin')
[[ $r == "403 "*10014* ]] && ft_ok "the token once more: 403 10014" || ft_fail "token twice: $r"
ft_wait_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V" 1 120 0.25 &&
        ft_ok "one order in the DB" || ft_fail "orders: $(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V")"
ft_alive t && ft_ok "front alive" || ft_fail "the front exited"
ft_finish
