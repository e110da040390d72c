// Benchmark 1's foreign function (Numba ABI, abi/ABI.md): *return_value = acc * x + 1.
// Compiled with the prototypes of fma.decl force-included, to PTX and to LTO-IR (-dlto).
// __fmaf_rn rounds once, whatever the compiler contracts: the PTX-linked call, the LTO-linked
// call and the inline loop of fma_callers.cu must give identical floats.
extern "C" __device__ int fma_step(float *return_value, float acc, float x)
{
    *return_value = __fmaf_rn(acc, x, 1.0f);
    return 0;
}
