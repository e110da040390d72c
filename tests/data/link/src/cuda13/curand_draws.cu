// <curand_kernel.h>: one Philox generator per thread (seed 1234, subsequence = the thread's
// index); out[i] is its first 32-bit draw.
#include <curand_kernel.h>

extern "C" __global__ void curand_draws(unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    curandStatePhilox4_32_10_t state;
    curand_init(1234ull, i, 0, &state);
    unsigned v = curand(&state);
    if (i < n)
        out[i] = v;
}
