#!/usr/bin/env bash
# The partitioned link (issue 41; label link): a large LTO program (gen.sh: 32 kernels, a
# __device__ counter, a static __device__ word and a __constant__ shared by kernels of different
# groups) linked by `fdlink link` is partitioned ("partitioned link: 34 kernels in 16 groups"
# with -v), gives the same cubin byte for byte over repeated links and over job counts (--jobs 1,
# 2, 4) and oversubscribed (fakecpu.c preloaded: ptxas on 32-64 threads over one or two cores,
# three links at once; skipped without a C compiler), keeps every kernel and defines every
# variable once (the symbol table against the same link unpartitioned, FDLINK_PARTITION=0); a small program is not partitioned. With GPU=1 (the
# test partition_gpu, label gpu; skips without a GPU) every kernel of both cubins is run
# (gpu.cu): their outputs equal, and kernels of the first and the last group see one counter and
# one static word. Skips (77) without nvcc or nvJitLink.
# usage: run.sh FDLINK NVCC [GPU]
set -uo pipefail
fdlink=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
nvcc=$2
gpu=${3:-0}
here=$(cd "$(dirname "$0")" && pwd)
command -v "$nvcc" >/dev/null || { echo "no nvcc: skipped"; exit 77; }
if [ "$gpu" = 1 ] && ! nvidia-smi -L > /dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export CUDA_CACHE_DISABLE=1 FDLINK_CACHE=0
unset MAKEFLAGS MFLAGS FDLINK_JOBS FDLINK_PARTITION FDLINK_SPLIT_COMPILE_EXTENDED
fail=0
bash "$here/gen.sh" "$dir/big" && bash "$here/gen.sh" "$dir/small" 16 || exit 1
for p in big small; do
  for f in data kernels; do
    "$nvcc" -ltoir -dlto -rdc=true -arch=lto_90 -o "$dir/$p/$f.ltoir" "$dir/$p/$f.cu" || exit 1
  done
done
link() { # link NAME DIR OPTIONS...: DIR's program into $dir/NAME.cubin, its -v log in NAME.log
  local name=$1 p=$2
  shift 2
  "$fdlink" link -v -arch=sm_90 --no-cache "$@" -o "$dir/$name.cubin" "$dir/$p/data.ltoir" \
    "$dir/$p/kernels.ltoir" > "$dir/$name.log" 2>&1
}
link j1 big --jobs 1 || {
  grep -q "nvJitLink" "$dir/j1.log" && ! grep -q "error" "$dir/j1.log" &&
    { echo "no nvJitLink: skipped"; exit 77; }
  cat "$dir/j1.log"; exit 1; }
grep -q "partitioned link: 34 kernels in 16 groups" "$dir/j1.log" ||
  { echo "FAIL: not partitioned:"; grep -v "^ptxas" "$dir/j1.log" | tail -5; fail=1; }
for run in j2 j4 again; do
  case $run in j2) o="--jobs 2" ;; j4) o="--jobs 4" ;; *) o="--jobs 2" ;; esac
  link $run big $o || { echo "FAIL: link $run"; tail -5 "$dir/$run.log"; fail=1; continue; }
  cmp -s "$dir/j1.cubin" "$dir/$run.cubin" && echo "$run ($o): identical to --jobs 1" ||
    { echo "FAIL: $run ($o): the cubin differs from --jobs 1's"; fail=1; }
done
# oversubscribed (fakecpu.c, preloaded: the processors counted as FAKE_NCPU): ptxas starts that
# many threads on this machine's cores (on one with --jobs 1), fdlink its 16 group runs, two links
# at once compete for the cores; the cubin must not depend on which thread finishes first
# (not under AddressSanitizer, whose runtime must come first of the libraries a process loads)
if grep -qa '__asan_init' "$fdlink"; then
  echo "an AddressSanitizer build: the oversubscribed links (a preloaded library) skipped"
elif command -v cc > /dev/null && cc -O2 -shared -fPIC -o "$dir/fakecpu.so" "$here/fakecpu.c" -ldl; then
  over() { # over NAME NCPU OPTIONS...
    local name=$1 n=$2
    shift 2
    FAKE_NCPU=$n FAKE_THREADS_LOG="$dir/$name.threads" LD_PRELOAD="$dir/fakecpu.so" link "$name" big "$@"
  }
  over o32j1 32 --jobs 1 & over o64 64 & over o48j3 48 --jobs 3 & wait
  for run in o32j1:32 o64:64 o48j3:48; do
    name=${run%:*} n=${run#*:}
    [ -s "$dir/$name.cubin" ] || { echo "FAIL: link $name"; tail -5 "$dir/$name.log"; fail=1; continue; }
    threads=$(stat -c %s "$dir/$name.threads" 2> /dev/null || echo 0)
    # ptxas's n threads, less the one it may run on itself
    [ "$threads" -ge $((n - 1)) ] || { echo "FAIL: $name: $threads threads started, not $n"; fail=1; }
    cmp -s "$dir/j1.cubin" "$dir/$name.cubin" &&
      echo "$name ($n processors counted, $threads threads started): identical to --jobs 1" ||
      { echo "FAIL: $name: the cubin differs from --jobs 1's"; fail=1; }
  done
else
  echo "no C compiler: the oversubscribed links skipped"
fi
FDLINK_PARTITION=0 link whole big || { echo "FAIL: link unpartitioned"; tail -5 "$dir/whole.log"; fail=1; }
grep -q "partitioned link" "$dir/whole.log" && { echo "FAIL: FDLINK_PARTITION=0 partitioned"; fail=1; }
# the symbols: every kernel, every variable defined once (reserved shared memory's own aside;
# internal functions, LOCAL, are each group's own copy: shape, shape$fdl1...)
syms() { readelf -sW "$1" | awk '(($4 == "FUNC" && $5 != "LOCAL") || $4 == "OBJECT") && $0 !~ / UND / && $NF !~ /^\.nv\./ {print $4, $NF}' | sort; }
syms "$dir/j1.cubin" > "$dir/j1.syms"
syms "$dir/whole.cubin" > "$dir/whole.syms"
[ "$(grep -c '^FUNC k[0-9][0-9]$' "$dir/j1.syms")" = 32 ] && [ "$(grep -c '^FUNC _Z2ktILi[12]EEvPf$' "$dir/j1.syms")" = 2 ] ||
  { echo "FAIL: not the 34 kernels:"; cat "$dir/j1.syms"; fail=1; }
for v in counter scale table _hidden; do
  [ "$(grep -c "^OBJECT .*$v\$" "$dir/j1.syms")" = 1 ] || { echo "FAIL: $v not defined once:"; cat "$dir/j1.syms"; fail=1; }
done
diff "$dir/whole.syms" "$dir/j1.syms" > "$dir/syms.diff" && echo "symbols: as the unpartitioned link's" ||
  { echo "FAIL: the symbols differ from the unpartitioned link's:"; cat "$dir/syms.diff"; fail=1; }
link small small || { echo "FAIL: link small"; tail -5 "$dir/small.log"; fail=1; }
grep -q "partitioned link" "$dir/small.log" && { echo "FAIL: a small program partitioned"; fail=1; }
if [ "$gpu" = 1 ]; then
  "$nvcc" -O2 -o "$dir/gpu" "$here/gpu.cu" || exit 1
  "$dir/gpu" "$dir/j1.cubin" "$dir/whole.cubin" || fail=1
fi
[ $fail = 0 ] && echo "partitioned link: all checks passed"
exit $fail
