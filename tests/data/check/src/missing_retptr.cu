// mul_f32_f32 has no return pointer: it returns the status only (ABI-3).
#define OMIT_MUL_F32_F32
#include "conforming.cu"

extern "C" __device__ int mul_f32_f32(float a, float b)
{
    return (int)(a * b);
}
