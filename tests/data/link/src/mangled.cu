// mul_f32_f32 without extern "C": its symbol is C++-mangled (_Z11mul_f32_f32Pfff), which a
// caller's unmangled reference never finds (ABI-7). Fixture of tests/link (binary inputs).
__device__ int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
    return 0;
}
