// Calls safe_sqrt through FDL_CALL: the first non-zero status of a launch (function, status,
// block, thread) goes into the module's status record, which the host reads after the launch.
#include <fdlink/device.h>

extern "C" __global__ void sqrt_all(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n)
        out[i] = FDL_CALL(safe_sqrt, &r, in[i]) == 0 ? r : -1.0f;
}
