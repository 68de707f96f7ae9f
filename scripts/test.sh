#!/usr/bin/env bash
# scripts/test.sh: build seckill and run every test suite against the real local stack.
#
#   1. Debian build and test dependencies, installed only when missing (dpkg -s).
#   2. scripts/stack.sh up (Redis, MariaDB, Kafka), in the background while 3. builds.
#   3. cmake -S . -B build -DSK_WERROR=ON -DSK_FAILPOINTS=ON; cmake --build build -j2
#   4. ctest -L 'unit|integration|faults|browser' in build/ (browser: Debian's chromium
#      driven by npm's playwright-core, installed first by tests/browser/install.sh under
#      build/browser-node, DESIGN.md 18)
#   5. the same sources with -DSK_SANITIZE=ON (ASan + UBSan) in build-asan/ (built at
#      `nice -n 19` in the background while step 4 runs: the main pass mostly waits on the
#      stack, so the build takes the idle CPU and yields to the tests),
#      ctest -L 'unit|integration' there (leaks checked, first error fatal); at the same
#      time, in the background, the topology pass: ctest -L 'cluster|sentinel|galera|package|fuzz'
#      in build/ with more jobs (the integration suite once more on the local Redis Cluster,
#      on Sentinel and with the database on the local three-node Galera cluster, which
#      those tests start through scripts/stack.sh; about 200 s of it; they mostly wait
#      on I/O, so they share the two cores with the sanitizer pass; and the installed
#      layout of the Debian package, tests/package/: build-release/, dpkg -i, a short
#      sale, dpkg --purge, about 35 s with build-release/ built, 100 s without; and the
#      libFuzzer harnesses, bench/fuzz.sh 10 s each, build-fuzz/ with clang).
#   6. the Debug build (-DCMAKE_BUILD_TYPE=Debug -DSK_WERROR=ON: gcc warns differently at
#      -O0, e.g. -Wformat-truncation) in build-debug/, compile only, at `nice -n 19` and one
#      job in the background during the main pass (about 80 s of CPU from scratch, seconds
#      when incremental); its row is recorded before the summary.
#   7. a summary; exit 0 only when every step passed.
# At exit it stops the services that were not running before it started (unless
# SECKILL_KEEP_STACK=1); services that were already up are left as they were.
#
# Environment (all optional):
#   SECKILL_KEEP_STACK=1          leave what this run started running
#   SECKILL_TEST_JOBS             parallel build jobs and the sanitizer pass's ctest jobs (2)
#   SECKILL_TEST_MAIN_JOBS        ctest jobs of the main pass (3: most of its tests wait on
#                                 the stack or on a fault, and shared resources are
#                                 RESOURCE_LOCKs; at 2 jobs it took 1,440 s of the run)
#   SECKILL_TEST_LABELS           labels of the main pass ('unit|integration|faults|browser')
#   SECKILL_TEST_EXCLUDE          labels the main pass leaves to the topology pass
#                                 ('cluster|sentinel|galera': a fault case on the stack's own
#                                 Cluster, such as 0393, runs once, after the Cluster reruns)
#   SECKILL_TEST_TOPO_LABELS      labels of the topology pass ('cluster|sentinel|galera|package|fuzz'; empty: none)
#   SECKILL_TEST_TOPO_JOBS        ctest jobs of the topology pass (4)
#   SECKILL_TEST_TOPO_TIMEOUT_S   cap of the topology pass (1500)
#   SECKILL_TEST_ASAN_LABELS      labels of the sanitizer pass ('unit|integration')
#   SECKILL_TEST_SANITIZE=0       skip the sanitizer pass
#   SECKILL_TEST_DEBUG=0          skip the Debug -Werror build
#   SECKILL_TEST_TIMEOUT_S        cap of the main ctest pass (2400; at 2 jobs it ran 1,440 s)
#   SECKILL_TEST_ASAN_TIMEOUT_S   cap of the sanitizer ctest pass (1200; it ran 600 s and more
#                                 beside the topology pass once the suite reached 107 tests)
#   SECKILL_BUILD_DIR, SECKILL_ASAN_BUILD_DIR, SECKILL_DEBUG_BUILD_DIR
#                                 build dirs (build, build-asan, build-debug)
#   SECKILL_STACK_*               passed to scripts/stack.sh (ports, state dir)
#   SECKILL_REDIS_URL, SECKILL_MYSQL_URL, SECKILL_KAFKA_BROKERS   default: the local stack
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
. "$REPO/scripts/lib/apt.sh"

BUILD_DIR=${SECKILL_BUILD_DIR:-build}
ASAN_DIR=${SECKILL_ASAN_BUILD_DIR:-build-asan}
DEBUG_DIR=${SECKILL_DEBUG_BUILD_DIR:-build-debug}
DEBUG_BUILD=${SECKILL_TEST_DEBUG:-1}
JOBS=${SECKILL_TEST_JOBS:-2}
MAIN_JOBS=${SECKILL_TEST_MAIN_JOBS:-3}
LABELS=${SECKILL_TEST_LABELS:-unit|integration|faults|browser}
EXCLUDE=${SECKILL_TEST_EXCLUDE-cluster|sentinel|galera}
TOPO_LABELS=${SECKILL_TEST_TOPO_LABELS-cluster|sentinel|galera|package|fuzz}
TOPO_JOBS=${SECKILL_TEST_TOPO_JOBS:-4}
TOPO_TIMEOUT_S=${SECKILL_TEST_TOPO_TIMEOUT_S:-2400}
ASAN_LABELS=${SECKILL_TEST_ASAN_LABELS:-unit|integration}
SANITIZE=${SECKILL_TEST_SANITIZE:-1}
TIMEOUT_S=${SECKILL_TEST_TIMEOUT_S:-2400}
ASAN_TIMEOUT_S=${SECKILL_TEST_ASAN_TIMEOUT_S:-2000}
STACK=$REPO/scripts/stack.sh
STACK_LOG_DIR=${SECKILL_STACK_DIR:-$REPO/.stack}/logs

# Build and test dependencies (Debian 12 package names). Tools the shell tests use:
# redis-cli, mysql, curl, ps/pgrep, python3; promtool (package prometheus) for the
# deploy/prometheus rule tests; readelf (binutils) for ops_harden; clang and its
# libFuzzer runtime for the fuzz label; nginx for the gateway test (0008); mariadb-server,
# galera-4 and rsync for the local Galera cluster (label galera, fault cases 0282-0286);
# chromium for the browser test (label browser, DESIGN.md 18), and Debian's nodejs and npm
# for its driver when no node is installed (a node from elsewhere is used as it is: its
# npm comes with it; playwright-core's engines accept Debian 12's Node.js 18 and later).
PKGS=(build-essential cmake pkg-config librdkafka-dev libhiredis-dev
      default-libmysqlclient-dev libcjson-dev libmicrohttpd-dev libssl-dev check
      redis-tools mariadb-client curl procps python3 prometheus binutils
      clang libclang-rt-14-dev nginx mariadb-server galera-4 rsync chromium)
command -v node >/dev/null 2>&1 || PKGS+=(nodejs npm)

T_START=$SECONDS
SUMMARY=()
FAILED=0
STACK_BG=
TOPO_BG=
ASAN_BG=
DEBUG_BG=
TO_STOP=()

say() { printf '\n==> %s\n' "$*"; }

# record NAME STATUS SECONDS [NOTE]
record() {
        SUMMARY+=("$(printf '%-4s  %-44s %5s s  %s' "$2" "$1" "$3" "${4:-}")")
        [[ $2 == PASS || $2 == SKIP ]] || FAILED=1
}

print_summary() {
        local line
        printf '\n==================== seckill test summary ====================\n'
        for line in "${SUMMARY[@]}"; do
                printf '%s\n' "$line"
        done
        if [[ $FAILED -eq 0 ]]; then
                printf 'RESULT: PASS (%d s)\n' $((SECONDS - T_START))
        else
                printf 'RESULT: FAIL (%d s)\n' $((SECONDS - T_START))
        fi
}

cleanup() {
        local rc=$?
        trap - EXIT INT TERM
        if [[ -n $STACK_BG ]] && kill -0 "$STACK_BG" 2>/dev/null; then
                kill "$STACK_BG" 2>/dev/null || true
                wait "$STACK_BG" 2>/dev/null || true
        fi
        if [[ -n $ASAN_BG ]] && kill -0 "$ASAN_BG" 2>/dev/null; then
                kill -- "-$ASAN_BG" 2>/dev/null || kill "$ASAN_BG" 2>/dev/null || true
                wait "$ASAN_BG" 2>/dev/null || true
        fi
        if [[ -n $DEBUG_BG ]] && kill -0 "$DEBUG_BG" 2>/dev/null; then
                kill -- "-$DEBUG_BG" 2>/dev/null || kill "$DEBUG_BG" 2>/dev/null || true
                wait "$DEBUG_BG" 2>/dev/null || true
        fi
        if [[ -n $TOPO_BG ]] && kill -0 "$TOPO_BG" 2>/dev/null; then
                kill -- "-$TOPO_BG" 2>/dev/null || kill "$TOPO_BG" 2>/dev/null || true
                wait "$TOPO_BG" 2>/dev/null || true
        fi
        if [[ ${#TO_STOP[@]} -gt 0 ]]; then
                if [[ ${SECKILL_KEEP_STACK:-0} == 1 ]]; then
                        say "SECKILL_KEEP_STACK=1: leaving ${TO_STOP[*]} running (scripts/stack.sh down stops them)"
                else
                        say "stopping what this run started: ${TO_STOP[*]}"
                        "$STACK" down "${TO_STOP[@]}" || rc=1
                fi
        fi
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------
step_deps() {
        local missing=()
        mapfile -t missing < <(sk_apt_missing "${PKGS[@]}")
        if [[ ${#missing[@]} -eq 0 ]]; then
                echo "all ${#PKGS[@]} packages present"
                return 0
        fi
        echo "installing ${missing[*]}"
        sk_apt_install "" "${missing[@]}"
}

# configure_and_build DIR [cmake args...]
step_build() {
        local dir=$1
        shift
        cmake -S . -B "$dir" -DSK_WERROR=ON -DSK_FAILPOINTS=ON "$@" || return 1
        cmake --build "$dir" -j "$JOBS" || return 1
}

# step_ctest DIR LABELS TIMEOUT_S [EXCLUDE] [CTEST_JOBS]: the names of failed tests go to
# $CTEST_FAILED.
CTEST_FAILED=
step_ctest() {
        local dir=$1 labels=$2 timeout_s=$3 exclude=${4:-} jobs=${5:-$JOBS} rc=0
        local ex=()
        [[ -n $exclude ]] && ex=(-LE "$exclude")
        CTEST_FAILED=
        timeout -k 30 "$timeout_s" ctest --test-dir "$dir" --output-on-failure --no-tests=error \
                -L "$labels" "${ex[@]}" -j "$jobs" </dev/null || rc=$?
        if [[ $rc -ne 0 && -f $dir/Testing/Temporary/LastTestsFailed.log ]]; then
                CTEST_FAILED=$(cut -d: -f2- "$dir/Testing/Temporary/LastTestsFailed.log" | tr '\n' ' ')
        fi
        [[ $rc -eq 124 || $rc -eq 137 ]] && CTEST_FAILED="TIMED OUT after ${timeout_s} s; $CTEST_FAILED"
        return "$rc"
}

# Endpoints of the local stack for the tests (sk_test_conf() reads SECKILL_*), unless
# the caller set them.
export_stack_env() {
        local line kv key
        while read -r line; do
                kv=${line#export }
                key=${kv%%=*}
                if [[ -z ${!key:-} ]]; then
                        export "${kv?}"
                fi
                echo "$key=${!key}"
        done < <("$STACK" env)
}

# ---------------------------------------------------------------------------------------
t=$SECONDS
say "dependencies"
if step_deps; then
        record "dependencies" PASS $((SECONDS - t))
else
        record "dependencies" FAIL $((SECONDS - t)) "apt-get failed"
        print_summary
        exit 1
fi

# Services already up are left alone at exit; the others are stopped.
say "stack: current state"
before=$("$STACK" status 2>/dev/null || true)
printf '%s\n' "$before"
for svc in kafka mariadb redis; do
        awk -v s="$svc" '$1 == s && $3 == "up" {found = 1} END {exit !found}' <<<"$before" || TO_STOP+=("$svc")
done
# The Redis Cluster and Sentinel topologies are started by the tests that need them
# (label cluster / sentinel), the Galera cluster by the galera_ fault cases; stop them at
# exit unless they were up before this run.
for svc in cluster sentinel galera; do
        awk -v s="$svc" '$1 ~ "^"s && $3 == "up" {found = 1} END {exit !found}' <<<"$before" || TO_STOP+=("$svc")
done

say "stack: scripts/stack.sh up (in the background while building)"
t_stack=$SECONDS
stack_out=$(mktemp)
"$STACK" up >"$stack_out" 2>&1 </dev/null &
STACK_BG=$!

t=$SECONDS
say "build: $BUILD_DIR"
build_ok=1
if step_build "$BUILD_DIR"; then
        record "build $BUILD_DIR (-DSK_WERROR=ON)" PASS $((SECONDS - t))
else
        build_ok=0
        record "build $BUILD_DIR (-DSK_WERROR=ON)" FAIL $((SECONDS - t))
fi

say "stack: waiting for scripts/stack.sh up"
stack_rc=0
wait "$STACK_BG" || stack_rc=$?
STACK_BG=
cat "$stack_out"
rm -f "$stack_out"
if [[ $stack_rc -ne 0 ]]; then
        record "stack up" FAIL $((SECONDS - t_stack)) "logs: $STACK_LOG_DIR"
        record "ctest $BUILD_DIR" SKIP 0 "no stack"
        print_summary
        exit 1
fi
record "stack up" PASS $((SECONDS - t_stack))
export_stack_env

# bg_build OUT JOBS DIR CMAKE_ARG...: step_build of DIR at nice 19 in the background, in a
# process group of its own (cleanup kills it whole); "rc seconds" goes to OUT when it ends,
# its output to OUT.log. BG_PID: its pid.
bg_build() {
        local out=$1 jobs=$2 dir=$3
        shift 3
        set -m
        ( t0=$SECONDS; rc=0
          nice -n 19 bash -c "$(declare -f step_build); JOBS=$jobs step_build '$dir' $*" \
                  </dev/null >"$out.log" 2>&1 || rc=$?
          echo "$rc $((SECONDS - t0))" >"$out" ) &
        BG_PID=$!
        set +m
}

# The sanitizer build, niced, in the background during the main pass (its row is recorded
# when the sanitizer pass starts).
ASAN_OUT=$(mktemp)
if [[ $SANITIZE == 1 ]]; then
        say "build: $ASAN_DIR (-DSK_SANITIZE=ON), nice 19, in the background during the main pass"
        bg_build "$ASAN_OUT" "$JOBS" "$ASAN_DIR" -DSK_SANITIZE=ON
        ASAN_BG=$BG_PID
fi

# The Debug build with -Werror (compile only: it runs no test), niced, one job, in the
# background during the main pass; its row is recorded before the summary.
DEBUG_OUT=$(mktemp)
if [[ $DEBUG_BUILD == 1 ]]; then
        say "build: $DEBUG_DIR (-DCMAKE_BUILD_TYPE=Debug -DSK_WERROR=ON), nice 19, in the background"
        bg_build "$DEBUG_OUT" 1 "$DEBUG_DIR" -DCMAKE_BUILD_TYPE=Debug
        DEBUG_BG=$BG_PID
fi
debug_record() {
        local rc secs
        if [[ $DEBUG_BUILD != 1 ]]; then
                record "build $DEBUG_DIR (Debug, -Werror)" SKIP 0 "SECKILL_TEST_DEBUG=$DEBUG_BUILD"
                return 0
        fi
        wait "$DEBUG_BG" || true
        DEBUG_BG=
        read -r rc secs <"$DEBUG_OUT" || { rc=1 secs=0; }
        if [[ $rc -eq 0 ]]; then
                record "build $DEBUG_DIR (Debug, -Werror, background)" PASS "$secs"
        else
                say "build: $DEBUG_DIR (Debug, -Werror) failed"
                grep -E 'error|Error' "$DEBUG_OUT.log" | head -40 || true
                record "build $DEBUG_DIR (Debug, -Werror, background)" FAIL "$secs" "see the errors above"
        fi
        rm -f "$DEBUG_OUT" "$DEBUG_OUT.log"
}

# The browser test's driver (label browser): npm's playwright-core at the pinned version,
# under $BUILD_DIR/browser-node (the tests run the same script, which then does nothing).
if [[ $build_ok -eq 1 && $LABELS == *browser* ]]; then
        t=$SECONDS
        say "browser driver: tests/browser/install.sh $BUILD_DIR"
        if bash tests/browser/install.sh "$BUILD_DIR"; then
                record "browser driver (playwright-core, npm ci)" PASS $((SECONDS - t))
        else
                record "browser driver (playwright-core, npm ci)" FAIL $((SECONDS - t)) "npm ci failed: the browser tests fail too"
        fi
fi

t=$SECONDS
if [[ $build_ok -eq 1 ]]; then
        say "tests: ctest -L '$LABELS' -LE '$EXCLUDE' -j $MAIN_JOBS in $BUILD_DIR"
        if step_ctest "$BUILD_DIR" "$LABELS" "$TIMEOUT_S" "$EXCLUDE" "$MAIN_JOBS"; then
                record "ctest $BUILD_DIR [$LABELS]" PASS $((SECONDS - t))
        else
                record "ctest $BUILD_DIR [$LABELS]" FAIL $((SECONDS - t)) "failed: ${CTEST_FAILED:-see $BUILD_DIR/Testing/Temporary/LastTest.log}"
        fi
else
        record "ctest $BUILD_DIR [$LABELS]" SKIP 0 "build failed"
fi

# The topology pass (labels cluster|sentinel|galera, package, fuzz) in the background, its own ctest run in
# $BUILD_DIR with $TOPO_JOBS jobs, while the sanitizer pass builds and runs; its output is
# printed and its row recorded after the sanitizer pass.
TOPO_OUT=$(mktemp)
topo_pass() {
        local t0=$SECONDS rc=0
        timeout -k 30 "$TOPO_TIMEOUT_S" ctest --test-dir "$BUILD_DIR" --output-on-failure \
                --no-tests=error -L "$TOPO_LABELS" -j "$TOPO_JOBS" </dev/null >"$TOPO_OUT.log" 2>&1 || rc=$?
        echo "$rc $((SECONDS - t0))" >"$TOPO_OUT"
}
topo_record() {
        local rc secs failed=""
        [[ -n $TOPO_BG ]] || return 0
        wait "$TOPO_BG" || true
        TOPO_BG=
        say "tests: ctest -L '$TOPO_LABELS' -j $TOPO_JOBS in $BUILD_DIR (ran beside the sanitizer pass)"
        cat "$TOPO_OUT.log"
        read -r rc secs <"$TOPO_OUT" || { rc=1 secs=0; }
        if [[ $rc -eq 0 ]]; then
                record "ctest $BUILD_DIR [$TOPO_LABELS] -j$TOPO_JOBS" PASS "$secs"
        else
                [[ -f $BUILD_DIR/Testing/Temporary/LastTestsFailed.log ]] &&
                        failed=$(cut -d: -f2- "$BUILD_DIR/Testing/Temporary/LastTestsFailed.log" | tr '\n' ' ')
                [[ $rc -eq 124 || $rc -eq 137 ]] && failed="TIMED OUT after ${TOPO_TIMEOUT_S} s; $failed"
                record "ctest $BUILD_DIR [$TOPO_LABELS] -j$TOPO_JOBS" FAIL "$secs" "failed: ${failed:-see $TOPO_OUT.log}"
        fi
        rm -f "$TOPO_OUT" "$TOPO_OUT.log"
}
if [[ -n $TOPO_LABELS && $build_ok -eq 1 ]]; then
        say "tests: ctest -L '$TOPO_LABELS' -j $TOPO_JOBS in $BUILD_DIR, in the background"
        set -m
        topo_pass &
        TOPO_BG=$!
        set +m
elif [[ -n $TOPO_LABELS ]]; then
        record "ctest $BUILD_DIR [$TOPO_LABELS]" SKIP 0 "build failed"
fi

if [[ $SANITIZE == 1 ]]; then
        # First error is fatal; leaks are errors. A suppressions file for leaks inside
        # third-party libraries may live in tests/sanitizer/lsan.supp.
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
        if [[ -z ${LSAN_OPTIONS:-} && -f $REPO/tests/sanitizer/lsan.supp ]]; then
                export LSAN_OPTIONS=suppressions=$REPO/tests/sanitizer/lsan.supp:print_suppressions=0
        fi
        t=$SECONDS
        say "build: $ASAN_DIR (-DSK_SANITIZE=ON): waiting for the background build"
        wait "$ASAN_BG" || true
        ASAN_BG=
        cat "$ASAN_OUT.log"
        read -r asan_rc asan_secs <"$ASAN_OUT" || { asan_rc=1 asan_secs=0; }
        rm -f "$ASAN_OUT" "$ASAN_OUT.log"
        if [[ $asan_rc -eq 0 ]]; then
                record "build $ASAN_DIR (-DSK_SANITIZE=ON, background)" PASS "$asan_secs"
                t=$SECONDS
                say "tests: ctest -L '$ASAN_LABELS' in $ASAN_DIR (ASAN_OPTIONS=$ASAN_OPTIONS)"
                if step_ctest "$ASAN_DIR" "$ASAN_LABELS" "$ASAN_TIMEOUT_S" "$EXCLUDE"; then
                        record "ctest $ASAN_DIR [$ASAN_LABELS]" PASS $((SECONDS - t))
                else
                        record "ctest $ASAN_DIR [$ASAN_LABELS]" FAIL $((SECONDS - t)) "failed: ${CTEST_FAILED:-see $ASAN_DIR/Testing/Temporary/LastTest.log}"
                fi
        else
                record "build $ASAN_DIR (-DSK_SANITIZE=ON, background)" FAIL "$asan_secs"
                record "ctest $ASAN_DIR [$ASAN_LABELS]" SKIP 0 "build failed"
        fi
else
        record "sanitizer pass" SKIP 0 "SECKILL_TEST_SANITIZE=$SANITIZE"
fi

topo_record
debug_record

print_summary
[[ $FAILED -eq 0 ]]
