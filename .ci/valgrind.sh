#!/usr/bin/env bash
# Valgrind memcheck over a handful of CLI commands (successes and failures of each subcommand)
# and unit binaries (the binary readers, declaration loading, PTX limits, the host runtime on the
# mock driver), from the build of tests/run.sh. Any error or definite/indirect leak fails
# (--error-exitcode); suppressions (tests/sanitize/valgrind.supp) cover nvJitLink only.
# Usage: bash .ci/valgrind.sh [build folder, default build-tests]
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build-tests}
command -v valgrind >/dev/null 2>&1 || { echo "valgrind.sh: valgrind is not installed" >&2; exit 1; }
fdlink=$root/$build/cli/fdlink
fx=$root/$build/tests/link/fixtures
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --suppressions="$root/tests/sanitize/valgrind.supp")
runs=0 findings=0
# run WANT_EXIT COMMAND...: the command's own exit status must be WANT_EXIT; 99 is a finding
run() {
  local want=$1; shift
  runs=$((runs + 1))
  "${vg[@]}" "$@" >"$scratch/out" 2>"$scratch/err"
  local rc=$?
  if [ "$rc" = 99 ] || grep -q '^==[0-9]*==' "$scratch/err"; then
    findings=$((findings + 1))
    echo "valgrind: FINDING in: $*" >&2
    cat "$scratch/err" >&2
  elif [ "$rc" != "$want" ]; then
    findings=$((findings + 1))
    echo "valgrind: exit $rc, not $want: $*" >&2
    cat "$scratch/err" >&2
  fi
}
# run_unit BINARY ARGS...: a Criterion binary; it forks (and re-executes) for each test
run_unit() {
  local saved=("${vg[@]}")
  vg+=(--trace-children=yes)
  run 0 "$@"
  vg=("${saved[@]}")
}
cd "$root/tests/data"
run 0 "$fdlink" check --decl check/functions.decl check/conforming.ptx check/caller.ptx
run 1 "$fdlink" check --decl check/functions.decl check/wrong_width.ptx
run 1 "$fdlink" check --decl cli/bad.decl check/conforming.ptx
run 0 "$fdlink" header check/functions.decl -o "$scratch/f.cuh"
run 1 "$fdlink" header cli/bad.decl -o "$scratch/bad.cuh"
run 0 "$fdlink" inspect "$fx/mul.fatbin" "$fx/mul_lz4.fatbin" "$fx/libmul.a" "$fx/mul.cubin" \
  "$fx/mul.ltoir" "$fx/mul.o" link/caller.ptx
run 1 "$fdlink" inspect link/logo.png
run 0 "$fdlink" embed -o "$scratch/e.c" "$fx/mul.cubin" app=link/mul.ptx
run 2 "$fdlink" link -arch=sm_90 -o link/mul.ptx link/caller.ptx link/mul.ptx
run 1 "$fdlink" link -arch=sm_90 -o "$scratch/t.cubin" link/caller.ptx link/empty.ptx
run 0 "$fdlink" link -arch=sm_90 --decl link/mul.decl -o "$scratch/app.cubin" link/caller.ptx \
  link/mul.ptx
run 1 "$fdlink" link -arch=sm_90 -o "$scratch/u.cubin" check/caller.ptx check/missing.ptx
# NVRTC's diagnostics parsed into records, written as SARIF by the JSON writer
run 1 "$fdlink" link -arch=sm_90 -I diag/inc --diagnostics-format=sarif -o "$scratch/c.cubin" \
  diag/header_error.cu
export FDLINK_LIBCUDA=$root/$build/tests/gpu/libfdlink_mock_cuda.so
run_unit "$root/$build/tests/test_link" --jobs 1 --filter 'link_container/*'
run_unit "$root/$build/tests/test_decl" --jobs 1 --filter 'decl_load/*'
run_unit "$root/$build/tests/test_ptx" --jobs 1 --filter 'ptx_limits/*'
run_unit "$root/$build/tests/gpu/test_host_mock" --jobs 1 --filter '*/*without_refused_calls'
echo "valgrind: $runs runs (12 CLI commands, 4 unit binaries), $findings with findings"
[ "$findings" = 0 ]
