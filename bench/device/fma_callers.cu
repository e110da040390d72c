// Benchmark 1's kernels: the same loop, acc = acc * x + 1 repeated `iters` times per element,
// through the foreign function fma_step (a call of the Numba ABI, its status checked by
// FDL_CALL as a Numba caller checks it) and written inline. Linked from PTX, every call is a
// real call (return slot in local memory); linked from LTO-IR, the call is inlined.
#include <fdlink/device.h>

extern "C" __global__ void fma_call(float *out, const float *xs, int n, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = xs[i], acc = x;
    for (int k = 0; k < iters; k++) {
        float r;
        if (FDL_CALL(fma_step, &r, acc, x) != 0) {
            acc = __int_as_float(0x7fc00000); // NaN: the host's verification catches it
            break;
        }
        acc = r;
    }
    out[i] = acc;
}

extern "C" __global__ void fma_inline(float *out, const float *xs, int n, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = xs[i], acc = x;
    for (int k = 0; k < iters; k++)
        acc = __fmaf_rn(acc, x, 1.0f);
    out[i] = acc;
}
