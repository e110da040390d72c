// A device library whose LTO-IR is large (1,024 functions, none inlined: about 300 KiB), with
// the Numba-ABI mul_f32_f32 that link/caller.ptx calls. Linked after a PTX caller, fdlink says
// once that the caller defeats link-time optimisation of it (issue 34).
#define FN(n)                                                                                     \
    extern "C" __device__ __noinline__ float large_##n(float x)                                  \
    {                                                                                             \
        float y = x;                                                                              \
        for (int i = 0; i < (n % 5) + 2; i++)                                                     \
            y = y * 1.0001f + (float)(n) * 0.5f;                                                  \
        return y;                                                                                 \
    }
#define FN4(n) FN(n##0) FN(n##1) FN(n##2) FN(n##3)
#define FN16(n) FN4(n##0) FN4(n##1) FN4(n##2) FN4(n##3)
#define FN64(n) FN16(n##0) FN16(n##1) FN16(n##2) FN16(n##3)
#define FN256(n) FN64(n##0) FN64(n##1) FN64(n##2) FN64(n##3)
#define FN1024(n) FN256(n##0) FN256(n##1) FN256(n##2) FN256(n##3)
FN1024(1)

extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = large_100000(a) * b;
    return 0;
}
