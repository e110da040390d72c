extern "C" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }
