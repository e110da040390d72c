extern "C" __device__ float scale(float x) { return x * 3.0f; }
