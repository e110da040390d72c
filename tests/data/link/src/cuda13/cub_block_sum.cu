// <cub/block/block_reduce.cuh>: each block of 128 threads sums 3 * its global indices + 1; every
// thread of the block writes the block's sum to out[i].
#include <cub/block/block_reduce.cuh>

extern "C" __global__ void cub_block_sum(unsigned *out, unsigned n)
{
    typedef cub::BlockReduce<unsigned, 128> reduce;
    __shared__ typename reduce::TempStorage temp;
    __shared__ unsigned total;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned sum = reduce(temp).Sum(3u * i + 1u);
    if (threadIdx.x == 0)
        total = sum;
    __syncthreads();
    if (i < n)
        out[i] = total;
}
