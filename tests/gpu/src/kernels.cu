// Kernels of the host runtime's GPU tests (tests/gpu/test_gpu.c), built three ways at build time:
// a cubin for FDLINK_LINK_ARCH, a fatbin (that cubin and compute_FDLINK_PTX_ARCH PTX) and PTX.
// Every kernel is extern "C" so that it is looked up by its plain name.
// The tests check that the driver lists exactly these 12 kernels, sorted:
//   add_one bounded coop_exchange empty fill_u32 iota_u32 mm params_mixed saxpy shared_probe
//   spin static_shared
#include <stdint.h>

// out[i] = value for i < n
extern "C" __global__ void fill_u32(unsigned *out, unsigned value, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = value;
}

// out[i] = 3 i + 1 for i < n
extern "C" __global__ void iota_u32(unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 3u * i + 1u;
}

// p[i] += 1 for i < n: run many times through a prepared launch
extern "C" __global__ void add_one(unsigned *p, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += 1u;
}

// y[i] = a x[i] + y[i]
extern "C" __global__ void saxpy(float *y, const float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// c = a b for n x n matrices (n a multiple of 16), 16 x 16 tiles in static shared memory
#define TILE 16
extern "C" __global__ void __launch_bounds__(1024) mm(float *c, const float *a, const float *b,
                                                      int n)
{
    __shared__ float ta[TILE][TILE], tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = sum;
}

// at most 128 threads per block
extern "C" __global__ void __launch_bounds__(128) bounded(unsigned *out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = 7u;
}

// 256 words of static shared memory: out[i] = i * i through it
extern "C" __global__ void static_shared(unsigned *out)
{
    __shared__ unsigned words[256];
    words[threadIdx.x] = threadIdx.x * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = words[255 - threadIdx.x];
}

// parameters of many sizes: 8, 1, 8, 8, 24, 2 bytes
struct s24 {
    int32_t a;
    int32_t b;
    double c;
    int64_t d;
};
extern "C" __global__ void params_mixed(unsigned long long *out, signed char a, double b,
                                        const void *p, s24 s, short h)
{
    unsigned long long bits;
    memcpy(&bits, &b, sizeof bits);
    out[0] = (unsigned long long)(long long)a;
    out[1] = bits;
    out[2] = (unsigned long long)(uintptr_t)p;
    out[3] = (unsigned long long)(long long)s.a;
    out[4] = (unsigned long long)(long long)s.b;
    memcpy(&bits, &s.c, sizeof bits);
    out[5] = bits;
    out[6] = (unsigned long long)s.d;
    out[7] = (unsigned long long)(long long)h;
}

// thread 0 fills `bytes` of dynamic shared memory with (i * 7 + 3) & 0xff and sums it back
extern "C" __global__ void shared_probe(unsigned *out, unsigned bytes)
{
    extern __shared__ unsigned char smem[];
    if (threadIdx.x != 0)
        return;
    for (unsigned i = 0; i < bytes; i++)
        smem[i] = (unsigned char)(i * 7u + 3u);
    unsigned sum = 0;
    for (unsigned i = 0; i < bytes; i++)
        sum += smem[i];
    out[blockIdx.x] = sum;
}

// a one-shot grid barrier: correct only when every block is resident (a cooperative launch).
// Block b writes slot b, waits for all blocks, then reads slot (b + 1) % gridDim.x.
extern "C" __global__ void coop_exchange(unsigned *slots, unsigned *arrived, unsigned *out)
{
    unsigned b = blockIdx.x;
    if (threadIdx.x == 0) {
        slots[b] = b * 2u + 5u;
        __threadfence();
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < gridDim.x)
            ;
        __threadfence();
        out[b] = ((volatile unsigned *)slots)[(b + 1u) % gridDim.x];
    }
}

// busy for `ns` nanoseconds of the global timer, then done[0] = 1
extern "C" __global__ void spin(unsigned long long ns, unsigned *done)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
    done[0] = 1u;
}

// nothing at all
extern "C" __global__ void empty(void) {}
