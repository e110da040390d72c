#!/usr/bin/env bash
# The unit and cli labels (unit tests, CLI golden tests, the catalogue of bad inputs, the fuzz
# corpus replay, the mock-driver host tests) built with FDLINK_SANITIZE=address,undefined in
# build-asan: every ASan/UBSan/LeakSanitizer finding is fatal, so a passing run has 0 findings.
# LeakSanitizer suppressions (tests/sanitize/lsan.supp) cover nvJitLink only.
# Usage: bash .ci/sanitize.sh [ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FDLINK_ASAN_DIR:-build-asan}
cmake -S . -B "$build" -G Ninja -DFDLINK_WERROR=ON -DFDLINK_REQUIRE_TESTS=ON \
  -DFDLINK_BUILD_DEVICE=OFF -DFDLINK_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j "$(nproc)" >"$build.log" 2>&1 || { tail -50 "$build.log"; exit 1; }
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitize/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rc=0
ctest --test-dir "$build" -L 'unit|cli' -j "$(nproc)" --output-on-failure "$@" > "$build/ctest.log" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
  # set -e would end the script before the log is shown: print the failures' output first.
  grep -E -B2 -A40 '\*\*\*(Failed|Timeout|Exception)|Failed +[0-9.]+ sec' "$build/ctest.log" | tail -150 || true
fi
tail -8 "$build/ctest.log"
n=$(grep -c ' Test *#' "$build/ctest.log" || true)
[ "$rc" = 0 ] && echo "sanitize: ASan+UBSan+LSan: $n tests (labels unit, cli), 0 findings"
exit "$rc"
