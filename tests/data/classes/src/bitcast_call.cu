extern "C" __device__ int fromb(float *r, int bits);
extern "C" __device__ int fromb2(float *r, int bits, float s);
extern "C" __device__ int tob(int *r, float x);
extern "C" __device__ int sel(float *r, int flag, float a, float b);
extern "C" __device__ int cbits(int *r, float x);
extern "C" __global__ void k(float *y, int *z, const int *b, const float *x) {
  int i = threadIdx.x; float r; int q;
  fromb(&r, b[i]); fromb2(&r, b[i], x[i]); y[i] = r; tob(&q, x[i]); z[i] = q; sel(&r, b[i], x[i], 2.0f); y[i] += r; cbits(&q, x[i]); z[i] += q; }
