#!/usr/bin/env bash
# On a GPU host (see ../shared/gpu/README.md: the repository with .gpu/ prepared): the whole
# gpu-labelled suite (tests, examples, CMake consumers) under each compute-sanitizer tool, with
# API error reporting on (the tools' default) and --error-exitcode 1, through .gpu/run-tests.sh
# (FDLINK_SANITIZE=<tool>, which builds build-gpu and leaves out the label fault: deliberate
# faults). racecheck, synccheck and initcheck do not support CUDA dynamic parallelism (Compute
# Sanitizer, known limitations), so the tests labelled cdp (child kernels through cudadevrt) are
# left out of those three and run under memcheck only. Then the fault tests, without a sanitizer.
# Prints one line per run: the tests passed and the reports ctest's memory check counted; the
# whole output of each run is in build-gpu/sanitize-<tool>.log (and in $OUT when set).
#   bash .ci/gpu-sanitize.sh [tool...]      (default: memcheck racecheck initcheck synccheck)
# FDLINK_SANITIZE_CTEST_ARGS adds ctest arguments to every run (e.g. "-j 8": the tests of one
# tool in parallel); FDLINK_SANITIZE_TIMEOUT (seconds) bounds each tool's run.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .gpu/run-tests.sh ] || { echo "gpu-sanitize: no .gpu/run-tests.sh (run ../shared/gpu/prepare.sh first)" >&2; exit 2; }
tools=("$@")
[ ${#tools[@]} = 0 ] && tools=(memcheck racecheck initcheck synccheck)
summary=()
status=0
for tool in "${tools[@]}"; do
  args=(-L gpu)
  if [ "$tool" != memcheck ]; then
    # the names of the cdp tests, once build-gpu exists (a first run configures it)
    [ -d build-gpu ] || bash .gpu/run-tests.sh -N >/dev/null 2>&1
    cdp=$(ctest --test-dir build-gpu -N -L cdp 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p' | paste -sd'|')
    [ -n "$cdp" ] && args+=(-E "^($cdp)\$")
  fi
  log=build-gpu/sanitize-$tool.log
  mkdir -p build-gpu
  # shellcheck disable=SC2086 # the extra arguments are words
  FDLINK_SANITIZE=$tool ${FDLINK_SANITIZE_TIMEOUT:+timeout $FDLINK_SANITIZE_TIMEOUT} \
    bash .gpu/run-tests.sh "${args[@]}" ${FDLINK_SANITIZE_CTEST_ARGS:-} > "$log" 2>&1
  rc=$?
  [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp "$log" "$OUT/sanitize-$tool.log"
  passed=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
  # ctest -T memcheck: "Memory checking results:" then one "<kind> - <count>" line per kind
  reports=$(sed -n '/Memory checking results:/,$p' "$log" | grep -E ' - [0-9]+$' | paste -sd';')
  [ -z "$reports" ] && reports="0 reports"
  line="$tool: ${passed:-no ctest summary (see $log)}; ${reports}; exit $rc"
  echo "gpu-sanitize: $line"
  summary+=("$line")
  [ "$rc" = 0 ] || status=1
done
log=build-gpu/fault-tests.log
# shellcheck disable=SC2086
bash .gpu/run-tests.sh -L fault ${FDLINK_SANITIZE_CTEST_ARGS:-} > "$log" 2>&1
rc=$?
[ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp "$log" "$OUT/fault-tests.log"
line="fault (no sanitizer): $(grep -E '^[0-9]+% tests passed' "$log" | tail -1); exit $rc"
echo "gpu-sanitize: $line"
summary+=("$line")
[ "$rc" = 0 ] || status=1
printf '%s\n' "${summary[@]}" > build-gpu/sanitize-summary.txt
[ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp build-gpu/sanitize-summary.txt "$OUT/"
exit "$status"
