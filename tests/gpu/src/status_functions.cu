// Foreign device functions of the Numba ABI (ABI-1, ABI-2: int status, 0 = success) for the
// device status tests: compiled alone with -rdc=true, linked with the callers at run time.
#include <math.h>

// sqrt of x; status 1 for a negative x, 2 for NaN
extern "C" __device__ int safe_sqrt(float *ret, float x)
{
    if (x != x)
        return 2;
    if (x < 0.0f)
        return 1;
    *ret = sqrtf(x);
    return 0;
}
