// scale's code comes partly from a nested header (src/include/scale_unit.h -> detail/unit.h),
// found through the usage requirements of the target mathlib links (consumer_headers).
#include "scale_unit.h"

extern "C" __device__ int scale(float *return_value, float x, float k)
{
    *return_value = x * k * CONSUMER_SCALE_UNIT;
    return 0;
}
