// The kernel that calls the foreign function grid_sum (grid_sum.cu): out[0] = the sum of in[0..n),
// or ~0 when grid_sum failed (launched without a cooperative launch).
extern "C" __device__ int grid_sum(unsigned long long *ret, unsigned *in, unsigned n,
                                   unsigned long long *partials);

extern "C" __global__ void grid_sum_kernel(unsigned long long *out, unsigned *in,
                                           unsigned n, unsigned long long *partials)
{
    unsigned long long total = 0;
    int status = grid_sum(&total, in, n, partials);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out[0] = status == 0 ? total : ~0ull;
}
