#!/usr/bin/env bash
# bench/fuzz.sh: build and run the libFuzzer harnesses of tests/fuzz/.
#
#   bench/fuzz.sh [SECONDS] [TARGET...]      SECONDS per target (default 60);
#                                            TARGET: id_parse msg_parse front_http conf_parse jwt paysig
#                                            paybody
#                                            (default all)
#
# Builds with clang -fsanitize=fuzzer,address,undefined into build-fuzz/ (env
# SK_FUZZ_BUILD): the common sources (and, for front_http, producer/http.c, req.c, soldout.c and
# metrics.c; for paybody, producer/payment_body.c) are compiled with coverage; the system libraries (cJSON,
# libmicrohttpd, ...) are not instrumented, so their bugs show up only as crashes.
# Each target runs for SECONDS on its corpus (build-fuzz/corpus/TARGET, seeded from
# tests/fuzz/corpus/TARGET, kept between runs) with its dictionary; a crash leaves its
# input in build-fuzz/crashes/. Every crash found must become a unit test in
# tests/unit/check_fuzz_regressions.c.
#
# CI runs it through CTest (test fuzz_harnesses, label fuzz: 20 s per target; scripts/test.sh
# installs clang and libclang-rt-14-dev and runs the label in its background pass).
# Exit status: 0 no crash, 1 a target crashed, 2 build/usage.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${SK_FUZZ_BUILD:-$REPO/build-fuzz}
SECS=${1:-60}
[[ $SECS =~ ^[0-9]+$ && $SECS -ge 1 ]] || { echo "usage: bench/fuzz.sh [SECONDS] [id_parse|msg_parse|front_http|conf_parse|jwt|paysig|paybody...]" >&2; exit 2; }
shift || true
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(id_parse msg_parse front_http conf_parse jwt paysig paybody)
CC=${SK_FUZZ_CC:-clang}
command -v "$CC" >/dev/null 2>&1 || { echo "fuzz: $CC not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

PKGS="rdkafka hiredis mysqlclient libcjson libmicrohttpd libcrypto"
CFLAGS=(-std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
        -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter
        -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DSK_VERSION=\"fuzz\" -DSK_FAILPOINTS_ENABLED=1
        -I"$REPO/producer")
# Each layer of common/ (README.md, "Architecture"): its public include/ and its own folder.
for layer in base redis db kafka sale lease http auth; do
        CFLAGS+=(-I"$REPO/common/$layer/include" -I"$REPO/common/$layer")
done
# shellcheck disable=SC2207
CFLAGS+=($(pkg-config --cflags $PKGS))
# shellcheck disable=SC2207
LIBS=($(pkg-config --libs $PKGS) -lpthread -lm)
LDFLAGS=(-fsanitize=fuzzer,address,undefined)
# Symbols the front harness replaces (no Redis/Kafka/DB behind it).
WEAKEN=(-W sk_idgen_next -W sk_idgen_usable -W sk_idgen_worker_id)

mkdir -p "$OUT/obj/common" "$OUT/obj/producer" "$OUT/gen" "$OUT/bin" "$OUT/crashes" "$OUT/log"

# compile SRC OBJ: recompile when the source (or this script) is newer.
compile() {
        local src=$1 obj=$2
        if [[ ! -f $obj || $src -nt $obj || ${BASH_SOURCE[0]} -nt $obj ]]; then
                "$CC" "${CFLAGS[@]}" -c "$src" -o "$obj" 2>>"$OUT/log/build.log" ||
                        { echo "fuzz: compiling $src failed (see $OUT/log/build.log)" >&2; tail -n 20 "$OUT/log/build.log" >&2; exit 2; }
                objcopy "${WEAKEN[@]}" "$obj"
        fi
}

build() {
        local f name common_objs=()
        : >"$OUT/log/build.log"
        cmake -DOUT="$OUT/gen/sk_lua_embedded.c" -DLUA_DIR="$REPO/lua" -P "$REPO/cmake/embed_lua.cmake" >/dev/null &&
        cmake -DOUT="$OUT/gen/sk_ddl_embedded.c" -DDDL_DIR="$REPO/ddl" -P "$REPO/cmake/embed_ddl.cmake" >/dev/null ||
                { echo "fuzz: embedding lua/ddl failed" >&2; exit 2; }
        for f in "$REPO"/common/{base,redis,db,kafka,sale,lease,auth}/*.c "$OUT"/gen/*.c; do
                name=$(basename "$f" .c)
                compile "$f" "$OUT/obj/common/$name.o"
                common_objs+=("$OUT/obj/common/$name.o")
        done
        for name in http req metrics soldout soldout_table identity strict vflight payment_body; do
                compile "$REPO/producer/$name.c" "$OUT/obj/producer/$name.o"
        done
        for t in "${TARGETS[@]}"; do
                local h=$REPO/tests/fuzz/fuzz_$t.c objs=()
                [[ -f $h ]] || { echo "fuzz: unknown target $t (no $h)" >&2; exit 2; }
                case $t in
                id_parse) objs=("$OUT/obj/common/ids.o") ;;
                msg_parse) objs=("$OUT/obj/common/msg.o" "$OUT/obj/common/ids.o" "$OUT/obj/common/err.o") ;;
                front_http) objs=("$OUT/obj/producer/http.o" "$OUT/obj/producer/req.o" "$OUT/obj/producer/metrics.o"
                            "$OUT/obj/producer/soldout.o" "$OUT/obj/producer/soldout_table.o"
                            "$OUT/obj/producer/identity.o" "$OUT/obj/producer/strict.o"
                            "$OUT/obj/producer/vflight.o"
                            "${common_objs[@]}") ;;
                paybody) objs=("$OUT/obj/producer/payment_body.o" "${common_objs[@]}") ;;
                *) objs=("${common_objs[@]}") ;;
                esac
                "$CC" "${CFLAGS[@]}" "${LDFLAGS[@]}" "$h" "${objs[@]}" "${LIBS[@]}" -o "$OUT/bin/fuzz_$t" \
                        2>>"$OUT/log/build.log" ||
                        { echo "fuzz: linking fuzz_$t failed (see $OUT/log/build.log)" >&2; tail -n 20 "$OUT/log/build.log" >&2; exit 2; }
        done
}

echo "fuzz: building ${TARGETS[*]} in $OUT"
build

declare -A SUMMARY=()
CRASHED=0
for t in "${TARGETS[@]}"; do
        corpus=$OUT/corpus/$t
        mkdir -p "$corpus"
        dict=()
        [[ -f $REPO/tests/fuzz/$t.dict ]] && dict=(-dict="$REPO/tests/fuzz/$t.dict")
        before=$(find "$OUT/crashes" -name "$t-*" | wc -l)
        echo "fuzz: running fuzz_$t for ${SECS}s (log $OUT/log/$t.log)"
        # -max_len 4096: every input here is one message or one request.
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
                "$OUT/bin/fuzz_$t" -max_total_time="$SECS" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
                -print_final_stats=1 -artifact_prefix="$OUT/crashes/$t-" "${dict[@]}" \
                "$corpus" "$REPO/tests/fuzz/corpus/$t" >"$OUT/log/$t.log" 2>&1
        rc=$?
        after=$(find "$OUT/crashes" -name "$t-*" | wc -l)
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/log/$t.log" | tail -n 1)
        cov=$(grep -o 'cov: [0-9]*' "$OUT/log/$t.log" | tail -n 1 | cut -d' ' -f2)
        ncorpus=$(find "$corpus" -type f | wc -l)
        if [[ $rc -ne 0 || $after -gt $before ]]; then
                CRASHED=1
                SUMMARY[$t]="CRASH (exit $rc): $(find "$OUT/crashes" -name "$t-*" -newer "$OUT/bin/fuzz_$t" | head -n 3 | tr '\n' ' ')"
                grep -m 3 -E 'ERROR: |SUMMARY: |runtime error' "$OUT/log/$t.log" | sed 's/^/    /'
        else
                SUMMARY[$t]="ok"
        fi
        SUMMARY[$t]="${SUMMARY[$t]}; runs ${runs:-?}, cov ${cov:-?}, corpus $ncorpus"
done

echo
echo "fuzz summary (${SECS}s per target):"
for t in "${TARGETS[@]}"; do
        printf '  %-12s %s\n' "$t" "${SUMMARY[$t]}"
done
[[ $CRASHED -eq 0 ]] || { echo "fuzz: crash inputs are in $OUT/crashes; reproduce with $OUT/bin/fuzz_TARGET FILE"; exit 1; }
exit 0
