/**
 * @file fdlink/device.h
 * Device side of fdlink (CUDA C++, for nvcc and NVRTC): call a foreign device function of the
 * Numba ABI and record the first non-zero status it returns, for the host to report.
 *
 *     #include <fdlink/device.h>
 *     extern "C" __device__ int safe_sqrt(float *ret, float x);   // ABI-1
 *
 *     extern "C" __global__ void sqrt_all(float *out, const float *in, int n)
 *     {
 *         int i = blockIdx.x * blockDim.x + threadIdx.x;
 *         float r;
 *         if (i < n && FDL_CALL(safe_sqrt, &r, in[i]) == 0)
 *             out[i] = r;
 *     }
 *
 * The host side (fdlink/host.h) finds the record in the loaded module by name, and
 * fdl_module_check_status, fdl_device_synchronize or a launch with FDL_LAUNCH_SYNC turn a
 * failure into `device function safe_sqrt returned status 1 at block (3,0,0) thread (17,0,0)`.
 *
 * Cost: a call that returns 0 costs one compare and a branch that is predicted not taken; no
 * memory is touched. Only a failing call does atomics (a count, then an atomicCAS: the first
 * failure wins and is kept until the host reads and clears the record).
 *
 * One record per module: with -rdc=true (separate compilation, the way foreign functions are
 * linked), every translation unit that includes this header emits the record as a `.weak
 * .global` (a C++17 inline variable) and the device linker keeps one. Compiled without -rdc
 * (whole program), the one translation unit defines it. Before C++17 with -rdc, define
 * FDL_STATUS_RECORD_DEFINE before including this header in exactly one translation unit.
 *
 * Thread-safety (device): any number of threads may fail at once; the record stays consistent.
 */
#ifndef FDLINK_DEVICE_H
#define FDLINK_DEVICE_H

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#error "fdlink/device.h is device code: compile it with nvcc or NVRTC"
#endif

/** Symbol name of the record; the layout version is part of it. */
#define FDL_STATUS_SYMBOL fdl_status_v1
/** Longest function name kept, with its NUL (as FDL_DEVICE_STATUS_NAME_MAX on the host). */
#define FDL_STATUS_NAME_MAX 64

/**
 * The first failure in a module since the host last cleared the record. Layout version 1: 112
 * bytes; the host checks the size.
 */
struct fdl_status_record {
    unsigned long long failures;       /**< failed calls since the last clear */
    unsigned int claimed;              /**< 0 until the first failure claims the record */
    int status;                        /**< the first non-zero status */
    unsigned int line;                 /**< __LINE__ of its FDL_CALL */
    unsigned int block[3];             /**< its blockIdx */
    unsigned int thread[3];            /**< its threadIdx */
    char function[FDL_STATUS_NAME_MAX]; /**< the function's name, NUL-terminated */
};

static_assert(sizeof(fdl_status_record) == 112, "fdl_status_record layout 1 is 112 bytes");

/* Braces make these definitions; `extern "C"` without them only declares. */
#if defined(__CUDACC_RDC__)
#  if defined(FDL_STATUS_RECORD_DEFINE)
extern "C" {
__device__ fdl_status_record FDL_STATUS_SYMBOL;
}
#  elif __cplusplus >= 201703L
extern "C" {
__device__ inline fdl_status_record FDL_STATUS_SYMBOL; /* .weak: the device linker keeps one */
}
#  else
extern "C" __device__ fdl_status_record FDL_STATUS_SYMBOL;
#  endif
#else
/* whole-program compilation: this translation unit is the module */
extern "C" {
__device__ fdl_status_record FDL_STATUS_SYMBOL;
}
#endif

/** Record a failure (the slow path of FDL_CALL; call it directly for statuses of your own). */
__device__ __noinline__ inline void fdl_status_report(int status, const char *function,
                                                      unsigned int line)
{
    fdl_status_record *r = &FDL_STATUS_SYMBOL;
    atomicAdd(&r->failures, 1ull);
    if (atomicCAS(&r->claimed, 0u, 1u) != 0u)
        return;
    r->status = status;
    r->line = line;
    r->block[0] = blockIdx.x;
    r->block[1] = blockIdx.y;
    r->block[2] = blockIdx.z;
    r->thread[0] = threadIdx.x;
    r->thread[1] = threadIdx.y;
    r->thread[2] = threadIdx.z;
    unsigned int i = 0;
    if (function)
        for (; i + 1 < FDL_STATUS_NAME_MAX && function[i]; i++)
            r->function[i] = function[i];
    r->function[i] = '\0';
}

/** Pass @p status through, recording it when it is not 0 (the fast path of FDL_CALL). */
__device__ __forceinline__ int fdl_status_check(int status, const char *function,
                                                unsigned int line)
{
    if (__builtin_expect(status != 0, 0))
        fdl_status_report(status, function, line);
    return status;
}

/**
 * FDL_CALL(fn, ret, args...): call the Numba-ABI function @p fn as `fn(ret, args...)` (ABI-1:
 * @p ret points to the return slot, ABI-4) and evaluate to its status; a non-zero status is
 * recorded with the function's name, the caller's line, blockIdx and threadIdx. *ret holds a
 * result only when the status is 0.
 */
#define FDL_CALL(fn, ...) fdl_status_check((fn)(__VA_ARGS__), #fn, __LINE__)

#endif /* FDLINK_DEVICE_H */
