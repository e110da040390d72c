/* Functions for the float-or-integer check (ABI-13): see ../README.md. */
#include <cuda_fp16.h>

/* float32(float32, int32) */
extern "C" __device__ int mulf(float *r, float a, int b)
{
    *r = a * b;
    return 0;
}

/* int32(float32): a float parameter's bits, read with __float_as_int */
extern "C" __device__ int bits(int *r, float a)
{
    *r = __float_as_int(a);
    return 0;
}

/* float32(int32): an int's bits as a float */
extern "C" __device__ int tofl(float *r, int a)
{
    *r = __int_as_float(a);
    return 0;
}

/* float32(float32, int32) with neither parameter used; the constant is stored as .u32 */
extern "C" __device__ int unused(float *r, float a, int b)
{
    *r = 1.0f;
    return 0;
}

/* float64(float64, int64) */
extern "C" __device__ int addd(double *r, double a, long long b)
{
    *r = a + b;
    return 0;
}

/* int64(float64): computed in double, returned as a 64-bit integer */
extern "C" __device__ int trunc64(long long *r, double a)
{
    *r = (long long)(a * 2.0);
    return 0;
}

/* float16(float16) */
extern "C" __device__ int hcopy(__half *r, __half a)
{
    *r = a;
    return 0;
}

/* int32(int32), abi=c */
extern "C" __device__ int twice(int a)
{
    return 2 * a;
}
