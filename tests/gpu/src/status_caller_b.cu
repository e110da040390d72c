// A second caller translation unit including fdlink/device.h (see status_caller_a.cu), on a 2-D
// grid of 2-D blocks, so that every component of blockIdx and threadIdx is checked.
#include <fdlink/device.h>

extern "C" __device__ int safe_sqrt(float *ret, float x);

// out[i] = sqrt(sqrt(in[i])) for the element at (x, y) of a width x height array
extern "C" __global__ void sqrt_twice_2d(float *out, const float *in, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    int i = y * width + x;
    float r, s;
    if (FDL_CALL(safe_sqrt, &r, in[i]) == 0 && FDL_CALL(safe_sqrt, &s, r) == 0)
        out[i] = s;
}
