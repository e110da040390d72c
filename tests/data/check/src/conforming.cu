// Conformance-check fixtures: a small library that follows the declarations in
// ../functions.decl. Each failure fixture defines OMIT_<name> for the function it replaces and
// includes this file, so its PTX differs from conforming.ptx in that one function only.
#include <cuda_fp16.h>

#ifndef OMIT_MUL_F32_F32
extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
    return 0;
}
#endif

#ifndef OMIT_SUM_REDUCE
extern "C" __device__ int sum_reduce(float *return_value, float *array, int n)
{
    float sum = 0.0f;
    for (int i = 0; i < n; ++i)
        sum += array[i];
    *return_value = sum;
    return 0;
}
#endif

#ifndef OMIT_ADD_CABI
extern "C" __device__ unsigned int add_cabi(unsigned int a, unsigned int b)
{
    return a + b;
}
#endif

#ifndef OMIT_MUL_F16
extern "C" __device__ int mul_f16(__half *return_value, __half a, __half b)
{
    *return_value = __hmul(a, b);
    return 0;
}
#endif

#ifndef OMIT_SMALL_INTS
extern "C" __device__ int small_ints(int *return_value, bool flag, signed char c, short s)
{
    *return_value = flag ? c + s : c - s;
    return 0;
}
#endif

#ifndef OMIT_STORE_VOID
extern "C" __device__ int store_void(void *return_value, float *dst, float v)
{
    (void)return_value;
    *dst = v;
    return 0;
}
#endif
