#!/usr/bin/env bash
# 0443_front_trusted_cidrs.sh: SECKILL_TRUSTED_PROXIES taken in canonical form only, and
# wide prefixes only when asked for (DESIGN.md 15 "Defaults are the safe ones"):
#   - "10.0.0.1/+8" (a sign), "10.0.0.0/08" (a leading zero), "10.0.0.1/8" (host bits:
#     one host or the /8?), "2001:db8:0::/32" (not as inet_ntop writes it): the front
#     exits 2 with one line naming the entry (before, each was accepted silently, "+8"
#     read as 8 and the host bits ignored);
#   - "0.0.0.0/0", "10.0.0.0/7", "::/0": refused (exit 2, the line names
#     SECKILL_TRUSTED_PROXIES_ALLOW_WIDE); with SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1 the
#     front starts, warns (event=trusted_proxies_wide) and believes X-User-Id from
#     127.0.0.1 (a purchase: 202);
#   - canonical lists start as before: "127.0.0.0/8,unix", a bare address.
. "$(dirname "$0")/../support/ft.sh"
ft_init front_trusted_cidrs

refused() {     # LIST WANT_TEXT
        local out rc
        out=$(SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=$1 timeout 60 "$FT_BIN/seckill-front" \
                --http-addr "127.0.0.1:$(ft_free_port)" \
                --ops-addr "127.0.0.1:$(ft_free_port)" 2>&1 >/dev/null)
        rc=$?
        ft_eq "$rc" 2 "SECKILL_TRUSTED_PROXIES=$1: exit 2"
        grep -qF -- "$2" <<<"$out" && ft_ok "the line says: $2" || ft_fail "refusal of $1: $out"
}
refused "10.0.0.1/+8" '"10.0.0.1/+8": the prefix must be 0..32 in decimal, without sign or leading zero'
refused "127.0.0.1/32,10.0.0.0/08" '"10.0.0.0/08": the prefix must be'
refused "10.0.0.1/8" '"10.0.0.1/8" has host bits set: write 10.0.0.0/8'
refused "2001:db8:0::/32" '"2001:db8:0::/32" is not canonical (write the address as 2001:db8::)'
refused "0.0.0.0/0" '"0.0.0.0/0" is wider than /8'
refused "unix,10.0.0.0/7" '"10.0.0.0/7" is wider than /8'
refused "::/0" 'set SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1'

# Wide, asked for: starts, warns, trusts loopback.
V=$(ft_voucher 5)
ft_front w SECKILL_TRUSTED_PROXIES=0.0.0.0/0 SECKILL_TRUSTED_PROXIES_ALLOW_WIDE=1
ft_eq "$(grep -c 'event=trusted_proxies_wide wide=1' "$FT_WORK/w.log")" 1 "ALLOW_WIDE=1: started, the wide entry warned"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H 'X-User-Id: 7' \
        "http://${FT_ADDR[w]}/api/v1/vouchers/$V/seckill")" 202 "a purchase from 127.0.0.1 under 0.0.0.0/0: 202"
# Canonical lists start as before.
ft_front c SECKILL_TRUSTED_PROXIES="127.0.0.0/8,unix 10.1.2.3"
ft_eq "$(grep -c 'event=trusted_proxies_wide' "$FT_WORK/c.log")" 0 "no warning for a narrow list"
ft_eq "$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST -H 'X-User-Id: 8' \
        "http://${FT_ADDR[c]}/api/v1/vouchers/$V/seckill")" 202 "127.0.0.0/8 trusts 127.0.0.1: 202"
ft_finish
