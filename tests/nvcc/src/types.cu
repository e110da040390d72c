// Implementations of tests/nvcc/types.decl, compiled with the generated header force-included.
#include <cuda_fp16.h>

extern "C" __device__ int f_f32(float *r, float a, float b) { *r = a + b; return 0; }
extern "C" __device__ int f_f64(double *r, double a, double *p) { *r = a * *p; return 0; }
extern "C" __device__ int f_f16(__half *r, __half a, __half b) { *r = __hadd(a, b); return 0; }
extern "C" __device__ int f_bool(bool *r, bool a, bool b) { *r = a && b; return 0; }
extern "C" __device__ int f_small(int *r, signed char a, unsigned char b, short c, unsigned short d)
{
    *r = a + b + c + d;
    return 0;
}
extern "C" __device__ int f_wide(long long *r, long long a, unsigned long long b, long long c,
                                 unsigned long long d)
{
    *r = a + (long long)b + c + (long long)d;
    return 0;
}
extern "C" __device__ int f_u32(unsigned int *r, unsigned int a, int b) { *r = a + b; return 0; }
extern "C" __device__ int f_ptrs(void **r, void *a, float **b, signed char *c)
{
    *r = a ? a : (void *)(b ? (void *)b : (void *)c);
    return 0;
}
extern "C" __device__ int f_void(void *r, int *p, int v) { (void)r; *p = v; return 0; }
extern "C" __device__ int f_noargs(int *r) { *r = 42; return 0; }
extern "C" __device__ unsigned int c_add(unsigned int a, unsigned int b) { return a + b; }
extern "C" __device__ double c_scale(double a, int k) { return a * k; }
extern "C" __device__ void c_store(float *p, float v) { *p = v; }
