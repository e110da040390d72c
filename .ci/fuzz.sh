#!/usr/bin/env bash
# Fuzzing: the four libFuzzer harnesses of tests/fuzz (sig, decl, ptx: the abi/ parsers; bin:
# the binary readers), built with clang under ASan+UBSan. Each first replays the committed corpus
# (tests/fuzz/corpus/<name>), then fuzzes for FDLINK_FUZZ_SECONDS seconds (default 15, so a minute
# in all) from it, in a scratch corpus. Prints executions per harness; any crash fails the run
# and leaves the crashing input under build-fuzz/crashes/ (add it to the corpus with a unit test
# that pins the fix). Without clang with libFuzzer the fuzzing is skipped (the corpus replay runs
# in every ctest run anyway: fuzz_replay_*). By hand, for longer: FDLINK_FUZZ_SECONDS=600.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FDLINK_FUZZ_SECONDS:-15}
build=${FDLINK_FUZZ_DIR:-build-fuzz}
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
  echo "fuzz.sh: clang not found: fuzzing skipped (apt-get install clang-14 libclang-rt-14-dev)"
  exit 0
fi
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > /tmp/fdl-fuzz-probe.c
if ! "$cc" -fsanitize=fuzzer /tmp/fdl-fuzz-probe.c -o /tmp/fdl-fuzz-probe 2>/dev/null; then
  rm -f /tmp/fdl-fuzz-probe.c
  echo "fuzz.sh: $cc cannot link -fsanitize=fuzzer: fuzzing skipped (apt-get install libclang-rt-14-dev)"
  exit 0
fi
rm -f /tmp/fdl-fuzz-probe.c /tmp/fdl-fuzz-probe
CC=$cc cmake -S . -B "$build" -G Ninja -DFDLINK_FUZZ=ON -DFDLINK_BUILD_DEVICE=OFF \
  -DFDLINK_REQUIRE_TESTS=ON >"$build.log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target fuzz_sig fuzz_decl fuzz_ptx fuzz_bin >>"$build.log" 2>&1 ||
  { cat "$build.log" >&2; echo "fuzz.sh: build failed" >&2; exit 1; }
mkdir -p "$build/crashes"
failed=0 total=0
for t in sig decl ptx bin; do
  exe=$build/tests/fuzz/fuzz_$t
  seeds=tests/fuzz/corpus/$t
  args=(-max_len=65536)
  case $t in
    sig) args=(-max_len=8192 -dict=tests/fuzz/sig.dict) ;;
    decl) args=(-max_len=8192 -dict=tests/fuzz/decl.dict) ;;
    ptx) args=(-max_len=65536 -dict=tests/fuzz/ptx.dict) ;;
  esac
  if ! "$exe" -runs=0 "$seeds" >"$build/replay_$t.log" 2>&1; then
    echo "fuzz.sh: $t: the corpus crashes the harness:" >&2
    tail -30 "$build/replay_$t.log" >&2
    failed=1
    continue
  fi
  work=$(mktemp -d)
  "$exe" "${args[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t-" "$work" "$seeds" >"$build/fuzz_$t.log" 2>&1
  rc=$?
  rm -rf "$work"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz_$t.log" | tail -1)
  total=$((total + ${execs:-0}))
  if [ "$rc" != 0 ]; then
    echo "fuzz.sh: $t: CRASH after ${execs:-?} executions; input in $build/crashes/:" >&2
    grep -E "ERROR|SUMMARY|property failed" "$build/fuzz_$t.log" | head -5 >&2
    failed=1
  else
    echo "fuzz.sh: $t: $seconds s, ${execs:-?} executions, 0 crashes (corpus $(ls "$seeds" | wc -l) seeds)"
  fi
done
echo "fuzz.sh: 4 harnesses, $((4 * seconds)) s, $total executions, $([ $failed = 0 ] && echo 0 || echo some) crashes"
exit "$failed"
