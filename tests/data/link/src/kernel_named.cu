// A kernel named like the foreign function: a kernel is never a foreign function (ABI-11).
// Fixture of tests/link (binary inputs).
extern "C" __global__ void mul_f32_f32(float *out, float a, float b)
{
    *out = a * b;
}
