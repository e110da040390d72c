// mul_f32_f32 as a kernel rather than a device function (ABI-11).
#define OMIT_MUL_F32_F32
#include "conforming.cu"

extern "C" __global__ void mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
}
