// A foreign device function following the Numba ABI (abi/ABI.md, ABI-1):
//     extern "C" __device__ int name(T *return_value, args...);   /* 0 = success */
// Fixture for tests/unit/test_link.c and tests/gpu/test_gpu.c.
// Regenerate: nvcc -ptx -rdc=true -arch=compute_75 -o ../mul.ptx mul.cu
extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
    return 0;
}
