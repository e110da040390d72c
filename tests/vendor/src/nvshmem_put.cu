// A kernel calling NVSHMEM's device API (nvshmem.h from the nvidia-nvshmem-cu13 wheel): the
// header's inline functions call into libnvshmem_device.a, which the link adds.
#include <nvshmem.h>
extern "C" __global__ void put_pe(int *dest)
{
    int pe = nvshmem_my_pe();
    nvshmem_int_p(dest, pe, (pe + 1) % nvshmem_n_pes());
    nvshmem_quiet();
}
