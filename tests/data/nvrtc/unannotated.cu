// An unannotated constexpr function called from a kernel: an error unless NVRTC runs with
// --device-as-default-execution-space (or --expt-relaxed-constexpr).
constexpr float twice(float x) { return 2.0f * x; }
struct scale { float f; float apply(float x) const { return f * x; } };
extern "C" __global__ void xnvrtc_dades(float *out)
{
    scale s{3.0f};
    out[threadIdx.x] = s.apply(twice((float)threadIdx.x));
}
