// mul_f32_f32 compiled against a wrong prototype: its second operand is a double, so the PTX
// parameter is .b64 where float32 needs 32 bits (ABI-5). Fixture for the declaration check in
// tests/unit/test_link.c; it must never link into a caller built for the declared prototype.
// Regenerate: nvcc -ptx -rdc=true -arch=compute_75 -o ../mul_wide.ptx mul_wide.cu
extern "C" __device__ int mul_f32_f32(float *return_value, float a, double b)
{
    *return_value = (float)(a * b);
    return 0;
}
