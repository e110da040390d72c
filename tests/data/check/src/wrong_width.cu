// mul_f32_f32 takes a double where the declaration says float32 (ABI-5).
#define OMIT_MUL_F32_F32
#include "conforming.cu"

extern "C" __device__ int mul_f32_f32(float *return_value, double a, float b)
{
    *return_value = (float)a * b;
    return 0;
}
