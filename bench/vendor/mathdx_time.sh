#!/usr/bin/env bash
# Link time of libmathdx's generated functions (issue 34), fdlink against raw nvJitLink on the
# same files: the LTO-IR and universal fatbin that the vendor_libmathdx test generated, and the
# callers compiled to LTO-IR by nvcc (so that neither side compiles CUDA C). No GPU needed.
# Both sides are timed alike (link_time.py, issue 41): a fresh process per link, nvJitLink's own
# cache off on both (CUDA_CACHE_DISABLE=1; before, raw linked in one process with it on).
#   bash bench/vendor/mathdx_time.sh BUILD_DIR [RUNS]     (after ctest -R vendor_libmathdx)
set -euo pipefail
build=$(readlink -f "$1") runs=${2:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$build/tests/vendor/libmathdx
[ -f "$dir/traits.sh" ] || { echo "no $dir/traits.sh: run ctest -R vendor_libmathdx first" >&2; exit 1; }
. "$dir/traits.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lto="-gencode arch=compute_90,code=lto_90 -rdc=true -fatbin -x cu"
# shellcheck disable=SC2086
nvcc $lto -DPOTRF_N="$potrf_n" -o "$work/potrf_caller.fatbin" "$root/tests/vendor/src/potrf_caller.cu"
# shellcheck disable=SC2086
nvcc $lto -DFFT_STORAGE="$fft_storage" -DFFT_EPT="$fft_ept" -DFFT_STRIDE="$fft_stride" \
  -o "$work/fft_caller.fatbin" "$root/tests/vendor/src/fft_caller.cu"
echo "== cuSolverDx POTRF: caller + LTO-IR + universal fatbin"
python3 "$root/bench/vendor/link_time.py" --fdlink "$build/cli/fdlink" -arch sm_90 --lto -n "$runs" \
  "$work/potrf_caller.fatbin" "$dir/potrf.ltoir" "$dir/cusolverdx.fatbin"
echo "== cuFFTDx FFT: caller + LTO-IR"
python3 "$root/bench/vendor/link_time.py" --fdlink "$build/cli/fdlink" -arch sm_90 --lto -n "$runs" \
  "$work/fft_caller.fatbin" "$dir/fft.ltoir"
