#!/usr/bin/env bash
# 0447_front_unix_listener.sh: SECKILL_HTTP_ADDR=unix:PATH (DESIGN.md 15 "Defaults are the
# safe ones"): the API listens on a unix socket, created mode 0660 with the group seckill
# when that group exists (else the front's own), so only the gateway's user (in that
# group) can speak for a buyer. With the real front and broker:
#   - the socket is srw-rw---- with the right group; a purchase through it buys (the
#     peer is "unix", trusted by the default list), a bad framing request is refused;
#   - a second front on the same path does not start (exit 1, like a TCP address in use:
#     the socket answers); a stale socket left by a killed front is replaced; a path
#     that is not a socket is refused (exit 1); a relative path is a configuration error
#     (exit 2);
#   - a graceful stop removes the socket file.
. "$(dirname "$0")/../support/ft.sh"
ft_init front_unix_listener
V=$(ft_voucher 5)
SOCK=$FT_WORK/api.sock
buy() { curl -s -o /dev/null -m 10 -w '%{http_code}' --unix-socket "$1" -X POST -H "X-User-Id: $2" \
        "http://front/api/v1/vouchers/$V/seckill"; }
front_exit() {  # ADDR: the exit status of a front that must not start, its stderr in $FT_WORK/e
        SECKILL_OPS_ADDR=127.0.0.1:$(ft_free_port) SECKILL_AUTH=trusted-header \
                timeout 60 "$FT_BIN/seckill-front" --http-addr "$1" \
                >/dev/null 2>"$FT_WORK/e"
}

ft_front f -- --http-addr "unix:$SOCK"
want_group=$(getent group seckill >/dev/null && echo seckill || id -gn)
ft_eq "$(stat -c '%A %G' "$SOCK")" "srw-rw---- $want_group" "the socket: mode 0660, group $want_group"
ft_eq "$(buy "$SOCK" 11)" 202 "a purchase through the socket: 202"
raw='POST /api/v1/orders/1/cancel HTTP/1.1\r\nHost: x\r\nX-User-Id: 11\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello'
ft_eq "$(python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin1")); print(s.recv(4096).split()[1].decode())' "$SOCK" "$raw")" 400 \
        "the framing rules hold on the socket: two Content-Length, 400"

front_exit "unix:$SOCK"
ft_eq "$?" 1 "a second front on the live socket: exit 1 (cannot listen, as for a TCP address in use)"
grep -q 'a process is listening there' "$FT_WORK/e" && ft_ok "it says the socket is in use" || ft_fail "stderr: $(cat "$FT_WORK/e")"

# A killed front leaves its socket file behind: the next one replaces it.
ft_kill f
[[ -S $SOCK ]] && ft_ok "SIGKILL left the socket file" || ft_fail "no stale socket to test with"
ft_front g -- --http-addr "unix:$SOCK"
ft_eq "$(buy "$SOCK" 12)" 202 "the stale socket replaced: a purchase through it, 202"
grep -q 'event=http_socket_stale_removed' "$FT_WORK/g.log" && ft_ok "logged: stale socket removed" || ft_fail "no stale-socket line"
ft_stop g
[[ -e $SOCK ]] && ft_fail "the socket file is still there after a graceful stop" || ft_ok "a graceful stop removes the socket file"

: >"$FT_WORK/plain"
front_exit "unix:$FT_WORK/plain"
ft_eq "$?" 1 "a path that is not a socket: exit 1 (cannot listen)"
grep -q 'the path exists and is not a socket' "$FT_WORK/e" && ft_ok "it says so" || ft_fail "stderr: $(cat "$FT_WORK/e")"
front_exit "unix:relative.sock"
ft_eq "$?" 2 "a relative path: exit 2"
grep -q 'SECKILL_HTTP_ADDR\|--http-addr' "$FT_WORK/e" && ft_ok "the line names the option" || ft_fail "stderr: $(cat "$FT_WORK/e")"
ft_finish
