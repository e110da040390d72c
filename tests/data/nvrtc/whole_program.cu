// Whole-program code for -Xnvrtc --extensible-whole-program: a kernel and a device function that
// only it calls.
__device__ __noinline__ float twice(float x) { return 2.0f * x; }
extern "C" __global__ void xnvrtc_whole(float *out)
{
    out[threadIdx.x] = twice((float)threadIdx.x);
}
