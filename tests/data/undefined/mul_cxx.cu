// mul_f32_f32 defined without extern "C": its name is mangled, and a caller that declares it
// extern "C" (link/caller.ptx) does not find it.
__device__ float mul_f32_f32(float *ret, float a, float b) { *ret = a * b; return 0; }
