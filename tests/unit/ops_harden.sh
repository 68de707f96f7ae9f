#!/usr/bin/env bash
# ops_harden.sh: the four binaries of an optimised build are hardened as DESIGN.md 15
# says (before it, no stack protector, no FORTIFY, partial RELRO), read with
# readelf from the binaries themselves:
#   1. full RELRO: a GNU_RELRO segment and BIND_NOW (FLAGS BIND_NOW or FLAGS_1 NOW);
#   2. PIE (ELF type DYN with FLAGS_1 PIE);
#   3. the stack protector: __stack_chk_fail imported;
#   4. FORTIFY: at least one __*_chk function imported (e.g. __snprintf_chk).
# The Debug and sanitizer builds are not hardened (FORTIFY needs optimisation): the
# test reads the build's CMakeCache.txt and checks nothing for those (it says so).
# Env: SK_BIN (the binaries), SK_BUILD (the build tree).
set -uo pipefail
SRC=${SK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${SK_BUILD:-$SRC/build}
BIN=${SK_BIN:-$BUILD/bin}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
command -v readelf >/dev/null || { echo "FAIL: readelf missing (binutils)"; exit 1; }
type=$(cache CMAKE_BUILD_TYPE) harden=$(cache SK_HARDEN) san=$(cache SK_SANITIZE)
case "$type" in Release | RelWithDebInfo) ;; *) echo "build type '$type': not hardened by design; nothing to check"; exit 0 ;; esac
[[ $harden == ON && $san != ON ]] || { echo "SK_HARDEN=$harden SK_SANITIZE=$san: not hardened by design"; exit 0; }
for b in seckill-front seckill-consumer seckill-reconciler seckill-admin; do
        f=$BIN/$b
        [[ -x $f ]] || { bad "$f missing"; continue; }
        dyn=$(readelf -d "$f") hdr=$(readelf -lW "$f") syms=$(readelf --dyn-syms -W "$f")
        grep -q GNU_RELRO <<<"$hdr" || bad "$b: no GNU_RELRO segment"
        grep -qE 'FLAGS.*(BIND_NOW|NOW)' <<<"$dyn" || bad "$b: not BIND_NOW (partial RELRO)"
        [[ $(readelf -h "$f" | sed -n 's/^ *Type: *\([A-Z]*\).*/\1/p') == DYN ]] && grep -q 'FLAGS_1.*PIE' <<<"$dyn" ||
                bad "$b: not PIE"
        grep -q '__stack_chk_fail' <<<"$syms" || bad "$b: no stack protector (__stack_chk_fail not imported)"
        grep -qE ' __[a-z_]+_chk(@|$)' <<<"$syms" || bad "$b: no FORTIFY (__*_chk not imported)"
done
((fail)) || echo "ok: the four binaries are full RELRO, PIE, stack-protected and fortified"
exit $fail
