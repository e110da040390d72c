// A constexpr host function called from device code: needs --expt-relaxed-constexpr.
__host__ constexpr float twice(float x) { return 2.0f * x; }
extern "C" __global__ void xnvrtc_relaxed(float *out)
{
    out[threadIdx.x] = twice((float)threadIdx.x);
}
