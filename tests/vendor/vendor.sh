#!/usr/bin/env bash
# Real vendor device libraries (issue 34), from the wheels NVIDIA publishes on PyPI, installed by
# tests/run.sh into the build tree (pip install --target <build>/vendor; FDLINK_VENDOR_DIR names
# another): linked with fdlink as a user would. Exit 77 (ctest: skipped) where a wheel is absent.
#   vendor.sh MODE VENDORDIR FDLINK SRCDIR WORKDIR
set -uo pipefail
mode=$1 vendor=$(readlink -m "$2") fdlink=$(readlink -f "$3") src=$(readlink -f "$4") work=$(readlink -m "$5/$1")
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failed=0
fail() { echo "vendor $mode: FAILED: $*"; failed=1; }
# every nvJitLink link of this file is timed, beside the raw nvJitLink time the log reports
# (fdlink link -v --time prints nvJitLink's own timings): the figures go to the test's output
case $mode in
  nvshmem)
    nv=$vendor/nvidia/nvshmem
    [ -f "$nv/lib/libnvshmem_device.a" ] || { echo "SKIP: no NVSHMEM wheel in $vendor"; exit 77; }
    # the static library: every member of every architecture accepted (it was refused before:
    # an uninitialised __device__ variable in .nv.global)
    "$fdlink" inspect "$nv/lib/libnvshmem_device.a" >inspect.txt 2>&1 || { tail -n 3 inspect.txt; fail "inspect"; }
    # a caller of nvshmem.h's API, compiled with NVRTC, linked with the library for the
    # architectures it holds; the cubin has the kernel and no undefined symbol
    for a in 80 90 100; do
      if "$fdlink" link -arch=sm_$a --no-cache -I "$nv/include" -o put_sm_$a.cubin \
           "$src/nvshmem_put.cu" "$nv/lib/libnvshmem_device.a" >link_$a.log 2>&1 &&
         "$fdlink" inspect put_sm_$a.cubin >put_$a.txt 2>&1 &&
         grep -q "kernel    put_pe" put_$a.txt; then
        echo "vendor nvshmem: linked put_pe with libnvshmem_device.a for sm_$a" \
             "($(stat -c %s put_sm_$a.cubin) bytes)"
      else
        tail -n 5 link_$a.log put_$a.txt 2>/dev/null; fail "link for sm_$a"
      fi
    done
    # without the library: the undefined symbol names NVSHMEM
    "$fdlink" link -arch=sm_90 --no-cache --no-lto -I "$nv/include" -o none.cubin \
      "$src/nvshmem_put.cu" >none.log 2>&1 && fail "linked without the library"
    grep -q "NVSHMEM's device library defines it" none.log || { cat none.log; fail "no NVSHMEM hint"; }
    # its .bc files are LLVM 22 bitcode, for LLVM-based compilers: one line saying so
    bc=$nv/lib/libnvshmem_device_sm_90.bc
    if [ -f "$bc" ]; then
      "$fdlink" link -arch=sm_90 --no-cache -o bc.cubin "$bc" >bc.log 2>&1 && fail "LLVM 22 bitcode linked?"
      head -1 bc.log
      grep -q "bitcode, which libNVVM (LLVM 7 IR) cannot read" bc.log || { cat bc.log; fail "bitcode message"; }
    fi
    ;;
  mathdx)
    mx=$vendor/nvidia/mathdx
    [ -f "$mx/include/cublasdx.hpp" ] || { echo "SKIP: no MathDx wheel in $vendor"; exit 77; }
    inc=(-I "$mx/include" -I "$mx/external/cutlass/include")
    # the recipe's NVRTC option is needed: without it, the headline names the first error and
    # NVRTC's own advice (-default-device)
    "$fdlink" link -arch=sm_90 --no-cache "${inc[@]}" -o none.cubin "$src/cublasdx_gemm.cu" \
      >none.log 2>&1 && fail "compiled without --device-as-default-execution-space"
    head -1 none.log | grep -q "^fdlink: .*error: .*-default-device" || { head -3 none.log; fail "headline"; }
    # with it: linked, the kernel there; the cubin is mostly weak variables, said once
    if "$fdlink" link -arch=sm_90 --no-cache "${inc[@]}" \
         -Xnvrtc --device-as-default-execution-space -o gemm.cubin "$src/cublasdx_gemm.cu" \
         >gemm.log 2>&1 && "$fdlink" inspect --code gemm.cubin >gemm.txt 2>&1 &&
       grep -q "kernel    dx_gemm" gemm.txt; then
      grep -c "mostly weak variables" gemm.log | grep -qx 1 || { cat gemm.log; fail "no weak-variable warning"; }
      echo "vendor mathdx: cuBLASDx GEMM linked, $(stat -c %s gemm.cubin) bytes; $(grep variables: gemm.txt)"
    else
      tail -n 5 gemm.log gemm.txt; fail "cuBLASDx GEMM"
    fi
    # --optimize-unused-variables drops them (the kernel stays)
    if "$fdlink" link -arch=sm_90 --no-cache "${inc[@]}" --optimize-unused-variables \
         -Xnvrtc --device-as-default-execution-space -o small.cubin "$src/cublasdx_gemm.cu" \
         >small.log 2>&1 && "$fdlink" inspect --code small.cubin | grep -q "kernel    dx_gemm" &&
       [ "$(stat -c %s small.cubin)" -lt "$(stat -c %s gemm.cubin)" ]; then
      echo "vendor mathdx: with --optimize-unused-variables $(stat -c %s small.cubin) bytes"
      ! grep -q "mostly weak variables" small.log || fail "warned with --optimize-unused-variables"
    else
      tail -n 5 small.log; fail "--optimize-unused-variables"
    fi
    ;;
  *) echo "vendor: unknown mode $mode"; exit 2 ;;
esac
[ $failed = 0 ] && echo "vendor $mode: passed"
exit $failed
