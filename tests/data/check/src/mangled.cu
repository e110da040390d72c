// mul_f32_f32 without extern "C": a C++ mangled name (ABI-7).
#define OMIT_MUL_F32_F32
#include "conforming.cu"

__device__ int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
    return 0;
}
