extern "C" __device__ float scale(float x);
extern "C" __global__ void run(float *x) { x[threadIdx.x] = scale(x[threadIdx.x]); }
