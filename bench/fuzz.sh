#!/usr/bin/env bash
# bench/fuzz.sh: build and run the libFuzzer harnesses of tests/fuzz/.
#
#   bench/fuzz.sh [SECONDS] [TARGET...]      SECONDS per target (default 60);
#                                            TARGET: id_parse msg_parse front_http conf_parse jwt paysig
#                                            paybody
#                                            (default all)
#
# Builds the CMake targets fuzz_TARGET (tests/fuzz/CMakeLists.txt) in build-fuzz/ (env
# SK_FUZZ_BUILD), configured with clang and -DSK_FUZZ=ON: common/ (and, for front_http,
# producer/'s request files; for paybody, producer/payment_body.c) compiled with coverage,
# ASan and UBSan; the system libraries (cJSON, libmicrohttpd, ...) are not instrumented,
# so their bugs show up only as crashes.
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

mkdir -p "$OUT/crashes" "$OUT/log"

# build: configure build-fuzz/ once (clang, SK_FUZZ), then build the targets asked for.
build() {
        local t targets=()
        for t in "${TARGETS[@]}"; do
                [[ -f $REPO/tests/fuzz/fuzz_$t.c ]] || { echo "fuzz: unknown target $t (no tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
                targets+=("fuzz_$t")
        done
        if [[ ! -f $OUT/CMakeCache.txt ]]; then
                cmake -S "$REPO" -B "$OUT" -DCMAKE_C_COMPILER="$CC" -DSK_FUZZ=ON -DSK_FAILPOINTS=ON \
                        -DBUILD_TESTING=OFF >"$OUT/log/build.log" 2>&1 ||
                        { echo "fuzz: cmake configure failed (see $OUT/log/build.log)" >&2; tail -n 20 "$OUT/log/build.log" >&2; exit 2; }
        fi
        cmake --build "$OUT" -j "$(nproc)" --target "${targets[@]}" >>"$OUT/log/build.log" 2>&1 ||
                { echo "fuzz: building ${targets[*]} failed (see $OUT/log/build.log)" >&2; tail -n 20 "$OUT/log/build.log" >&2; exit 2; }
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
