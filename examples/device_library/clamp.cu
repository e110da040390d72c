// clampf(x, lo, hi): x limited to [lo, hi]
extern "C" __device__ int clampf(float *return_value, float x, float lo, float hi)
{
    if (lo > hi)
        return 1; /* an empty interval: a device-side error status */
    *return_value = fminf(fmaxf(x, lo), hi);
    return 0;
}
