// A caller of NVSHMEM's device API, declared as nvshmem.h declares it.
extern "C" __device__ int nvshmem_my_pe(void);
extern "C" __global__ void call_my_pe(int *pe)
{
    *pe = nvshmem_my_pe();
}
