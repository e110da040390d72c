#!/usr/bin/env bash
# Fat binaries on the GPU (issue 40; labels cli, gpu): the driver picks the image of its GPU.
# A kernel that writes __CUDA_ARCH__ + i, linked by `fdlink link` into
#   - sm_80 + sm_90: on an sm_90 GPU the sm_90 cubin runs (900 + i);
#   - sm_80 + compute_80: on a GPU of another major (sm_90) no cubin fits, the driver JIT-compiles
#     the compute_80 PTX (800 + i; an sm_80 cubin cannot run on sm_90);
# each loaded and run by `fdlink run`, the result verified with --expect. Exit 77 without a GPU
# (or without nvJitLink/NVRTC).
# usage: fatbin_gpu.sh FDLINK
set -uo pipefail
fdlink=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export FDLINK_CACHE_DIR=$dir/cache FDLINK_CACHE_REMOTE=
cat > arch_of.cu <<'CU'
extern "C" __global__ void arch_of(int *out) { out[threadIdx.x] = __CUDA_ARCH__ + (int)threadIdx.x; }
CU
expect() { python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<32i', *[$1 + i for i in range(32)]))" > "$2"; }
fail=0
if ! "$fdlink" link -arch=sm_80,sm_90 arch_of.cu -o cubins.fatbin 2> err.txt; then
  grep -qE "nvJitLink|NVRTC|libnvrtc|libnvJitLink" err.txt && { echo "no nvJitLink or NVRTC: skipped"; exit 77; }
  cat err.txt; exit 1
fi
"$fdlink" link -arch=sm_80,compute_80 arch_of.cu -o jit.fatbin || exit 1
arch=$("$fdlink" doctor --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); gs=d.get("gpus") or [{}]; g=next((x for x in gs if x.get("selected")), gs[0]); print(g.get("arch",""))' 2>/dev/null)
echo "device: ${arch:-none}"
expect 900 e900.bin
expect 800 e800.bin
if [ "$arch" = sm_90 ]; then
  "$fdlink" run cubins.fatbin -k arch_of --grid 1 --block 32 'i32[32]' --expect 0=e900.bin; rc=$?
  [ "$rc" = 77 ] && exit 77
  [ "$rc" = 0 ] && echo "sm_80+sm_90 fatbin: the sm_90 cubin ran (900 + i)" || { echo "FAIL: sm_80+sm_90 on sm_90 (exit $rc)"; fail=1; }
fi
case "$arch" in
sm_8*) echo "an sm_8x GPU runs the sm_80 cubin: the JIT case needs another major" ;;
"") "$fdlink" run jit.fatbin -k arch_of --grid 1 --block 32 'i32[32]' --expect 0=e800.bin; rc=$?
    [ "$rc" = 77 ] && exit 77; echo "FAIL: no device architecture read (exit $rc)"; fail=1 ;;
*) "$fdlink" run jit.fatbin -k arch_of --grid 1 --block 32 'i32[32]' --expect 0=e800.bin; rc=$?
   [ "$rc" = 0 ] && echo "sm_80+compute_80 fatbin on $arch: the driver's JIT of compute_80 ran (800 + i)" ||
     { echo "FAIL: sm_80+compute_80 on $arch (exit $rc)"; fail=1; } ;;
esac
[ "$fail" = 0 ] && echo "fatbin gpu: clean"
exit "$fail"
