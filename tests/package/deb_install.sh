#!/usr/bin/env bash
# tests/package/deb_install.sh (label package): the installed layout of the Debian package
# (DESIGN.md 17), as root on a host without systemd (no test starts a unit):
#   1. scripts/package.sh builds the .deb in build-release/ (reused: incremental);
#   2. dpkg -i: the seckill system user and group, /etc/seckill 0750 root:seckill, the
#      files, Depends computed from the binaries (librdkafka, hiredis, MariaDB client);
#   3. the installed binaries' --version and --help (failpoints compiled out), the
#      example env files accepted by every binary (--print-config);
#   4. systemd-analyze verify and security --offline=yes on the installed units;
#   5. one short sale (20 units, 40 buyers) with the installed binaries, run as the
#      seckill user, against the local stack with the least-privilege users of
#      `seckill-admin db grants` (front, consumer, reconciler each its own user, checked in
#      the processlist): every invariant holds (tests/support/ft.sh ft_check);
#   6. dpkg --purge: /etc/seckill and the files gone, the seckill user kept;
#   7. lintian, when installed: its findings are printed, not judged.
# Refuses to run where seckill is installed by someone else (no marker of an earlier run
# of this test): it would replace that installation. Needs root and the local stack.
set -uo pipefail
SRC=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
MARK=/var/lib/seckill-package-test.marker
T0=$(date +%s)
pfail=0
say() { printf '[package %4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
bad() { say "FAIL: $*"; pfail=$((pfail + 1)); }
good() { say "ok: $*"; }

[[ $(id -u) == 0 ]] || { echo "deb_install.sh: needs root (dpkg -i)"; exit 1; }
if dpkg-query -W -f='${Status}' seckill 2>/dev/null | grep -q "ok installed"; then
        [[ -e $MARK ]] || { echo "seckill is installed on this host, not by this test: refusing to replace it"; exit 1; }
        say "purging the package an interrupted run of this test left"
        dpkg --purge seckill >/dev/null || exit 1
fi

# ---- 1. build
say "building the package (scripts/package.sh, build-release/)"
deb=$("$SRC/scripts/package.sh" | tail -n 1) || { echo "scripts/package.sh failed"; exit 1; }
[[ -f $deb ]] || { echo "no package: $deb"; exit 1; }
say "built $deb"

# ---- 2. install
: >"$MARK"
dpkg -i "$deb" >/tmp/seckill-dpkg-i.log 2>&1 || { cat /tmp/seckill-dpkg-i.log; rm -f "$MARK"; exit 1; }
purge() { dpkg --purge seckill >/dev/null 2>&1; rm -f "$MARK"; }
good "dpkg -i $(basename "$deb")"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd seckill) || true
if [[ -n ${uid:-} && $uid -lt 1000 && $home == /nonexistent && $shell == */nologin ]]; then
        good "system user seckill (uid $uid, home $home, shell $shell)"
else
        bad "user seckill: $(getent passwd seckill)"
fi
getent group seckill >/dev/null && good "group seckill" || bad "no group seckill"
[[ $(stat -c '%a %U %G' /etc/seckill 2>/dev/null) == "750 root seckill" ]] &&
        good "/etc/seckill 0750 root:seckill" || bad "/etc/seckill: $(stat -c '%a %U %G' /etc/seckill 2>&1)"
for f in /usr/bin/seckill-front /usr/bin/seckill-consumer /usr/bin/seckill-reconciler /usr/bin/seckill-admin \
         /usr/lib/systemd/system/seckill-front@.service /usr/lib/systemd/system/seckill-consumer.service \
         /usr/lib/systemd/system/seckill-reconciler.service /usr/lib/systemd/system/seckill-reconciler.timer \
         /usr/share/seckill/seckill.env.example /usr/share/seckill/front-main.env.example \
         /usr/share/seckill/nginx/seckill-gateway.conf /usr/share/seckill/prometheus/seckill.rules.yml \
         /usr/share/seckill/grafana/seckill-sale.json /usr/share/doc/seckill/OPERATIONS.md; do
        [[ -f $f ]] || bad "missing $f"
done
good "files checked ($(dpkg -L seckill | wc -l) paths)"
deps=$(dpkg -s seckill | sed -n 's/^Depends: //p')
say "Depends: $deps"
for d in librdkafka1 libhiredis libmariadb3 libmicrohttpd libcjson1 libssl3 adduser; do
        grep -q "$d" <<<"$deps" || bad "Depends lacks $d"
done

# ---- 3. binaries
for b in seckill-front seckill-consumer seckill-reconciler seckill-admin; do
        v=$("/usr/bin/$b" --version 2>&1)
        [[ $v =~ ^$b\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || bad "$b --version: $v"
        h=$("/usr/bin/$b" --help 2>&1) || bad "$b --help exited non-zero"
        grep -q SECKILL_FAILPOINTS <<<"$h" && bad "$b --help mentions failpoints: not compiled out"
        rc=0
        (set -a; . /usr/share/seckill/seckill.env.example; . /usr/share/seckill/front-main.env.example
         "/usr/bin/$b" --print-config >/dev/null) || rc=$?
        [[ $rc == 0 ]] || bad "$b rejects the example env files (exit $rc)"
done
# DESIGN.md 15: the examples the package installs name jwt with its files.
for want in '^SECKILL_AUTH=jwt$' '^SECKILL_JWT_KEYS_FILE=' '^SECKILL_JWT_ISSUER=.' '^SECKILL_JWT_AUDIENCE=.'; do
        grep -q "$want" /usr/share/seckill/front-main.env.example || bad "front-main.env.example lacks $want"
done
/usr/bin/seckill-admin --help | grep -q -- --http-addr && bad "seckill-admin --help lists --http-addr"
good "--version, --help, the example env files"
# DESIGN.md 15: the installed binaries are hardened (full RELRO, PIE, stack protector, FORTIFY).
if out=$(SK_BIN=/usr/bin SK_BUILD="$SRC/build-release" bash "$SRC/tests/unit/ops_harden.sh" 2>&1); then
        good "readelf: ${out#ok: }"
else
        bad "installed binaries not hardened: $(tr '\n' ' ' <<<"$out")"
fi

# ---- 4. units
# systemd-analyze works offline here (systemd 252 in the container, no manager): verify
# loads the units with the installed binaries; a template is verified as an instance.
if command -v systemd-analyze >/dev/null; then
        u=/usr/lib/systemd/system
        tmpu=$(mktemp -d)
        cp "$u/seckill-front@.service" "$tmpu/seckill-front@main.service"
        for unit in "$tmpu/seckill-front@main.service" "$u/seckill-consumer.service" \
                    "$u/seckill-reconciler.service" "$u/seckill-reconciler.timer"; do
                out=$(systemd-analyze verify "$unit" 2>&1)
                rc=$?
                # A unit file outside the search path names its template's neighbours.
                out=$(grep -v 'seckill-reconciler.service: .*not found' <<<"$out" || true)
                [[ $rc == 0 && -z $out ]] && good "systemd-analyze verify $(basename "$unit")" ||
                        bad "systemd-analyze verify $(basename "$unit") (exit $rc): $out"
        done
        for unit in "$tmpu/seckill-front@main.service" "$u/seckill-consumer.service" "$u/seckill-reconciler.service"; do
                out=$(systemd-analyze security --offline=yes "$unit" 2>&1)
                level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p' <<<"$out")
                say "systemd-analyze security --offline=yes $(basename "$unit"): exposure ${level:-?}"
                [[ -n $level ]] && awk -v l="$level" 'BEGIN { exit !(l < 2.0) }' ||
                        bad "$(basename "$unit"): exposure ${level:-unknown} (want < 2.0): $(tail -n 3 <<<"$out")"
        done
        rm -rf "$tmpu"
else
        say "SKIP: systemd-analyze not installed (package systemd): units not verified"
fi

# ---- 5. a short sale with the installed binaries, as the seckill user
wrap=$(mktemp -d)
for b in seckill-front seckill-consumer seckill-reconciler seckill-admin; do
        printf '#!/bin/sh\nexec setpriv --reuid=seckill --regid=seckill --clear-groups -- /usr/bin/%s "$@"\n' "$b" >"$wrap/$b"
        chmod 0755 "$wrap/$b"
done
say "sale: installed binaries as the seckill user, least-privilege DB users"
(
        export SK_BIN=$wrap
        # shellcheck source=../support/ft.sh
        . "$SRC/tests/support/ft.sh"
        ft_init package_sale
        ft_least_privilege
        ft_front f
        ft_consumer c
        [[ $(ps -o user= -p "${FT_PID[f]}") == seckill ]] && ft_ok "the front runs as seckill" ||
                ft_fail "the front runs as $(ps -o user= -p "${FT_PID[f]}")"
        V=$(ft_voucher 20)
        ft_buy f "$V" 1000 40 8
        for role in front consumer; do   # DESIGN.md 15, 17: each binary its own DB user
                n=$(ft_sql_root "SELECT COUNT(*) FROM information_schema.processlist WHERE user = '$FT_DBU$role'")
                ((n > 0)) && ft_ok "seckill-$role connected as ${FT_DBU}$role ($n connections)" ||
                        ft_fail "no connection of ${FT_DBU}$role"
        done
        ft_settle 60 || ft_fail "not every 202 decided in 60 s"
        ft_reconcile 90 || ft_fail "reconciler --repair: exit $FT_RECON_RC"
        ft_check "$V" --sold-out
        ft_finish
) || bad "the sale with the installed binaries (log above)"
rm -rf "$wrap"

# ---- 6. lintian (optional), then purge
if command -v lintian >/dev/null; then
        say "lintian findings (printed, not judged):"
        lintian "$deb" 2>&1 | sed 's/^/    /'
else
        say "lintian not installed: not run"
fi
dpkg --purge seckill >/tmp/seckill-dpkg-purge.log 2>&1 || { bad "dpkg --purge: $(cat /tmp/seckill-dpkg-purge.log)"; }
rm -f "$MARK"
[[ -e /etc/seckill ]] && bad "/etc/seckill is left after purge" || good "purge removed /etc/seckill"
[[ -e /usr/bin/seckill-front || -e /usr/lib/systemd/system/seckill-consumer.service ]] && bad "files left after purge"
getent passwd seckill >/dev/null && good "the seckill user is kept" || bad "purge removed the seckill user"

say "done in $(($(date +%s) - T0)) s, $pfail failure(s)"
[[ $pfail -eq 0 ]]
