#!/usr/bin/env bash
# fdlink_link ARCHITECTURES without nvcc, and MANIFEST (issue 40; label cmake): the fatlink
# project, configured against the fdlink build tree with no CUDA compiler, builds a fatbin of
# sm_80, sm_90 and compute_90 and one of compute_100 with `fdlink link` alone; its manifest lists
# the three links; `fdlink prewarm` of it into a fresh cache lets a clean rebuild run with
# FDLINK_REQUIRE_WARM=1; a changed source then fails the build, naming it.
# usage: fatlink.sh FDLINK_BUILD_DIR SOURCE_DIR WORK_DIR
set -uo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
cp -r "$src/tests/cmake/fatlink" "$work/src"
fdlink=$build/cli/fdlink
export FDLINK_CACHE_DIR=$work/cache FDLINK_CACHE_REMOTE=
unset FDLINK_REQUIRE_WARM CUDACXX
fail=0
cmake -S "$work/src" -B "$work/b" -Dfdlink_DIR="$build" -DCMAKE_CUDA_COMPILER= > "$work/log" 2>&1 ||
  { cat "$work/log"; exit 1; }
if ! cmake --build "$work/b" >> "$work/log" 2>&1; then
  grep -qE "nvJitLink|NVRTC|libnvrtc|libnvJitLink" "$work/log" && { echo "no nvJitLink or NVRTC: skipped"; exit 77; }
  cat "$work/log"; exit 1
fi
grep -q fatbinary "$work/log" && { echo "FAIL: fatbinary ran"; fail=1; }
"$fdlink" inspect "$work/b/app.fatbin" > "$work/inspect.txt" 2>&1
grep -q "fatbin, 3 images" "$work/inspect.txt" && grep -q "sm_80 cubin" "$work/inspect.txt" &&
  grep -q "sm_90 cubin" "$work/inspect.txt" && grep -q "compute_90 ptx" "$work/inspect.txt" ||
  { echo "FAIL: app.fatbin"; cat "$work/inspect.txt"; fail=1; }
"$fdlink" inspect "$work/b/app100.fatbin" 2>&1 | grep -q "compute_100 ptx" || { echo "FAIL: app100.fatbin"; fail=1; }
m=$work/b/links.manifest
[ "$(grep -vc '^#' "$m")" = 3 ] && grep -q '"-arch=sm_80,sm_90,compute_90"' "$m" &&
  grep -q '"-arch=compute_100"' "$m" && grep -q '"-arch=sm_90"' "$m" ||
  { echo "FAIL: the manifest"; cat "$m"; fail=1; }
# the deployment: a fresh cache warmed from the manifest, a clean build that may not link
export FDLINK_CACHE_DIR=$work/warm
"$fdlink" prewarm "$m" > "$work/prewarm.txt" 2>&1 && grep -qx "prewarmed 3 links" "$work/prewarm.txt" ||
  { echo "FAIL: prewarm"; cat "$work/prewarm.txt"; fail=1; }
cmake --build "$work/b" --target clean > /dev/null 2>&1
FDLINK_REQUIRE_WARM=1 cmake --build "$work/b" > "$work/warm.log" 2>&1 || { echo "FAIL: the warm build"; cat "$work/warm.log"; fail=1; }
echo "// changed" >> "$work/src/twice.cu"
if FDLINK_REQUIRE_WARM=1 cmake --build "$work/b" > "$work/cold.log" 2>&1; then
  echo "FAIL: a changed source built under FDLINK_REQUIRE_WARM=1"; fail=1
fi
grep -qE "twice.cu: error: cache miss: the NVRTC compile of .*twice.cu for sm_[0-9]+ \(key [0-9a-f]{32}\)" "$work/cold.log" ||
  { echo "FAIL: the miss is not named"; cat "$work/cold.log"; fail=1; }
[ "$fail" = 0 ] && echo "fatlink: clean"
exit "$fail"
