// mul_f32_f32 written as a plain C++ function: no extern "C" and no return slot, so its symbol
// is _Z11mul_f32_f32ff. As LTO-IR, whole-program LTO drops it (nothing calls that name); fdlink's
// check keeps it in this form too and names it (ABI-7, issue 38). Fixture of tests/link.
__device__ float mul_f32_f32(float a, float b)
{
    return a * b;
}
