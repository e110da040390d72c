// The caller of a cuSolverDx Cholesky factorisation that libmathdx generated (tests/vendor/
// mathdx_gen.c): dx_potrf factors an N x N symmetric positive definite matrix, column-major, in
// shared memory, into L (lower triangle) with A = L L^T; info is 0 on success. Compiled by fdlink
// (NVRTC, LTO-IR) and linked with the solver's LTO-IR and cuSolverDx's universal fatbin.
// POTRF_N comes from the generator's traits (-D POTRF_N=32).
extern "C" __device__ void dx_potrf(double *a, int *info);

extern "C" __global__ void potrf_kernel(const double *a, double *l, int *info)
{
    extern __shared__ __align__(16) double smem[];
    for (int i = threadIdx.x; i < POTRF_N * POTRF_N; i += blockDim.x)
        smem[i] = a[i];
    __syncthreads();
    dx_potrf(smem, info);
    __syncthreads();
    for (int i = threadIdx.x; i < POTRF_N * POTRF_N; i += blockDim.x)
        l[i] = smem[i];
}
