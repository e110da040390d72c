// Foreign device functions following the Numba ABI (abi/ABI.md):
//     extern "C" __device__ int name(T *return_value, args...);   /* 0 = success */
// Built with the generated prototypes header force-included (nvcc -include functions.cuh), so a
// definition that disagrees with device/functions.decl does not compile.

extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b)
{
    *return_value = a * b;
    return 0;
}

extern "C" __device__ int sum_reduce(float *return_value, float *array, int n)
{
    float sum = 0.0f;
    for (int i = 0; i < n; ++i)
        sum += array[i];
    *return_value = sum;
    return 0;
}

extern "C" __device__ unsigned int add_cabi(unsigned int a, unsigned int b)
{
    return a + b;
}
