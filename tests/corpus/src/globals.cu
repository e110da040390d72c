// Every kind of variable nvcc places in its own section: an uninitialised __device__ global
// (.nv.global, no bytes in the file), an initialised one (.nv.global.init), __constant__ data
// (a constant bank), static and extern __shared__ memory, and a function other units may call.
__device__ int counter;
__device__ int initialised = 42;
__device__ float table[256];
__constant__ float coefficients[16];
__constant__ int limit = 7;

extern "C" __device__ __noinline__ float corpus_scale(float x)
{
    return x * coefficients[0] + (float)limit;
}

extern "C" __global__ void corpus_globals(float *out, int n)
{
    extern __shared__ float dynamic[];
    __shared__ float fixed[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    fixed[threadIdx.x % 32] = (float)initialised;
    dynamic[threadIdx.x] = table[threadIdx.x % 256];
    __syncthreads();
    if (i < n)
        out[i] = corpus_scale(dynamic[threadIdx.x] + fixed[(threadIdx.x + 1) % 32]);
    atomicAdd(&counter, 1);
}
