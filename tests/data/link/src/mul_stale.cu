// mul_f32_f32 whose second operand is an int: the declaration says float32, which PTX cannot
// tell from int32 (ABI-10). Compiled with the declarations' header force-included (as fdlink
// does for CUDA C inputs), it does not compile. Fixture of tests/link (NVRTC).
extern "C" __device__ int mul_f32_f32(float *return_value, float a, int b)
{
    *return_value = a * (float)b;
    return 0;
}
