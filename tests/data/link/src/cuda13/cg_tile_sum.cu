// <cooperative_groups.h> and <cooperative_groups/reduce.h>: each warp-sized tile sums the global
// indices of its threads; out[i] is the sum of i's tile.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

extern "C" __global__ void cg_tile_sum(unsigned *out, unsigned n)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned sum = cg::reduce(tile, i, cg::plus<unsigned>());
    if (i < n)
        out[i] = sum;
}
