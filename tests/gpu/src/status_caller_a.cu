// A caller of safe_sqrt through FDL_CALL (fdlink/device.h). Compiled with -rdc=true to PTX and
// linked with status_functions.cu and status_caller_b.cu, which includes the same header: the
// link keeps one device status record for both.
#include <fdlink/device.h>

extern "C" __device__ int safe_sqrt(float *ret, float x);

// out[i] = sqrt(in[i]); where safe_sqrt fails, out[i] is left alone
extern "C" __global__ void sqrt_all(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n && FDL_CALL(safe_sqrt, &r, in[i]) == 0)
        out[i] = r;
}
