// A foreign device function of the Numba ABI that needs a cooperative launch: it sums a buffer
// over the whole grid, with a grid sync between the threads' partial sums and the total.
// partials has one slot per thread of the grid. Run by tests/cli/cases_run.cmake (mock) and the
// GPU tests (tests/gpu/test_cli_gpu.c).
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __device__ int grid_sum(unsigned long long *ret, unsigned *in, unsigned n,
                                   unsigned long long *partials)
{
    cg::grid_group grid = cg::this_grid();
    if (!grid.is_valid())
        return 1; /* not launched cooperatively */
    unsigned long long mine = 0;
    for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size())
        mine += in[i];
    partials[grid.thread_rank()] = mine;
    grid.sync();
    unsigned long long total = 0;
    if (grid.thread_rank() == 0)
        for (unsigned long long t = 0; t < grid.size(); t++)
            total += partials[t];
    *ret = total;
    return 0;
}
