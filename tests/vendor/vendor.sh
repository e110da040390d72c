#!/usr/bin/env bash
# Real vendor device libraries (issue 34), from the wheels NVIDIA publishes on PyPI, installed by
# tests/run.sh into the build tree (pip install --target <build>/vendor; FDLINK_VENDOR_DIR names
# another): linked with fdlink as a user would. Exit 77 (ctest: skipped) where a wheel is absent.
#   vendor.sh MODE VENDORDIR FDLINK SRCDIR WORKDIR [MATHDX_GEN]
set -uo pipefail
mode=$1 vendor=$(readlink -m "$2") fdlink=$(readlink -f "$3") src=$(readlink -f "$4") work=$(readlink -m "$5/$1")
gen=${6:+$(readlink -f "$6")}
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
    # its .bc files are LLVM 22 bitcode, for LLVM-based compilers: libNVVM 13.0 reads LLVM 7.0.1
    # for compute_90 and LLVM 20 for compute_100 (docs/libraries.md); one line saying so and
    # what to link instead
    for a in 90 100; do
      bc=$nv/lib/libnvshmem_device_sm_$a.bc
      [ -f "$bc" ] || continue
      "$fdlink" link -arch=sm_$a --no-cache -o bc.cubin "$bc" >bc.log 2>&1 && fail "LLVM 22 bitcode linked?"
      head -1 bc.log
      grep -q "error: LLVM [0-9]* bitcode, newer than libNVVM reads for compute_$a (LLVM [0-9.]*),.*static library (.a)" bc.log ||
        { cat bc.log; fail "bitcode message for sm_$a"; }
    done
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
  libmathdx)
    # libmathdx generates a cuSolverDx Cholesky factorisation (with cuSolverDx's universal
    # fatbin) and a cuFFTDx FFT as LTO-IR (mathdx_gen.c); fdlink compiles their callers (CUDA C,
    # NVRTC, LTO-IR) and links them for sm_90. gpu_mathdx.sh runs the cubins on a GPU.
    lib=$vendor/nvidia/cu13/lib/libmathdx.so.0
    [ -f "$lib" ] || { echo "SKIP: no libmathdx wheel in $vendor"; exit 77; }
    # libmathdx needs NVRTC (libnvrtc.so.13, a DT_NEEDED of its own): the toolkit's, where the
    # loader would not find it
    for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
      [ -n "$d" ] && [ -d "$d/lib64" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d/lib64
    done
    "$gen" "$lib" . 90 >gen.log 2>&1
    rc=$?
    [ $rc = 77 ] && { cat gen.log; exit 77; }
    [ $rc = 0 ] || { cat gen.log; fail "libmathdx generation"; exit 1; }
    . ./traits.sh
    echo "vendor libmathdx: cuSolverDx $cusolverdx_version POTRF ($potrf_symbol," \
         "$(stat -c %s potrf.ltoir) bytes, universal fatbin $(stat -c %s cusolverdx.fatbin)" \
         "bytes), cuFFTDx $cufftdx_version FFT ($fft_symbol, $(stat -c %s fft.ltoir) bytes)"
    [ "$potrf_symbol" = dx_potrf ] && [ "$fft_symbol" = dx_fft ] || fail "symbol names"
    # the kinds, from the bytes: LTO-IR for sm_90; the universal fatbin holds LTO-IR itself
    "$fdlink" inspect potrf.ltoir fft.ltoir cusolverdx.fatbin >kinds.txt 2>&1 || fail "inspect"
    grep -q "^potrf.ltoir: LTO-IR" kinds.txt && grep -q "^fft.ltoir: LTO-IR" kinds.txt &&
      grep -q "^cusolverdx.fatbin: fatbin" kinds.txt && grep -q "lto_90 ltoir" kinds.txt &&
      grep -A1 "^cusolverdx.fatbin" kinds.txt | grep -q "lto_[0-9]* ltoir" ||
      { cat kinds.txt; fail "input kinds"; }
    # the solver: caller + LTO-IR + universal fatbin
    if "$fdlink" link -v -arch=sm_90 --no-cache -D POTRF_N=$potrf_n -o potrf.cubin \
         "$src/potrf_caller.cu" potrf.ltoir cusolverdx.fatbin >potrf.log 2>&1 &&
       "$fdlink" inspect --code potrf.cubin >potrf.txt 2>&1 && grep -q "kernel    potrf_kernel" potrf.txt
    then
      echo "vendor libmathdx: POTRF linked, $(stat -c %s potrf.cubin) bytes," \
           "$(grep -o 'in [0-9.]* ms' potrf.log | tail -1)"
    else
      tail -n 5 potrf.log potrf.txt; fail "cuSolverDx POTRF link"
    fi
    # without the universal fatbin: the undefined cuSolverDx function names the fatbin
    "$fdlink" link -arch=sm_90 --no-cache -D POTRF_N=$potrf_n -o nofatbin.cubin \
      "$src/potrf_caller.cu" potrf.ltoir >nofatbin.log 2>&1 && fail "linked without the fatbin"
    grep -q "cusolverdx::.*universal fatbin" nofatbin.log || { cat nofatbin.log; fail "fatbin hint"; }
    # the FFT: caller + LTO-IR, the traits as the caller's constants
    if "$fdlink" link -v -arch=sm_90 --no-cache -D FFT_STORAGE=$fft_storage -D FFT_EPT=$fft_ept \
         -D FFT_STRIDE=$fft_stride -o fft.cubin "$src/fft_caller.cu" fft.ltoir >fft.log 2>&1 &&
       "$fdlink" inspect --code fft.cubin >fft.txt 2>&1 && grep -q "kernel    fft_kernel" fft.txt
    then
      echo "vendor libmathdx: FFT linked, $(stat -c %s fft.cubin) bytes," \
           "$(grep -o 'in [0-9.]* ms' fft.log | tail -1)"
    else
      tail -n 5 fft.log fft.txt; fail "cuFFTDx FFT link"
    fi
    # the kernels' signatures, from the cubins' .nv.info (fdlink run checks them before it
    # needs a GPU: 77 without one, 0 with one, run on an all-ones matrix and zeros); one
    # argument short and a wrong width refused
    nn=$((potrf_n * potrf_n)) nf=$((fft_n * 2))
    "$fdlink" run potrf.cubin -k potrf_kernel --block $potrf_block --shared $potrf_shared \
      "f64[$nn]=1" "f64[$nn]" "i32[1]" >run.log 2>&1
    rc=$?; [ $rc = 0 ] || [ $rc = 77 ] || { cat run.log; fail "run potrf_kernel"; }
    "$fdlink" run fft.cubin -k fft_kernel --block $fft_block --shared $fft_shared \
      "f64[$nf]" "f64[$nf]" >run.log 2>&1
    rc=$?; [ $rc = 0 ] || [ $rc = 77 ] || { cat run.log; fail "run fft_kernel"; }
    "$fdlink" run potrf.cubin -k potrf_kernel "f64[1]" "f64[1]" >run.log 2>&1
    [ $? = 2 ] && grep -q "takes 3 parameters" run.log || { cat run.log; fail "parameter count"; }
    "$fdlink" run fft.cubin -k fft_kernel "f64[1]" f32:1 >run.log 2>&1
    [ $? = 2 ] && grep -q "parameter 1 of kernel fft_kernel takes 8" run.log ||
      { cat run.log; fail "parameter width"; }
    ;;
  *) echo "vendor: unknown mode $mode"; exit 2 ;;
esac
[ $failed = 0 ] && echo "vendor $mode: passed"
exit $failed
