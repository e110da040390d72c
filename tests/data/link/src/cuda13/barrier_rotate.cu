// <cuda/barrier>: a block-scoped barrier in shared memory orders the writes of one phase before
// the reads of the next; out[i] = 3 * (the next thread's index in the block) + blockIdx.x.
#include <cuda/barrier>

extern "C" __global__ void barrier_rotate(unsigned *out, unsigned n)
{
    __shared__ unsigned slots[1024];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0)
        init(&bar, blockDim.x);
    __syncthreads();
    slots[threadIdx.x] = 3u * threadIdx.x + blockIdx.x;
    bar.arrive_and_wait();
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = slots[(threadIdx.x + 1) % blockDim.x];
}
