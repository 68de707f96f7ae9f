#!/usr/bin/env bash
# scripts/package.sh: builds the Debian package seckill_<version>_<arch>.deb (DESIGN.md 17)
# from its own release build in build-release/ (reused when it exists):
#   cmake -DCMAKE_BUILD_TYPE=Release -DSK_FAILPOINTS=OFF -DSK_SANITIZE=OFF -DSK_HARDEN=ON
#         -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX=/usr
#   cmake --build; cpack -G DEB   (cpack refuses a build with failpoints or sanitizers)
# Prints the path of the .deb on its last line. Installs what it misses with apt-get
# (the build dependencies of README.md, dpkg-dev for dpkg-shlibdeps, fakeroot).
# Env: SECKILL_PKG_BUILD (build directory, default <source>/build-release),
#      SECKILL_JOBS (parallel build jobs, default 2).
# Exit: 0 the .deb is built, 1 a step failed.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${SECKILL_PKG_BUILD:-$SRC/build-release}
JOBS=${SECKILL_JOBS:-2}
case ${1:-} in
-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) echo "package.sh: no arguments (see --help)" >&2; exit 1 ;;
esac

# shellcheck source=lib/apt.sh
. "$SRC/scripts/lib/apt.sh"
missing=$(sk_apt_missing build-essential cmake pkg-config librdkafka-dev libhiredis-dev \
        default-libmysqlclient-dev libcjson-dev libmicrohttpd-dev libssl-dev dpkg-dev fakeroot file)
if [[ -n $missing ]]; then
        # shellcheck disable=SC2086  # one package a word
        sk_apt_install "" $missing || exit 1
fi

cmake -S "$SRC" -B "$OUT" -DCMAKE_BUILD_TYPE=Release -DSK_FAILPOINTS=OFF -DSK_SANITIZE=OFF \
        -DSK_HARDEN=ON -DBUILD_TESTING=OFF -DCMAKE_INSTALL_PREFIX=/usr >"$OUT.configure.log" 2>&1 ||
        { cat "$OUT.configure.log" >&2; exit 1; }
mv -f "$OUT.configure.log" "$OUT/configure.log"
cmake --build "$OUT" -j "$JOBS" >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log" >&2; exit 1; }
rm -f "$OUT"/seckill_*.deb
(cd "$OUT" && cpack -G DEB >cpack.log 2>&1) || { tail -n 40 "$OUT/cpack.log" >&2; exit 1; }
deb=$(ls "$OUT"/seckill_*.deb)
echo "$deb"
