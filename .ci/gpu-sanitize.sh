#!/usr/bin/env bash
# On a GPU host (see tools/gpu/README.md: the repository with .gpu/ prepared): the whole
# gpu-labelled suite (tests, examples, CMake consumers) under each compute-sanitizer tool, with
# API error reporting on (the tools' default) and --error-exitcode 1, through .gpu/run-tests.sh
# (FDLINK_SANITIZE=<tool>, which builds build-gpu and leaves out the label fault: deliberate
# faults). racecheck, synccheck and initcheck do not support CUDA dynamic parallelism (Compute
# Sanitizer, known limitations), so the tests labelled cdp (child kernels through cudadevrt) are
# left out of those three and run under memcheck only. Then the fault tests, without a sanitizer.
# First, without a sanitizer, the setup tests of the fixtures the gpu tests require (the CMake
# consumers' configure-and-build steps, cmake_*_build: hundreds of compiler processes, no kernel,
# minutes each when every process is traced); each tool's run then adds no fixture's tests
# (ctest -FA '.*') and runs the consumers on the trees those steps built.
# Prints one line per run: the tests passed, the reports ctest's memory check counted and the
# test logs that carry the tool's own verdict (a run with a log without one fails); the
# whole output of each run is in build-gpu/sanitize-<tool>.log (and in $OUT when set), the
# setup run's in build-gpu/sanitize-setup.log.
#   bash .ci/gpu-sanitize.sh [tool...]      (default: memcheck racecheck initcheck synccheck)
# FDLINK_SANITIZE_CTEST_ARGS adds ctest arguments to every run (e.g. "-j 8": the tests of one
# tool in parallel); FDLINK_SANITIZE_TIMEOUT (seconds) bounds each tool's run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
[ -f .gpu/run-tests.sh ] || { echo "gpu-sanitize: no .gpu/run-tests.sh (run tools/gpu/prepare.sh first)" >&2; exit 2; }
tools=("$@")
[ ${#tools[@]} = 0 ] && tools=(memcheck racecheck initcheck synccheck)
summary=()
status=0
names() { ctest --test-dir build-gpu -N "$@" 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p'; }
# build-gpu configured and built (run-tests.sh does that first), then the setup tests: those that
# ctest adds to the gpu label's tests for their fixtures, and that -FA '.*' leaves out
bash .gpu/run-tests.sh -N >/dev/null 2>&1
setup=$(comm -23 <(names -L gpu | sort) <(names -L gpu -FA '.*' | sort) | paste -sd'|')
# A run without a sanitizer: $1 its name, $2 its log's name, the rest ctest arguments.
plain_run() {
  local what=$1 log=build-gpu/$2.log rc
  shift 2
  # shellcheck disable=SC2086 # the extra arguments are words
  bash .gpu/run-tests.sh "$@" ${FDLINK_SANITIZE_CTEST_ARGS:-} > "$log" 2>&1
  rc=$?
  [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp "$log" "$OUT/"
  line="$what (no sanitizer): $(grep -E '^[0-9]+% tests passed' "$log" | tail -1); exit $rc"
  echo "gpu-sanitize: $line"
  summary+=("$line")
  [ "$rc" = 0 ] || status=1
}
mkdir -p build-gpu
[ -n "$setup" ] && plain_run setup sanitize-setup -R "^($setup)\$"
for tool in "${tools[@]}"; do
  args=(-L gpu -FA '.*')
  if [ "$tool" != memcheck ]; then
    # the names of the cdp tests
    cdp=$(names -L cdp | paste -sd'|')
    [ -n "$cdp" ] && args+=(-E "^($cdp)\$")
  fi
  log=build-gpu/sanitize-$tool.log
  # each test's compute-sanitizer output (ctest: Testing/Temporary/MemoryChecker.<n>.log), this
  # tool's alone
  rm -f build-gpu/Testing/Temporary/MemoryChecker.*.log
  # shellcheck disable=SC2086 # the extra arguments are words
  FDLINK_SANITIZE=$tool ${FDLINK_SANITIZE_TIMEOUT:+timeout $FDLINK_SANITIZE_TIMEOUT} \
    bash .gpu/run-tests.sh "${args[@]}" ${FDLINK_SANITIZE_CTEST_ARGS:-} > "$log" 2>&1
  rc=$?
  [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp "$log" "$OUT/sanitize-$tool.log"
  passed=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
  # ctest -T memcheck: "Memory checking results:" then one "<kind> - <count>" line per kind
  reports=$(sed -n '/Memory checking results:/,$p' "$log" | grep -E ' - [0-9]+$' | paste -sd';')
  [ -z "$reports" ] && reports="0 reports"
  # the tool's own verdicts: every test's log should end with one (ERROR SUMMARY: N errors, or
  # racecheck's RACECHECK SUMMARY: N hazards displayed); a log without one was not traced
  traced=$(grep -lE '(ERROR|RACECHECK) SUMMARY: ' build-gpu/Testing/Temporary/MemoryChecker.*.log 2>/dev/null | wc -l)
  nlogs=$(ls build-gpu/Testing/Temporary/MemoryChecker.*.log 2>/dev/null | wc -l)
  verdicts=$(cat build-gpu/Testing/Temporary/MemoryChecker.*.log 2>/dev/null |
    grep -oE '(ERROR|RACECHECK) SUMMARY: [0-9]+ (errors|hazards)' | sed -E 's/.*: //' |
    sort | uniq -c | awk '{printf "%s%d x %s %s", (NR > 1 ? ", " : ""), $1, $2, $3}')
  line="$tool: ${passed:-no ctest summary (see $log)}; ${reports}; $traced of $nlogs test logs with the tool's summary (${verdicts:-none}); exit $rc"
  echo "gpu-sanitize: $line"
  summary+=("$line")
  [ "$rc" = 0 ] || status=1
  # a test whose log has no verdict ran untraced: the run proves nothing for it
  if [ "$nlogs" = 0 ] || [ "$traced" != "$nlogs" ]; then
    echo "gpu-sanitize: $tool: $((nlogs - traced)) of $nlogs test logs without the tool's summary (untraced)" >&2
    status=1
  fi
done
plain_run fault fault-tests -L fault
printf '%s\n' "${summary[@]}" > build-gpu/sanitize-summary.txt
[ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp build-gpu/sanitize-summary.txt "$OUT/"
exit "$status"
