// fdlink/device.h in whole-program compilation (no -rdc): the function and its caller in one
// translation unit, which then defines the module's one device status record itself.
#include <fdlink/device.h>
#include <math.h>

__device__ int safe_sqrt(float *ret, float x)
{
    if (x != x)
        return 2;
    if (x < 0.0f)
        return 1;
    *ret = sqrtf(x);
    return 0;
}

// out[i] = sqrt(in[i]); where safe_sqrt fails, out[i] is left alone
extern "C" __global__ void sqrt_whole(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n && FDL_CALL(safe_sqrt, &r, in[i]) == 0)
        out[i] = r;
}
