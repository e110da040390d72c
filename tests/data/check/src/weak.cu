// mul_f32_f32 as an inline function: emitted with .weak linkage (ABI-6).
#define OMIT_MUL_F32_F32
#include "conforming.cu"

extern "C" __device__ __noinline__ inline int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
    return 0;
}

// A caller keeps the inline function in the PTX.
extern "C" __global__ void use_mul(float *out, float a, float b)
{
    float r;
    int status = mul_f32_f32(&r, a, b);
    out[0] = status ? 0.0f : r;
}
