// Matrix multiply, float64, c = a * b for N x N matrices stored by rows.
// BLOCK_SIZE and N are chosen by the host program: ahead of time (nvcc -D) or at run time (this
// very source compiled with NVRTC with the values substituted, as PyCUDA's metaprogramming
// example does).
#ifndef BLOCK_SIZE
#error "define BLOCK_SIZE (the tile edge, e.g. -DBLOCK_SIZE=16)"
#endif
#ifndef N
#error "define N (the matrix edge, a multiple of BLOCK_SIZE)"
#endif
#if N % BLOCK_SIZE != 0
#error "N must be a multiple of BLOCK_SIZE"
#endif

// One thread per element of c, straight from global memory.
extern "C" __global__ void matmul_naive(double *c, const double *a, const double *b)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N || col >= N)
        return;
    double sum = 0.0;
    for (int k = 0; k < N; ++k)
        sum += a[row * N + k] * b[k * N + col];
    c[row * N + col] = sum;
}

// BLOCK_SIZE x BLOCK_SIZE tiles of a and b staged in shared memory.
extern "C" __global__ void matmul_tiled(double *c, const double *a, const double *b)
{
    __shared__ double ta[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ double tb[BLOCK_SIZE][BLOCK_SIZE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * BLOCK_SIZE + ty;
    int col = blockIdx.x * BLOCK_SIZE + tx;
    double sum = 0.0;
    for (int t = 0; t < N / BLOCK_SIZE; ++t) {
        ta[ty][tx] = a[row * N + t * BLOCK_SIZE + tx];
        tb[ty][tx] = b[(t * BLOCK_SIZE + ty) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k)
            sum += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    c[row * N + col] = sum;
}
