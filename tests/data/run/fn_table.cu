// cuda-samples' separate-compilation pattern: a device function, and a pointer to it stored in a
// __device__ variable, which the host reads after loading the module (cudaMemcpyFromSymbol;
// `fdlink run ... sym:triple_ptr`) and passes to a kernel (call_through.cu).
typedef int (*int_fn)(int *ret, int x);

extern "C" __device__ int triple_i32(int *ret, int x)
{
    *ret = 3 * x;
    return 0;
}

extern "C" __device__ int_fn triple_ptr = triple_i32;
