#!/usr/bin/env bash
# The user's CUDA settings and tools (label cmake), on tests/cmake/settings: a device library that
# names no architecture, flags or compiler.
# usage: settings.sh MODE GENERATOR FDLINK_BUILD_DIR WORK_DIR
#   settings  CMAKE_CUDA_ARCHITECTURES in each of CMake's forms (NN, NN-real, NN-virtual, all,
#             all-major, native, OFF) and CUDAARCHS decide the architectures of every nvcc
#             command; a build with CMAKE_CUDA_COMPILER and CMAKE_CUDA_HOST_COMPILER (wrappers
#             that log their calls), CMAKE_CUDA_FLAGS and CMAKE_CUDA_FLAGS_RELEASE uses all four,
#             and its fatbin holds sm_80 and sm_90 code and compute_90 PTX (80-real;90); with
#             CMAKE_BUILD_TYPE=Debug the Release flags are absent and the build fails
#   tools     a project that enables CUDA: its own CUDA targets (PTX, an -rdc static library)
#             handed to fdlink_check and fdlink_link; compile_commands.json lists the device
#             sources with the generated header force-included, and `clangd --check` on a caller of a foreign
#             function reports no error (it reports the call undeclared without the header);
#             skipped (77) without clangd
set -euo pipefail
mode=$1 gen=$2 build=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
log="$work/log"
fail() { echo "settings test: $*"; exit 1; }
n=0
# configure the project in a fresh tree ($dir); the rest are cmake arguments
cfg() {
  n=$((n + 1))
  dir="$work/b$n"
  cmake -S "$here/settings" -B "$dir" -G "$gen" -Dfdlink_DIR="$build" "$@" >"$log" 2>&1
}
commands() { # the build's commands, one a line
  if [ "$gen" = Ninja ]; then ninja -C "$dir" -t commands; else make -C "$dir" -n 2>/dev/null; fi
}
has() { grep -qF -- "$1" <<<"$cmds" || fail "${what}: no command has '$1'"; }
hasnt() { ! grep -qF -- "$1" <<<"$cmds" || fail "${what}: a command has '$1'"; }
logsays() { tr -s ' \n' '  ' <"$log" | grep -qF -- "$1"; } # CMake wraps its messages
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

case "$mode" in
settings)
  unset CUDAARCHS CUDAFLAGS CUDACXX CUDAHOSTCXX
  what="no setting"
  cfg || { cat "$log"; fail "$what: configure failed"; }
  cmds=$(commands)
  has "-arch=compute_90 "; has "-arch=sm_90 "; hasnt "compute_80"
  echo "no setting: 90"

  what="CMAKE_CUDA_ARCHITECTURES=80-real;90"
  cfg "-DCMAKE_CUDA_ARCHITECTURES=80-real;90" || { cat "$log"; fail "$what: configure failed"; }
  cmds=$(commands)
  has "-arch=compute_80 "; has "-arch=sm_80 "; has "-arch=compute_90 "; has "-arch=sm_90 "
  has "-gencode=arch=compute_80,code=sm_80"; has "-gencode=arch=compute_90,code=[sm_90,compute_90]"
  hasnt "code=compute_80"
  echo "$what: PTX and cubins for 80 and 90, the fatbin's code sm_80 (real) and sm_90 + compute_90"

  what="CUDAARCHS=75-virtual"
  CUDAARCHS=75-virtual cfg || { cat "$log"; fail "$what: configure failed"; }
  cmds=$(commands)
  has "-arch=compute_75 "; hasnt "sm_75"; has "-gencode=arch=compute_75,code=compute_75"; hasnt "compute_90"
  echo "$what: PTX only, no cubin"

  what="CMAKE_CUDA_ARCHITECTURES wins over CUDAARCHS"
  CUDAARCHS=75 cfg -DCMAKE_CUDA_ARCHITECTURES=86 || { cat "$log"; fail "$what: configure failed"; }
  cmds=$(commands)
  has "-arch=sm_86 "; hasnt "compute_75"
  echo "$what"

  supported=$("$nvcc" --list-gpu-code | grep -E '^sm_[0-9]+$' | sed 's/sm_//' | sort -n)
  newest=$(tail -1 <<<"$supported")
  for form in all all-major; do
    what="CMAKE_CUDA_ARCHITECTURES=$form"
    cfg -DCMAKE_CUDA_ARCHITECTURES=$form || { cat "$log"; fail "$what: configure failed"; }
    cmds=$(commands)
    want=$supported
    [ $form = all-major ] && want=$(grep '0$' <<<"$supported")
    top=$(tail -1 <<<"$want")
    for a in $want; do
      has "-arch=compute_$a "
      if [ "$a" = "$top" ]; then has "code=[sm_$a,compute_$a]"; else has "code=sm_$a "; hasnt "code=compute_$a"; fi
    done
    for a in $supported; do grep -qx "$a" <<<"$want" || hasnt "compute_$a "; done
    echo "$what:" $want "(PTX for $top)"
  done

  what="CMAKE_CUDA_ARCHITECTURES=OFF"
  oldest=$(head -1 <<<"$supported")
  cfg -DCMAKE_CUDA_ARCHITECTURES=OFF || { cat "$log"; fail "$what: configure failed"; }
  cmds=$(commands)
  has "-arch=sm_$oldest "; hasnt "compute_90"
  echo "$what: nvcc's default, $oldest"

  what="CMAKE_CUDA_ARCHITECTURES=native"
  query=$(dirname "$(readlink -f "$nvcc")")/__nvcc_device_query
  if gpu=$("$query" 2>/dev/null) && [ -n "$gpu" ]; then
    cfg -DCMAKE_CUDA_ARCHITECTURES=native || { cat "$log"; fail "$what: configure failed"; }
    cmds=$(commands)
    for a in $(grep -oE '[0-9]+' <<<"$gpu"); do has "-arch=sm_$a "; hasnt "code=compute_$a"; done
    echo "$what: this machine's GPU, $gpu (real code only)"
  else
    if cfg -DCMAKE_CUDA_ARCHITECTURES=native; then fail "$what: configure should fail without a GPU"; fi
    logsays "ARCHITECTURES native, but no GPU was detected" || { cat "$log"; fail "$what: no clear error"; }
    echo "$what: no GPU here, and configuring says so"
  fi

  what="a bad architecture"
  if cfg -DCMAKE_CUDA_ARCHITECTURES=9x; then fail "$what: configure should fail"; fi
  logsays "bad architecture '9x'" || { cat "$log"; fail "$what: no clear error"; }

  # The compiler, the host compiler and the flags, in a real build.
  mkdir -p "$work/bin" "$work/host"
  printf '#!/bin/sh\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$work/nvcc.log" "$(readlink -f "$nvcc")" >"$work/bin/nvcc"
  printf '#!/bin/sh\necho "$*" >>"%s"\nexec "%s" "$@"\n' "$work/host.log" "$(command -v g++)" >"$work/host/g++"
  chmod +x "$work/bin/nvcc" "$work/host/g++"
  what="the compiler, host compiler and flags"
  args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=80-real;90"
        -DCMAKE_CUDA_COMPILER="$work/bin/nvcc" -DCMAKE_CUDA_HOST_COMPILER="$work/host/g++"
        "-DCMAKE_CUDA_FLAGS=-DSETTINGS_REQUIRE_FLAGS -DFROM_CUDA_FLAGS"
        -DCMAKE_CUDA_FLAGS_RELEASE=-DFROM_CONFIG_FLAGS)
  cfg "${args[@]}" || { cat "$log"; fail "$what: configure failed"; }
  if grep -A3 "Manually-specified variables were not used" "$log" | grep CMAKE_CUDA; then
    fail "CMake says a CMAKE_CUDA_ variable was not used"
  fi
  cmake --build "$dir" >"$log" 2>&1 || { cat "$log"; fail "$what: the build failed"; }
  [ -s "$work/nvcc.log" ] || fail "CMAKE_CUDA_COMPILER was not used"
  [ -s "$work/host.log" ] || fail "CMAKE_CUDA_HOST_COMPILER was not used"
  ! grep -v -- "-ccbin $work/host/g++" "$work/nvcc.log" || fail "the nvcc commands above lack -ccbin"
  echo "CMAKE_CUDA_COMPILER ran $(wc -l <"$work/nvcc.log") nvcc commands, each with -ccbin; CMAKE_CUDA_HOST_COMPILER ran $(wc -l <"$work/host.log") times; CMAKE_CUDA_FLAGS and _RELEASE reached nvcc"
  fat=$(ls "$dir"/fdlink/twice/twice.fatbin)
  images=$("$build/cli/fdlink" inspect "$fat")
  echo "$images" | grep -E "^  "
  grep -qE "^  sm_80 cubin" <<<"$images" || fail "the fatbin lacks sm_80 code"
  grep -qE "^  sm_90 cubin" <<<"$images" || fail "the fatbin lacks sm_90 code"
  grep -qE "^  compute_90 ptx" <<<"$images" || fail "the fatbin lacks compute_90 PTX"
  ! grep -qE "^  compute_80 ptx" <<<"$images" || fail "the fatbin has compute_80 PTX (80-real)"
  # the per-configuration flags follow the build type
  cmake -S "$here/settings" -B "$dir" -DCMAKE_BUILD_TYPE=Debug >"$log" 2>&1 || { cat "$log"; fail "reconfigure failed"; }
  if cmake --build "$dir" >"$log" 2>&1; then fail "a Debug build got CMAKE_CUDA_FLAGS_RELEASE"; fi
  grep -q "CMAKE_CUDA_FLAGS_<CONFIG> did not reach nvcc" "$log" || { cat "$log"; fail "the Debug build failed otherwise"; }
  echo "with CMAKE_BUILD_TYPE=Debug, CMAKE_CUDA_FLAGS_RELEASE is not given"
  ;;
tools)
  command -v clangd >/dev/null 2>&1 || { echo "clangd not found: skipped (apt-get install clangd)"; exit 77; }
  cp -r "$here/settings" "$work/src"
  # The README's recipe: clangd drops the nvcc options it does not know.
  cp "$here/clangd.yaml" "$work/src/.clangd"
  dir="$work/b"
  cmake -S "$work/src" -B "$dir" -G "$gen" -Dfdlink_DIR="$build" -DSETTINGS_CUDA=ON \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$log" 2>&1 || { cat "$log"; fail "configure failed"; }
  cmake --build "$dir" >"$log" 2>&1 || { cat "$log"; fail "build failed"; }
  grep -q "fdlink check twice.decl" "$log" || { cat "$log"; fail "fdlink_check did not check user_ptx"; }
  "$build/cli/fdlink" inspect "$dir/user.cubin" | grep -qE "kernel +twice_all" ||
    fail "user.cubin (a fdlink caller linked with the project's own -rdc static library) lacks twice_all"
  echo "the project's own CUDA targets: user_ptx checked by fdlink_check, user_rdc linked by fdlink_link"
  entry=$(python3 -c 'import json, sys
for e in json.load(open(sys.argv[1])):
    if e["file"].endswith("/caller.cu"): print(e["command"])' "$dir/compile_commands.json")
  [ -n "$entry" ] || fail "compile_commands.json has no entry for caller.cu"
  echo "compile_commands.json: $entry"
  grep -qF -- "-include $dir/fdlink/callers/include/twice.cuh" <<<"$entry" || fail "the entry does not force-include the prototypes"
  out=$(timeout 300 clangd --check="$work/src/caller.cu" --compile-commands-dir="$dir" 2>&1) || true
  grep -E "^E\[|All checks" <<<"$out" || true
  grep -q "All checks completed, 0 errors" <<<"$out" || fail "clangd reported errors on caller.cu"
  # without the prototypes header, clangd sees the foreign call as undeclared: the check can fail
  mkdir -p "$work/nohdr"
  sed 's/-include [^ ]*twice.cuh//' "$dir/compile_commands.json" >"$work/nohdr/compile_commands.json"
  out=$(timeout 300 clangd --check="$work/src/caller.cu" --compile-commands-dir="$work/nohdr" 2>&1) || true
  grep -q "undeclared identifier 'twice'" <<<"$out" || { echo "$out" | tail -5; fail "without the header clangd did not see the call as undeclared"; }
  echo "clangd --check caller.cu: 0 errors (without the prototypes header: undeclared identifier 'twice')"
  ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
