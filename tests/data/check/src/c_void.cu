// mul_f32_f32 is a C void function: no status return (ABI-2).
#define OMIT_MUL_F32_F32
#include "conforming.cu"

extern "C" __device__ void mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
}
