// A cascade first, then the cause: the header that would have declared what the kernel uses is
// missing. NVRTC reports the errors before it in order, and stops at the missing header.
constexpr float twice(float x) { return 2.0f * x; }
struct scale { float f; float apply(float x) const { return f * x; } };
#include "vendor_library_header.hpp"
extern "C" __global__ void missing_header(float *out)
{
    out[threadIdx.x] = scale{3.0f}.apply(twice((float)threadIdx.x));
}
